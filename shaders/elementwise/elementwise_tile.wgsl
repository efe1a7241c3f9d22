// One elementwise kernel over 32 x 32 tiles, for a program of one input
// whose fastest axis is not the destination's (a transposing copy or
// cast): the iteration plan's last axis q is the destination's fastest,
// the one before it, p, the input's; the axes before those are batches.
// A workgroup reads its tile with consecutive threads along p, applies the
// program, keeps the results in workgroup memory, and writes them with
// consecutive threads along q, so that both sides are coalesced. Filled
// by elementwise/codegen.rs:
//   PRELUDE   as elementwise.wgsl, whose walk is batch_positions(b):
//             where batch b starts in each operand
//   RESULT    the program's result type (f32, i32, u32, or vec2<u32> for i64)
{{PRELUDE}}

const TILE: u32 = 32u;
// One column of padding, so that a column of the tile spans every bank.
var<workgroup> tile: array<array<{{RESULT}}, 33>, 32>;

@compute @workgroup_size(32, 8)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    lane_zero = params.zero * lid.x;
    let g = wid.x + wid.y * params.row_threads;
    let p_axis = params.rank - 2u;
    let q_axis = params.rank - 1u;
    let n_p = params.shape[p_axis / 4u][p_axis % 4u];
    let n_q = params.shape[q_axis / 4u][q_axis % 4u];
    let tiles_p = (n_p + TILE - 1u) / TILE;
    let tiles_q = (n_q + TILE - 1u) / TILE;
    let per_batch = tiles_p * tiles_q;
    let b = g / per_batch;
    if (b >= params.numel / (n_p * n_q)) {
        return;
    }
    let p0 = (g % per_batch) / tiles_q * TILE;
    let q0 = g % tiles_q * TILE;
    let bases = batch_positions(b);
    let out_p = params.strides[0][p_axis / 4u][p_axis % 4u];
    let out_q = params.strides[0][q_axis / 4u][q_axis % 4u];
    let in_p = params.strides[1][p_axis / 4u][p_axis % 4u];
    let in_q = params.strides[1][q_axis / 4u][q_axis % 4u];
    for (var r = 0u; r < TILE; r += 8u) {
        let p = p0 + lid.x;
        let q = q0 + lid.y + r;
        if (p < n_p && q < n_q) {
            let x = load_op1(u32(bases[1] + i32(p) * in_p + i32(q) * in_q));
            tile[lid.y + r][lid.x] = program(x);
        }
    }
    workgroupBarrier();
    for (var r = 0u; r < TILE; r += 8u) {
        let q = q0 + lid.x;
        let p = p0 + lid.y + r;
        if (p < n_p && q < n_q) {
            store_out(u32(bases[0] + i32(p) * out_p + i32(q) * out_q), tile[lid.x][lid.y + r]);
        }
    }
}
