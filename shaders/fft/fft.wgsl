// Discrete Fourier transforms of lines held in workgroup memory (Stockham
// autosort: each pass reads one buffer and writes the other in an order
// that leaves the result in natural order, no bit reversal), specialised
// by fft/mod.rs per length and read mode, which fills the {{...}} slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  the source (binding 1), `out_buf` (binding 2, f32) and the
//             twiddle table (binding 3, `array<vec2<f32>>`)
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   ACCESS    load_x(start, j): element j of a line as a complex number
//             (zero past the line's `length` elements), and store_y(start,
//             k, y): output k of a line written (both parts, or the real
//             part alone)
//   CONSTANTS N (the passes' length), LINES (lines per workgroup),
//             LANES (threads per line), CONJ (1 forward, -1 inverse),
//             SLOTS (LINES * N) and TW (the twiddle table's step per
//             pass twiddle: 2 where the table is for a real line of 2N)
//   STAGES    one function per pass: a radix-2 or radix-4 butterfly per
//             thread and index, or a general radix one output per thread
//   RUN       the passes in order, a barrier after each
//   OUTPUT    output(base, k): output k of the line at `base`, from the
//             buffer the last pass wrote; for a real line of even length
//             2N, transformed as N complex points (even samples real, odd
//             ones imaginary), the spectrum separated from them
//   TWIST     what multiplies output k of line l before it is stored:
//             nothing, or a four-step FFT's twiddle
//
// Twiddles come from a table the host computed in double precision
// (twiddles[m] = exp(-2 pi i m / L), L the line's length): WGSL's sin and cos promise only an
// absolute error of 2^-11, far from an FFT's accuracy.
{{PRELUDE}}
{{BINDINGS}}
{{WALK}}
{{CONSTANTS}}

var<workgroup> ping: array<vec2<f32>, SLOTS>;
var<workgroup> pong: array<vec2<f32>, SLOTS>;

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// The table's root m (exp(-+2 pi i m / its length), conjugated for an
// inverse).
fn root(m: u32) -> vec2<f32> {
    let t = twiddles[m];
    return vec2<f32>(t.x, CONJ * t.y);
}

// exp(-+2 pi i m / N) for 0 <= m < N.
fn w(m: u32) -> vec2<f32> {
    return root(m * TW);
}

{{ACCESS}}
{{STAGES}}
{{OUTPUT}}

@compute @workgroup_size(LINES * LANES)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let g = t / LANES;
    let lane = t % LANES;
    let l = (wid.x + wid.y * params.row_width) * LINES + g;
    let live = l < params.lines;
    let base = g * N;
    var start = array<i32, 2>(0, 0);
    if (live) {
        start = line_starts(l);
        for (var j = lane; j < N; j += LANES) {
            ping[base + j] = load_x(start[0], j);
        }
    }
    workgroupBarrier();
{{RUN}}
    if (live) {
        for (var k = lane; k < params.count; k += LANES) {
            var y = output(base, k) * params.scale;
{{TWIST}}
            store_y(start[1], k, y);
        }
    }
}
