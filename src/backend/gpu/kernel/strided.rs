//! The one strided walk of every shader: from a row-major index over a
//! shape to the storage position of that element in each operand, read
//! through its own (offset, strides).
//!
//! WGSL has no generics, and each family's parameter block names its
//! shape and strides differently. Passing those arrays to a shared WGSL
//! function would copy them into function-local arrays indexed by a
//! runtime axis, which drivers keep in (slow) local memory rather than
//! registers; so the walk is generated here, once, as a function that
//! reads the parameter block in place, and each shader gets its own
//! instance through a `{{...}}` slot. Every instance is the same loop: the
//! row-major unravel is written in this file alone.

use std::fmt::Write;

/// One operand of a walk: where it starts and its strides.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walked<'a> {
    /// WGSL `i32` expression: the storage position of the first element.
    pub start: &'a str,
    /// WGSL expression of type `array<vec4<i32>, 2>`: strides in elements,
    /// axis `d` at `[d / 4][d % 4]`.
    pub strides: &'a str,
}

/// A walk over one shape, for one or more operands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walk<'a> {
    /// The generated function's name.
    pub name: &'a str,
    /// WGSL `u32` expression: the rank (at most 8).
    pub rank: &'a str,
    /// WGSL expression of type `array<vec4<u32>, 2>`: the extents.
    pub shape: &'a str,
    pub operands: &'a [Walked<'a>],
}

impl Walk<'_> {
    /// `fn {name}(index: u32) -> array<i32, N>`: the storage position, in
    /// each of the N operands, of the element with row-major `index` over
    /// `shape[..rank]`.
    pub fn wgsl(&self) -> String {
        let n = self.operands.len();
        let starts: Vec<&str> = self.operands.iter().map(|o| o.start).collect();
        let (mut steps, mut first) = (String::new(), String::new());
        for (k, operand) in self.operands.iter().enumerate() {
            let _ = writeln!(
                steps,
                "        pos[{k}] += c * {}[du / 4u][du % 4u];",
                operand.strides
            );
            let _ = writeln!(first, "        pos[{k}] += c * {}[0][0];", operand.strides);
        }
        // The outermost axis takes what the others leave, with no division:
        // `min` keeps an index past the shape's end inside the operands'
        // views (where the division wrapped it), so that no caller's
        // unchecked access can leave its binding.
        format!(
            "fn {name}(index: u32) -> array<i32, {n}> {{\n    \
             var pos = array<i32, {n}>({starts});\n    \
             var rem = index;\n    \
             for (var d = i32({rank}) - 1; d > 0; d--) {{\n        \
             let du = u32(d);\n        \
             let n = {shape}[du / 4u][du % 4u];\n        \
             let c = i32(rem % n);\n        \
             rem = rem / n;\n\
             {steps}    }}\n    \
             if ({rank} > 0u) {{\n        \
             let c = i32(min(rem, max({shape}[0][0], 1u) - 1u));\n\
             {first}    }}\n    \
             return pos;\n}}\n",
            name = self.name,
            starts = starts.join(", "),
            rank = self.rank,
            shape = self.shape,
        )
    }
}

/// The walk `fn {name}(index: u32)` over `operands` operands numbered
/// from 0, operand `k` starting at the WGSL expression `start(k)` with the
/// strides `strides(k)`, over `shape[..rank]` (see [`Walk`]).
pub(crate) fn numbered_walk(
    name: &str,
    [rank, shape]: [&str; 2],
    operands: usize,
    start: impl Fn(usize) -> String,
    strides: impl Fn(usize) -> String,
) -> String {
    let starts: Vec<String> = (0..operands).map(start).collect();
    let strides: Vec<String> = (0..operands).map(strides).collect();
    let walked: Vec<Walked> = starts
        .iter()
        .zip(&strides)
        .map(|(start, strides)| Walked { start, strides })
        .collect();
    Walk {
        name,
        rank,
        shape,
        operands: &walked,
    }
    .wgsl()
}

/// `line_starts(l)`: where line `l` starts in the source and in the
/// destination, for the families that walk lines along the last axis (scan,
/// softmax), whose `Params` name the lines' `rank` and `shape` and each
/// side's `src_offset` / `src_strides` and `dst_offset` / `dst_strides`.
pub(crate) const LINE_STARTS: Walk<'static> = Walk {
    name: "line_starts",
    rank: "params.rank",
    shape: "params.shape",
    operands: &[
        Walked {
            start: "i32(params.src_offset)",
            strides: "params.src_strides",
        },
        Walked {
            start: "i32(params.dst_offset)",
            strides: "params.dst_strides",
        },
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::kernel::prelude::tests::validate;

    #[test]
    fn a_walk_validates_for_one_to_many_operands() {
        let params = "struct Params { rank: u32, offset: u32, shape: array<vec4<u32>, 2>, \
                      strides: array<array<vec4<i32>, 2>, 9> }\n\
                      @group(0) @binding(0) var<uniform> params: Params;\n";
        for n in [1, 2, 3, 9] {
            let strides: Vec<String> = (0..n).map(|k| format!("params.strides[{k}]")).collect();
            let operands: Vec<Walked> = strides
                .iter()
                .map(|s| Walked {
                    start: "i32(params.offset)",
                    strides: s,
                })
                .collect();
            let walk = Walk {
                name: "positions",
                rank: "params.rank",
                shape: "params.shape",
                operands: &operands,
            };
            let main = "@compute @workgroup_size(1) fn main() { let p = positions(5u); }";
            validate(&format!("{params}{}{main}", walk.wgsl()), "walk");
        }
    }

    /// The walk divides by each axis but the outermost: one `%` and one
    /// `/` by a runtime extent, in the loop over the inner axes.
    #[test]
    fn the_outermost_axis_costs_no_division() {
        let walk = LINE_STARTS.wgsl();
        assert_eq!(walk.matches("% n").count(), 1, "{walk}");
        assert_eq!(walk.matches("/ n").count(), 1, "{walk}");
        assert!(walk.contains("d > 0"), "{walk}");
        assert!(
            walk.contains("min(rem, max(params.shape[0][0], 1u) - 1u)"),
            "{walk}"
        );
    }
}
