//! Matrix-vector products (`n == 1`, or `m == 1` seen transposed): the
//! tiled kernels would compute a 64- or 128-wide block for one column, so
//! these take a kernel of their own, bound by memory: `out[j] = sum over k
//! of A[j, k] * x[k]`, with A at binding 1 and x at binding 2.
//!
//! Where k is A's fast axis (`A @ x` for a row-major A), 64 threads share
//! one output, reading consecutive k, and add their sums in workgroup
//! memory; where j is (`x @ B`, or `A.t() @ x`), 64 threads take 64
//! consecutive outputs, four threads each along k. Either way a warp reads
//! consecutive elements of A.

/// `main` of the matrix-vector kernel. Reuses matmul.wgsl's `Params`:
/// `m` outputs, A's j and k strides in `a_rs` / `a_cs`, x's in `b_rs`,
/// the output's in `c_rs`, and `a_k_fast` choosing the layout above.
pub(crate) fn gemv_wgsl() -> &'static str {
    "var<workgroup> sums: array<Acc, 256>;

@compute @workgroup_size(64, 4)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let bases = batch_bases(wid.z + params.batch_start);
    let along_k = params.a_k_fast != 0u;
    // Along k: 4 outputs, 64 lanes each; else 64 outputs, 4 lanes each.
    let j = select(wid.x * 64u + lid.x, wid.x * 4u + lid.y, along_k);
    let lane = select(lid.y, lid.x, along_k);
    let lanes = select(4u, 64u, along_k);
    var acc = ZERO;
    if (j < params.m) {
        let row = bases[0] + i32(j) * params.a_rs;
        for (var kk = params.k_start + lane; kk < params.k; kk += lanes) {
            let a = load_a(u32(row + i32(kk) * params.a_cs));
            acc += a * load_b(u32(bases[1] + i32(kk) * params.b_rs));
        }
    }
    let t = lid.y * 64u + lid.x;
    sums[t] = acc;
    workgroupBarrier();
    if (along_k) {
        for (var w = 32u; w > 0u; w = w / 2u) {
            if (lid.x < w) {
                sums[t] += sums[t + w];
            }
            workgroupBarrier();
        }
        if (lid.x == 0u) {
            put(bases[2], j, 0u, sums[t]);
        }
    } else {
        for (var w = 2u; w > 0u; w = w / 2u) {
            if (lid.y < w) {
                sums[t] += sums[t + w * 64u];
            }
            workgroupBarrier();
        }
        if (lid.y == 0u) {
            put(bases[2], j, 0u, sums[t]);
        }
    }
}
"
}

/// Outputs per workgroup: 4 along k, else 64.
pub(crate) fn outputs_per_group(along_k: bool) -> usize {
    if along_k { 4 } else { 64 }
}
