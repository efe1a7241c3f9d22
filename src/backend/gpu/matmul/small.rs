//! Batches of small matrices: one thread per output element, the outputs
//! of consecutive matrices numbered on across workgroups, so a workgroup
//! of 256 threads covers four 8 x 8 products (a tiled kernel would give
//! each one a 32 x 32 block, 94% of it padding). Each thread reads its row
//! of `a` and column of `b` from global memory; small matrices stay in
//! cache, so the reuse a tile would arrange in workgroup memory comes from
//! there.

/// Threads per workgroup.
pub(crate) const THREADS: u32 = 256;

/// `main` of the per-output kernel. Reuses matmul.wgsl's `Params`, with
/// `batches` the matrices of this dispatch (from `batch_start`), numbered
/// over a 2-D grid of workgroups.
pub(crate) fn per_output_wgsl() -> &'static str {
    "@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let t = (wid.y * groups.x + wid.x) * 256u + lane;
    let per = params.m * params.n;
    let z = t / per;
    if (z >= params.batches) {
        return;
    }
    let e = t - z * per;
    let r = e / params.n;
    let c = e - r * params.n;
    let bases = batch_bases(z + params.batch_start);
    let row = bases[0] + i32(r) * params.a_rs;
    let column = bases[1] + i32(c) * params.b_cs;
    var acc = ZERO;
    for (var kk = params.k_start; kk < params.k; kk += 1u) {
        acc += load_a(u32(row + i32(kk) * params.a_cs))
            * load_b(u32(column + i32(kk) * params.b_rs));
    }
    put(bases[2], r, c, acc);
}
"
}

/// Matrices per dispatch of `per` outputs each: the thread numbers of one
/// dispatch stay below 2^31.
pub(crate) fn batches_per_dispatch(per: usize) -> usize {
    ((1usize << 31) / per.max(1)).max(1)
}
