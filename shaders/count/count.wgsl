// Counting into bins (ops/counting's bincount and histogram), specialised
// by gpu/count/, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  index (1: integer bins, or a histogram's values), weights
//             (2: f32; the index again when unweighted, never read),
//             out_buf (3) as atomic words: i64 counts (the low word of
//             each, carried into the high one where an add wraps it) or
//             f32 sums (their bits); a histogram's edges (4)
//   BIN       fn bin_of(p: u32) -> u32: element p's bin (an integer's
//             value, or a value's by a search of the edges), or a value
//             of at least params.len for one outside [0, len)
//   ADD       fn add_shared(b, p), fn add_element(b, p) and
//             fn add_global(b, bits): element p into the workgroup's bin
//             b, or into the output's; a workgroup's bin into the output
//
// Each workgroup walks a grid-stride share of the elements. With at most
// SHARED_BINS bins it counts into a copy of its own in workgroup memory
// (atomics there contend only within the group), then adds its non-empty
// bins to the output; with more, each element goes to the output at once.
// Integer counts are exact in any order; f32 sums add in the order the
// atomics land.
{{PRELUDE}}
{{BINDINGS}}

const SHARED_BINS: u32 = 2048u;
var<workgroup> private_bins: array<atomic<u32>, SHARED_BINS>;

// Adds v to the f32 whose bits are at `slot`.
fn add_f32_shared(b: u32, v: f32) {
    var old = atomicLoad(&private_bins[b]);
    loop {
        let swapped = atomicCompareExchangeWeak(&private_bins[b], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (swapped.exchanged) {
            break;
        }
        old = swapped.old_value;
    }
}

fn add_f32_global(i: u32, v: f32) {
    var old = atomicLoad(&out_buf[i]);
    loop {
        let swapped = atomicCompareExchangeWeak(&out_buf[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (swapped.exchanged) {
            break;
        }
        old = swapped.old_value;
    }
}

{{BIN}}
{{ADD}}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let private = params.len <= SHARED_BINS;
    if (private) {
        for (var b = lid; b < params.len; b += 256u) {
            atomicStore(&private_bins[b], 0u);
        }
    }
    workgroupBarrier();
    let total = groups.x * 256u;
    for (var p = wid.x * 256u + lid; p < params.n; ) {
        let b = bin_of(p);
        if (b < params.len) {
            if (private) {
                add_shared(b, p);
            } else {
                add_element(b, p);
            }
        }
        // Stopped before p + total could wrap past 2^32 (to an element
        // counted already).
        if (params.n - p <= total) {
            break;
        }
        p += total;
    }
    workgroupBarrier();
    if (private) {
        for (var b = lid; b < params.len; b += 256u) {
            let bits = atomicLoad(&private_bins[b]);
            if (bits != 0u) {
                add_global(b, bits);
            }
        }
    }
}
