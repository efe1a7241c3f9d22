// Resizing the last two axes in one pass (PyTorch's `interpolate`,
// `nearest` and `bilinear`), specialised by gpu/resize/, which fills the
// {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  x (1), out_buf (2)
//   ACCESS    load_x (element -> compute type), store_out
//   LEAD      lead_base (kernel/lead_axes.wgsl)
//   SAMPLE    sample_at(base, oh, ow): output element (oh, ow) from the
//             input at `base` (nearest: one element; bilinear: a blend of
//             four; antialiased: a window of each axis, see below)
//   OUTS      `const OUTS`: outputs of a row each thread writes
//
// Each output (row-major over the output, which is contiguous from
// `out_offset`) is written by one thread, which writes four of a row. Its
// source positions and weights along
// each axis are computed here by PyTorch's CPU formulas in f32, as
// ops/resize.rs's `source_taps` does on the host (the two are tested
// against each other and against PyTorch): no index or weight tables.
{{PRELUDE}}
{{BINDINGS}}
{{ACCESS}}
{{LEAD}}

// A value the compiler cannot see through (`params.zero` is always 0): a
// product kept from being fused into the add after it, so that each rounds
// as the CPU's does.
fn kept(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ params.zero);
}

// Output position i's two input positions along an axis of n resized to m,
// and the second one's weight.
struct Taps {
    lo: u32,
    hi: u32,
    w: f32,
}

fn taps(i: u32, n: u32, m: u32, ratio: f32) -> Taps {
    let last = n - 1u;
    if (params.mode == 4u) {
        // Nearest as PyTorch's generic path: no shortcut at any length.
        return Taps(min(u32(floor(kept(f32(i) * ratio))), last), 0u, 0.0);
    }
    if (n == m) {
        return Taps(min(i, last), min(i, last), 0.0);
    }
    var source: f32;
    switch params.mode {
        case 0u: {
            // Nearest as PyTorch's fast path: twice as long takes i / 2.
            if (m == 2u * n) {
                return Taps(min(i / 2u, last), 0u, 0.0);
            }
            return Taps(min(u32(floor(kept(f32(i) * ratio))), last), 0u, 0.0);
        }
        case 1u: {
            source = max(kept(ratio * (f32(i) + 0.5)) - 0.5, 0.0);
        }
        default: {
            source = kept(ratio * f32(i));
        }
    }
    let lo = min(u32(floor(source)), last);
    let w = clamp(source - f32(lo), 0.0, 1.0);
    return Taps(lo, min(lo + 1u, last), w);
}

// (1 - w) a + w b, each product rounded on its own.
fn blend(a: f32, b: f32, w: f32) -> f32 {
    return kept(a * (1.0 - w)) + kept(b * w);
}

{{SAMPLE}}

{{OUTS}}

// Each thread writes OUTS outputs of one row, `params.segment` (the row's
// width over OUTS, rounded up) apart: neighbouring threads read and write
// neighbouring elements, and a thread finds its row and image once.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let q = gid.x + gid.y * params.row_threads;
    if (q >= params.threads) {
        return;
    }
    let first = q % params.segment;
    let rest = q / params.segment;
    let oh = rest % params.out_h;
    let base = lead_base(rest / params.out_h);
    let row = params.out_offset + rest * params.out_w;
    for (var p = 0u; p < OUTS; p++) {
        let ow = first + p * params.segment;
        if (ow >= params.out_w) {
            break;
        }
        store_out(row + ow, sample_at(base, oh, ow));
    }
}
