// Stable sorts of the lines of a tensor, as a bitonic network over each
// line padded to a power of two, specialised by sort/mod.rs, which fills
// the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` (the launcher's
//             `params_block!`) bound at 0, and kernel/math.wgsl
//   BINDINGS  the source (binding 1) and the i32 `out_buf` (binding 2)
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   OPS       `alias Acc`, `fn load(p) -> Acc`, `fn store(p, v: i32)` and
//             `fn sort_key(v: Acc) -> u32`, whose unsigned order is the
//             sort's order (NaN last ascending, first descending; -0 = +0)
//
// Each element becomes a (key, position) pair in two scratch arrays, one
// row of `padded` per line; pads get the largest key and positions past
// the line, so they sort after everything. Ordering pairs by key, then by
// position, makes the network stable. The launcher records `init`, `local`
// (every step of the network with a span below `block`, in workgroup
// memory), then for each longer merge its `global` steps and a `local`
// finish, then `emit`: no invocation loops in proportion to the line.
{{PRELUDE}}
{{BINDINGS}}
@group(0) @binding(3) var<storage, read_write> keys: array<u32>;
@group(0) @binding(4) var<storage, read_write> slots: array<u32>;
{{OPS}}
{{WALK}}

// True when pair (ka, ia) comes after (kb, ib).
fn after(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka > kb || (ka == kb && ia > ib);
}

// Element i of line l, or a pad.
@compute @workgroup_size(256)
fn init(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x + gid.y * params.row_width;
    if (g >= params.lines * params.padded) {
        return;
    }
    let l = g / params.padded;
    let i = g % params.padded;
    var key = 0xffffffffu;
    if (i < params.length) {
        let start = line_starts(l);
        key = sort_key(load(u32(start[0] + i32(i) * params.src_step)));
    }
    keys[g] = key;
    slots[g] = i;
}

// One compare-exchange step of merge k with span j, on global memory: a
// thread per pair.
@compute @workgroup_size(256)
fn global_step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x + gid.y * params.row_width;
    let pairs = params.padded / 2u;
    if (g >= params.lines * pairs) {
        return;
    }
    let l = g / pairs;
    let p = g % pairs;
    let j = params.j;
    let i = 2u * j * (p / j) + p % j;
    let a = l * params.padded + i;
    let b = a + j;
    let up = (i & params.k) == 0u;
    let ka = keys[a];
    let kb = keys[b];
    let ia = slots[a];
    let ib = slots[b];
    if (after(ka, ia, kb, ib) == up) {
        keys[a] = kb;
        keys[b] = ka;
        slots[a] = ib;
        slots[b] = ia;
    }
}

var<workgroup> block_keys: array<u32, 512>;
var<workgroup> block_slots: array<u32, 512>;

// One compare-exchange step in workgroup memory: merge k, span j, the
// block starting at element `first` of its line.
fn local_step(t: u32, first: u32, k: u32, j: u32) {
    if (t < params.block / 2u) {
        let i = 2u * j * (t / j) + t % j;
        let up = ((first + i) & k) == 0u;
        let ka = block_keys[i];
        let kb = block_keys[i + j];
        let ia = block_slots[i];
        let ib = block_slots[i + j];
        if (after(ka, ia, kb, ib) == up) {
            block_keys[i] = kb;
            block_keys[i + j] = ka;
            block_slots[i] = ib;
            block_slots[i + j] = ia;
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn local_steps(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let w = wid.x + wid.y * params.row_width;
    let blocks = params.lines * (params.padded / params.block);
    // Uniform per workgroup: every thread of a spare workgroup leaves.
    if (w >= blocks) {
        return;
    }
    let base = w * params.block;
    let first = base % params.padded;
    for (var e = t; e < params.block; e += 256u) {
        block_keys[e] = keys[base + e];
        block_slots[e] = slots[base + e];
    }
    workgroupBarrier();
    if (params.k == 0u) {
        for (var k = 2u; k <= params.block; k *= 2u) {
            for (var j = k / 2u; j > 0u; j /= 2u) {
                local_step(t, first, k, j);
            }
        }
    } else {
        for (var j = params.block / 2u; j > 0u; j /= 2u) {
            local_step(t, first, params.k, j);
        }
    }
    for (var e = t; e < params.block; e += 256u) {
        keys[base + e] = block_keys[e];
        slots[base + e] = block_slots[e];
    }
}

// The sorted positions of each line's real elements, as i32.
@compute @workgroup_size(256)
fn emit(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x + gid.y * params.row_width;
    if (g >= params.lines * params.length) {
        return;
    }
    let l = g / params.length;
    let i = g % params.length;
    let start = line_starts(l);
    store(u32(start[1] + i32(i) * params.dst_step), i32(slots[l * params.padded + i]));
}
