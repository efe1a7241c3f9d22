// The input position where output image `image` (counted row-major over
// the leading axes, all but the last two) starts: `x_offset` plus each
// leading coordinate times the input's stride along it. For the image
// kernels whose Params hold `lead_rank`, `lead_shape`, `lead_strides` and
// `x_offset` (resize, pooling).
fn lead_base(image: u32) -> i32 {
    var lead = image;
    var base = i32(params.x_offset);
    for (var k = i32(params.lead_rank) - 1; k >= 0; k--) {
        let d = params.lead_shape[k / 4][k % 4];
        base += i32(lead % d) * params.lead_strides[k / 4][k % 4];
        lead = lead / d;
    }
    return base;
}
