//! What every kernel family's shader starts with, its `{{PRELUDE}}` slot:
//! `enable f16;` where a native f16 buffer is bound, the family's parameter
//! block bound at 0, and math.wgsl (the IEEE-exact float helpers and the
//! integer ops WGSL lacks).

use super::template::fill;
use crate::error::Result;

/// The shared math functions (`pow_f32`, `fmod_f32`, `div_i32`,
/// `lgamma_f32`, ...): math.wgsl, pow.wgsl, then special.wgsl.
pub(crate) const MATH_WGSL: &str = concat!(
    shader!("kernel/math.wgsl"),
    shader!("kernel/pow.wgsl"),
    shader!("kernel/special.wgsl")
);
/// `lead_base`: where an image kernel's output image starts in its input
/// (resize, pooling).
pub(crate) const LEAD_AXES_WGSL: &str = shader!("kernel/lead_axes.wgsl");
/// i64 arithmetic on `vec2<u32>` words, for kernels that compute on i64.
pub(crate) const INT64_WGSL: &str = shader!("kernel/int64.wgsl");

/// The `{{PRELUDE}}` of a kernel: `enable f16;` when `uses_f16`, then
/// `params` (a family's `Params::wgsl()`, which binds the block at 0; empty
/// for a kernel that declares its own) and math.wgsl.
pub(crate) fn prelude(uses_f16: bool, params: &str) -> String {
    let enable = if uses_f16 { "enable f16;" } else { "" };
    format!("{enable}\n{params}\n{MATH_WGSL}")
}

/// `template` filled: its `{{PRELUDE}}` (see [`prelude`], of `uses_f16`
/// and `params`) and `slots`.
///
/// # Errors
/// As [`fill`]: `Error::Internal` naming `what` when the template's slots
/// and the given ones disagree.
pub(crate) fn fill_kernel(
    what: &'static str,
    template: &str,
    uses_f16: bool,
    params: &str,
    slots: &[(&str, &str)],
) -> Result<String> {
    let prelude = prelude(uses_f16, params);
    let mut all = Vec::with_capacity(slots.len() + 1);
    all.push(("PRELUDE", prelude.as_str()));
    all.extend_from_slice(slots);
    fill(what, template, &all)
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::dtype::KernelType;

    /// The float storages a float kernel is built for: f32, f16 native and
    /// packed, bf16 (with whether the adapter has native f16).
    pub(crate) const FLOAT_STORAGES: [(KernelType, bool); 4] = [
        (KernelType::F32, true),
        (KernelType::F16, true),
        (KernelType::F16, false),
        (KernelType::BF16, true),
    ];

    /// Panics where `source` bitcasts a literal to an infinite or NaN f32:
    /// a constant expression browsers (Tint) reject, though naga takes it
    /// (`f32_from_bits` gets such bits through).
    fn no_constant_non_finite(source: &str, what: &str) {
        const CAST: &str = "bitcast<f32>(0x";
        for (at, _) in source.match_indices(CAST) {
            let digits: String = source[at + CAST.len()..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            let bits = u32::from_str_radix(&digits, 16).unwrap();
            assert!(
                f32::from_bits(bits).is_finite(),
                "{what}: bitcast<f32>(0x{digits}u) is a constant browsers reject"
            );
        }
    }

    /// Validates `source` and translates it with naga's SPIR-V writer, as
    /// wgpu's Vulkan backend will take it, or panics naming `what`: for
    /// kernels no adapter of CI runs (cooperative matrices).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn translate_to_spirv(source: &str, what: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        let options = naga::back::spv::Options {
            lang_version: (1, 6),
            ..Default::default()
        };
        let words = naga::back::spv::write_vec(&module, &info, &options, None)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(words.len() > 100, "{what}");
    }

    /// Parses and validates `source` with naga (every capability on), or
    /// panics naming `what` with naga's message and the source.
    pub(crate) fn validate(source: &str, what: &str) {
        no_constant_non_finite(source, what);
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
