// Discrete Fourier transforms of lines held in workgroup memory (Stockham
// autosort: each pass leaves its outputs where the next pass reads them,
// so the result is in natural order, no bit reversal), specialised by
// fft/mod.rs per length, read mode and line order, which fills the {{...}}
// slots:
//   PRELUDE   `enable f16;` where needed, `struct Params` bound at 0, and
//             kernel/math.wgsl
//   BINDINGS  the source (binding 1: complex pairs as vec2<f32>, or f32 /
//             f16 scalars), `out_buf` (binding 2, vec2<f32> pairs or f32)
//             and the twiddle table (binding 3, `array<vec2<f32>>`)
//   WALK      line_starts(l): the source and destination positions of
//             line l's first element
//   CONSTANTS N (the passes' length), LINES (lines per workgroup),
//             LANES (threads per line), PITCH (slots from one line to the
//             next), SLOTS (LINES * PITCH), CONJ (1 forward, -1 inverse)
//             and TW (the twiddle table's step per pass twiddle: 2 where
//             the table is for a real line of 2N); slot(i), the slot of a
//             line's element i from the line's start (i + i / 16 where
//             that fits, so that a pass of radix 16's writes, 16 apart,
//             fall in different banks)
//   ACCESS    load_x(start, j): element j of a line as a complex number
//             (zero past the line's `length` elements), and store_y(start,
//             k, y): output k of a line written (both parts, or the real
//             part alone)
//   STAGES    one function per pass: each thread reads its butterflies'
//             inputs into registers, waits for the workgroup, then
//             twiddles, transforms and writes them (fft/passes.rs)
//   OUTPUT    output(base, k): output k of the line at `base`; for a real
//             line of even length 2N, transformed as N complex points
//             (even samples real, odd ones imaginary), the spectrum
//             separated from them
//   STARTS    `starts`, each line's first source and destination
//             positions, kept in workgroup memory where lines are read or
//             written across (found once by the first LINES threads)
//   LOAD      the lines' starts found, and the lines read into `buf`,
//             along each line or across them
//   RUN       the passes in order, a barrier after each
//   STORE     each line's outputs, times `scale` and (for a four-step
//             FFT's first pass) its twiddle, written along or across
//
// Twiddles between passes come from a table the host computed in double
// precision (twiddles[m] = exp(-2 pi i m / L), L the line's length): WGSL's
// sin and cos promise only an absolute error of 2^-11, far from an FFT's
// accuracy. Roots inside a butterfly are constants, rounded from f64.
{{PRELUDE}}
{{BINDINGS}}
{{WALK}}
{{CONSTANTS}}

var<workgroup> buf: array<vec2<f32>, SLOTS>;

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
{{STARTS}}

@compute @workgroup_size(LINES * LANES)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let g = t / LANES;
    let lane = t % LANES;
    let first = (wid.x + wid.y * params.row_width) * LINES;
    let live = first + g < params.lines;
    let base = g * PITCH;
{{LOAD}}
    workgroupBarrier();
{{RUN}}
{{STORE}}
}
