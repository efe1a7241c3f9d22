//! The workgroup memory a kernel's entry point uses, checked against the
//! device's limit before its pipeline is built: wgpu 30 does not check it
//! (a browser's WebGPU does), so a kernel past the limit of a device an
//! application opened with WebGPU's defaults (16 KiB) ran on drivers with
//! more and failed elsewhere. Native only (naga's WGSL front end).

/// Bytes of workgroup memory entry point `entry` of `source` uses, as
/// WebGPU counts them (each variable's size rounded up to 16 bytes);
/// `None` where `source` declares none or naga cannot tell (its errors
/// are the pipeline's to report).
pub(crate) fn bytes(source: &str, entry: &str) -> Option<u64> {
    if !source.contains("var<workgroup>") {
        return None;
    }
    let module = naga::front::wgsl::parse_str(source).ok()?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::empty(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .ok()?;
    let index = module.entry_points.iter().position(|e| e.name == entry)?;
    let uses = info.get_entry_point(index);
    let gctx = module.to_ctx();
    Some(
        module
            .global_variables
            .iter()
            .filter(|(h, g)| g.space == naga::AddressSpace::WorkGroup && !uses[*h].is_empty())
            .map(|(_, g)| u64::from(module.types[g.ty].inner.size(gctx)).next_multiple_of(16))
            .sum(),
    )
}

#[cfg(test)]
mod tests {
    use super::bytes;

    const TWO_ENTRIES: &str = "
var<workgroup> a: array<f32, 1000>;
var<workgroup> b: array<vec3<f32>, 3>;
var<workgroup> c: u32;
fn touch_b() { b[0] = vec3<f32>(1.0); }
@compute @workgroup_size(64) fn first(@builtin(local_invocation_index) t: u32) {
    a[t] = 1.0;
    touch_b();
}
@compute @workgroup_size(64) fn second() { c = 1u; }
";

    #[test]
    fn an_entry_point_counts_the_arrays_it_and_its_callees_use() {
        // a: 4,000 bytes; b: three vec3s of 16 bytes (48); c: 4 rounded
        // to 16. The first entry point reaches b through a call.
        assert_eq!(bytes(TWO_ENTRIES, "first"), Some(4000 + 48));
        assert_eq!(bytes(TWO_ENTRIES, "second"), Some(16));
        assert_eq!(bytes(TWO_ENTRIES, "third"), None);
        assert_eq!(
            bytes("@compute @workgroup_size(1) fn main() {}", "main"),
            None
        );
    }
}
