//! What every kernel family's shader starts with, its `{{PRELUDE}}` slot:
//! `enable f16;` where a native f16 buffer is bound, the family's parameter
//! block bound at 0, and math.wgsl (the IEEE-exact float helpers and the
//! integer ops WGSL lacks).

/// The shared math functions (`pow_f32`, `fmod_f32`, `div_i32`, ...).
pub(crate) const MATH_WGSL: &str = shader!("kernel/math.wgsl");

/// The `{{PRELUDE}}` of a kernel: `enable f16;` when `uses_f16`, then
/// `params` (a family's `Params::wgsl()`, which binds the block at 0; empty
/// for a kernel that declares its own) and math.wgsl.
pub(crate) fn prelude(uses_f16: bool, params: &str) -> String {
    let enable = if uses_f16 { "enable f16;" } else { "" };
    format!("{enable}\n{params}\n{MATH_WGSL}")
}

#[cfg(test)]
pub(crate) mod tests {
    /// Parses and validates `source` with naga (every capability on), or
    /// panics naming `what` with naga's message and the source.
    pub(crate) fn validate(source: &str, what: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {e:?}\n{source}"));
    }
}
