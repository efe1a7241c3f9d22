//! Typed parameter blocks: each kernel family's uniform `Params` is a
//! `#[repr(C)]` Pod struct declared once, in Rust, with [`params_block!`],
//! which also writes the WGSL `struct Params` a template's `{{PARAMS}}`
//! slot takes (field docs carried over as comments), and lists every
//! field's byte offset so that a test can compare them with naga's layout
//! of the WGSL struct (field order, types and padding all checked, not only
//! the total size: WGSL's alignment rules against `repr(C)`'s). Extents
//! and strides travel as `array<vec4<u32>, 2>` / `array<vec4<i32>, 2>`,
//! here `[u32; 8]` / `[i32; 8]`.

use crate::shape::MAX_RANK;

/// A parameter block's field type and the WGSL type it is declared as.
pub(crate) trait WgslField {
    const WGSL: &'static str;
}

impl WgslField for u32 {
    const WGSL: &'static str = "u32";
}

impl WgslField for f32 {
    const WGSL: &'static str = "f32";
}

impl WgslField for i32 {
    const WGSL: &'static str = "i32";
}

impl WgslField for [u32; MAX_RANK] {
    const WGSL: &'static str = "array<vec4<u32>, 2>";
}

impl WgslField for [i32; MAX_RANK] {
    const WGSL: &'static str = "array<vec4<i32>, 2>";
}

/// Declares a `#[repr(C)]`, `Pod` parameter block with public fields, its
/// WGSL declaration (`wgsl()`: `struct Params { ... }`, each field's docs
/// as comments) and its `FIELDS`: each field's name and byte offset, in
/// order.
macro_rules! params_block {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $($(#[doc = $doc:literal])* $field:ident: $ty:ty,)*
    }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
        $vis struct $name {
            $($(#[doc = $doc])* pub $field: $ty,)*
        }

        impl $name {
            /// The block as WGSL declares it, for a kernel's prelude:
            /// `struct Params { ... }` and its uniform binding at 0.
            pub fn wgsl() -> String {
                let mut s = String::from("struct Params {\n");
                $(
                    $(
                        s.push_str("    //");
                        s.push_str($doc);
                        s.push('\n');
                    )*
                    s.push_str(concat!("    ", stringify!($field), ": "));
                    s.push_str(<$ty as $crate::backend::gpu::kernel::params_block::WgslField>::WGSL);
                    s.push_str(",\n");
                )*
                s.push_str("}\n\n@group(0) @binding(0) var<uniform> params: Params;\n");
                s
            }

            /// Each field's name and byte offset, in declaration order.
            #[cfg(test)]
            pub const FIELDS: &'static [(&'static str, usize)] =
                &[$((stringify!($field), std::mem::offset_of!($name, $field)),)*];

            /// The block's bytes, as the uniform buffer holds them.
            pub fn bytes(&self) -> &[u8] {
                bytemuck::bytes_of(self)
            }

            /// The block's size in bytes.
            #[cfg(test)]
            pub const SIZE: u64 = std::mem::size_of::<$name>() as u64;
        }

        /// The block's bytes, for launchers generic over their block.
        impl AsRef<[u8]> for $name {
            fn as_ref(&self) -> &[u8] {
                self.bytes()
            }
        }
    };
}
pub(crate) use params_block;

/// A `params_block!` for a kernel that walks lines of a source and a
/// destination (scan, softmax, sort): the walk's fields (how many lines,
/// how long, the grid's row width; where the lines start, the step along a
/// line, the lines' extents and each side's strides over them), which
/// `LINE_STARTS` and the kernels read by these names, with the family's own
/// fields between its scalars and its arrays. The family's fields fill
/// whole 16-byte rows, so that `shape` starts one (the naga layout tests
/// check it). `walking` fills the walk's fields.
macro_rules! line_params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($fields:tt)* }) => {
        $crate::backend::gpu::kernel::params_block::params_block! {
            $(#[$meta])*
            $vis struct $name {
                /// Lines, and elements in each.
                lines: u32,
                length: u32,
                rank: u32,
                /// Threads or workgroups (as the family's entry point takes
                /// them) per grid row.
                row_width: u32,
                src_offset: u32,
                dst_offset: u32,
                /// Elements between consecutive elements of a line.
                src_step: i32,
                dst_step: i32,
                $($fields)*
                /// The lines' extents, and each side's strides over them.
                shape: [u32; 8],
                src_strides: [i32; 8],
                dst_strides: [i32; 8],
            }
        }

        impl $name {
            /// The block with the walk over the lines `src` and `dst` (their
            /// views without the line axis), `length` elements long,
            /// stepping `steps` along a line, on a grid `row_width` wide.
            // A family with no fields of its own updates nothing.
            #[allow(clippy::needless_update)]
            pub fn walking(
                self,
                [src, dst]: [&$crate::layout::Layout; 2],
                steps: [isize; 2],
                length: usize,
                row_width: u32,
            ) -> $name {
                use $crate::backend::gpu::kernel::params_block::{dims8, strides8};
                $name {
                    lines: src.numel() as u32,
                    length: length as u32,
                    rank: src.rank() as u32,
                    row_width,
                    src_offset: src.offset() as u32,
                    dst_offset: dst.offset() as u32,
                    src_step: steps[0] as i32,
                    dst_step: steps[1] as i32,
                    shape: dims8(src.dims()),
                    src_strides: strides8(src.strides()),
                    dst_strides: strides8(dst.strides()),
                    ..self
                }
            }
        }
    };
}
pub(crate) use line_params;

/// Extents as `array<vec4<u32>, 2>` (zero-padded to [`MAX_RANK`]).
pub(crate) fn dims8(dims: &[usize]) -> [u32; MAX_RANK] {
    std::array::from_fn(|d| dims.get(d).map_or(0, |&n| n as u32))
}

/// Strides as `array<vec4<i32>, 2>` (zero-padded to [`MAX_RANK`]).
pub(crate) fn strides8(strides: &[isize]) -> [i32; MAX_RANK] {
    std::array::from_fn(|d| strides.get(d).map_or(0, |&s| s as i32))
}

#[cfg(test)]
pub(crate) mod tests {
    /// Asserts that the WGSL struct `Params` in `source` has exactly the
    /// members `fields` (name, byte offset), in order, and `size` bytes.
    pub(crate) fn assert_layout(source: &str, fields: &[(&str, usize)], size: u64, what: &str) {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        let (members, span) = module
            .types
            .iter()
            .find_map(|(_, ty)| match &ty.inner {
                naga::TypeInner::Struct { members, span }
                    if ty.name.as_deref() == Some("Params") =>
                {
                    Some((members.clone(), *span))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("{what}: no struct Params"));
        let wgsl: Vec<(String, usize)> = members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset as usize))
            .collect();
        let rust: Vec<(String, usize)> = fields.iter().map(|&(n, o)| (n.to_string(), o)).collect();
        assert_eq!(rust, wgsl, "{what}: fields (name, offset) of Params");
        assert_eq!(size, span as u64, "{what}: size of Params");
    }

    #[test]
    fn extents_and_strides_pad_to_the_rank_limit() {
        assert_eq!(super::dims8(&[2, 3]), [2, 3, 0, 0, 0, 0, 0, 0]);
        assert_eq!(super::strides8(&[-4, 1]), [-4, 1, 0, 0, 0, 0, 0, 0]);
    }
}
