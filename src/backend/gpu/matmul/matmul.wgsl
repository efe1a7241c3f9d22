// Tiled matrix product, specialised per dtype by matmul/mod.rs,
// which fills the {{...}} slots:
//   HEADER    `enable f16;` when a native f16 buffer is bound
//   MATH      kernel/math.wgsl (f16 rounding on store)
//   BINDINGS  a (binding 1), b (binding 2), out_buf (binding 3)
//   ACCESS    load_a / load_b (element -> Acc), store_out and load_out
//   WALK      batch_bases(z): where batch z starts in a, b and the output
//   ACC       `alias Acc = f32;` (i32, u32), and `const ZERO: Acc`
//
// Each workgroup of 16 x 16 threads computes a 64 x 64 tile of one batch's
// output, 4 x 4 elements per thread, over k in [k_start, k), adding what the
// output holds when `accumulate` is set (the launcher cuts a long k into
// slices, one dispatch each: kernel/loop_budget.rs says why),
// stepping through k 16 at a time with
// both operand tiles staged in workgroup memory. Operands are read through
// their row, column and batch strides, so transposed and broadcast views
// need no copy; edges are padded with zeros, so any size works.
{{HEADER}}

struct Params {
    m: u32,
    n: u32,
    // The end of this dispatch's slice of k.
    k: u32,
    batch_rank: u32,
    a_offset: u32,
    b_offset: u32,
    c_offset: u32,
    // First batch of this dispatch (z covers at most 65535 batches).
    batch_start: u32,
    a_rs: i32,
    a_cs: i32,
    b_rs: i32,
    b_cs: i32,
    c_rs: i32,
    c_cs: i32,
    k_start: u32,
    // 1 when the output already holds the product over k < k_start.
    accumulate: u32,
    batch_shape: array<vec4<u32>, 2>,
    a_batch: array<vec4<i32>, 2>,
    b_batch: array<vec4<i32>, 2>,
    c_batch: array<vec4<i32>, 2>,
}

@group(0) @binding(0) var<uniform> params: Params;

{{MATH}}
{{BINDINGS}}
{{ACCESS}}
{{ACC}}
{{WALK}}

const TILE: u32 = 64u;
const TK: u32 = 16u;

// Tiles stored k-major: tile_a[kk * TILE + row], tile_b[kk * TILE + col].
var<workgroup> tile_a: array<Acc, 1024>;
var<workgroup> tile_b: array<Acc, 1024>;

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let bases = batch_bases(wid.z + params.batch_start);
    let a_base = bases[0];
    let b_base = bases[1];
    let c_base = bases[2];
    let row0 = wid.y * TILE;
    let col0 = wid.x * TILE;
    let t = lid.y * 16u + lid.x;
    var acc: array<array<Acc, 4>, 4>;
    for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) {
            acc[i][j] = ZERO;
        }
    }
    for (var k0 = params.k_start; k0 < params.k; k0 += TK) {
        for (var e = 0u; e < 4u; e++) {
            let idx = t + e * 256u;
            // a: consecutive threads take consecutive k of one row.
            let r = idx / TK;
            let ka = idx % TK;
            var v = ZERO;
            if (row0 + r < params.m && k0 + ka < params.k) {
                v = load_a(u32(a_base + i32(row0 + r) * params.a_rs + i32(k0 + ka) * params.a_cs));
            }
            tile_a[ka * TILE + r] = v;
            // b: consecutive threads take consecutive columns of one k.
            let kb = idx / TILE;
            let col = idx % TILE;
            var w = ZERO;
            if (k0 + kb < params.k && col0 + col < params.n) {
                w = load_b(u32(b_base + i32(k0 + kb) * params.b_rs + i32(col0 + col) * params.b_cs));
            }
            tile_b[kb * TILE + col] = w;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            var av: array<Acc, 4>;
            var bv: array<Acc, 4>;
            for (var i = 0u; i < 4u; i++) {
                av[i] = tile_a[kk * TILE + lid.y + 16u * i];
                bv[i] = tile_b[kk * TILE + lid.x + 16u * i];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var j = 0u; j < 4u; j++) {
                    acc[i][j] += av[i] * bv[j];
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + lid.y + 16u * i;
        for (var j = 0u; j < 4u; j++) {
            let c = col0 + lid.x + 16u * j;
            if (r < params.m && c < params.n) {
                let p = u32(c_base + i32(r) * params.c_rs + i32(c) * params.c_cs);
                var v = acc[i][j];
                if (params.accumulate != 0u) {
                    v += load_out(p);
                }
                store_out(p, v);
            }
        }
    }
}
