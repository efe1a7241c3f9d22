// The store every matmul kernel (and the convolution's, which runs the
// matmul's tiles) ends with; needs `params.m`, `n`, `c_rs`, `c_cs` and
// `accumulate`, `Acc`, `load_out` and `store_out`.

// Element `v` of the output at (r, c) of the matrix at `base`, added to
// what is there when accumulating; nothing outside the output.
fn put(base: i32, r: u32, c: u32, v: Acc) {
    if (r < params.m && c < params.n) {
        let p = u32(base + i32(r) * params.c_rs + i32(c) * params.c_cs);
        var x = v;
        if (params.accumulate != 0u) {
            x += load_out(p);
        }
        store_out(p, x);
    }
}
