//! Few long lines (a group normalisation's (batch, group) pairs, an
//! image-sized layer norm) split over workgroups, as PyTorch's separate
//! statistics kernel does: a workgroup a line would leave a big GPU mostly
//! idle. Two dispatches: `main_stats` reduces each chunk of a line (an
//! estimate of its mean, the estimate's error and the squared deviations
//! from the corrected mean; an RMS norm's sum of squares) into a scratch
//! buffer of partials ([`PARTIALS`] a chunk), and `main_apply` combines
//! the line's partials in order (Chan's formula: every workgroup of a line
//! gets the same statistics) and writes its chunk.

/// Threads of a workgroup (norm.wgsl's `WORKGROUP`).
const WORKGROUP: usize = 128;

/// Lines at least this long may be split.
const SPLIT_LINE: usize = 8192;

/// Elements a chunk takes at least.
const MIN_CHUNK: usize = 2048;

/// Chunks a line takes at most (each workgroup of `main_apply` reads all of
/// its line's partials).
const MAX_SPLITS: usize = 64;

/// The chunks of each of `lines` lines of `length` and their length, on an
/// adapter keeping `resident` threads: `(1, length)` (no split) where the
/// lines fill half the adapter's workgroups or are short.
pub(super) fn split(lines: usize, length: usize, resident: usize) -> (usize, usize) {
    let target = resident / WORKGROUP;
    if length < SPLIT_LINE || lines.saturating_mul(2) >= target {
        return (1, length);
    }
    let splits = (target / lines).min(length / MIN_CHUNK).min(MAX_SPLITS);
    if splits < 2 {
        return (1, length);
    }
    // Every chunk non-empty: the count follows from the length.
    let chunk = length.div_ceil(splits);
    (length.div_ceil(chunk), chunk)
}

/// Partial results a chunk writes: a layer norm's estimate of its mean,
/// the correction to it and the squared deviations from the corrected
/// mean; an RMS norm's sum of squares (and two zeros).
pub(super) const PARTIALS: usize = 3;

/// `main_stats`: chunk `s` of line `l` (workgroup `l * splits + s`) into
/// partials `3w` to `3w + 2` (`CHUNK` its statistics `a`, `b` and `c`).
pub(super) const STATS_ENTRY: &str = "@compute @workgroup_size(WORKGROUP)
fn main_stats(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // Uniform across the workgroup: every thread reaches every barrier.
    let w = wid.x + wid.y * params.row_width;
    if (w >= params.lines * params.splits) {
        return;
    }
    let l = w / params.splits;
    let begin = (w % params.splits) * params.chunk;
    let end = min(begin + params.chunk, params.length);
    let src0 = line_starts(l)[0];
    CHUNK
    if (t == 0u) {
        partials[3u * w] = a;
        partials[3u * w + 1u] = b;
        partials[3u * w + 2u] = c;
    }
}";

/// A layer norm's chunk: an estimate of its mean, the mean of the
/// deviations from it (the estimate's error, kept apart: their sum
/// rounded to f32 would be off by up to half an ulp of the mean, an error
/// every chunk of a lattice of values shares), and the squared deviations
/// from the corrected mean (as a whole line's, `LAYER_STATS`).
pub(super) const LAYER_CHUNK: &str = "var sum = 0.0;
    for (var i = begin + t; i < end; i += WORKGROUP) {
        sum += element(src0, i);
    }
    let count = u32_to_f32(end - begin);
    let estimate = div_f32(total(sum, t), count);
    var p = 0.0;
    var q = 0.0;
    for (var i = begin + t; i < end; i += WORKGROUP) {
        let d = element(src0, i) - estimate;
        p += d;
        q += d * d;
    }
    let a = estimate;
    let b = div_f32(total(p, t), count);
    let c = corrected(div_f32(total(q, t), count), b) * count;";

/// An RMS norm's chunk: its sum of squares.
pub(super) const RMS_CHUNK: &str = "var q = 0.0;
    for (var i = begin + t; i < end; i += WORKGROUP) {
        let x = element(src0, i);
        q += x * x;
    }
    let a = total(q, t);
    let b = 0.0;
    let c = 0.0;";

/// `main_apply`: line `l`'s statistics from its partials (`COMBINE`), then
/// chunk `s` written.
pub(super) const APPLY_ENTRY: &str = "// Elements of chunk j of a line.
fn chunk_length(j: u32) -> f32 {
    return u32_to_f32(min(params.chunk, params.length - j * params.chunk));
}

@compute @workgroup_size(WORKGROUP)
fn main_apply(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let w = wid.x + wid.y * params.row_width;
    if (w >= params.lines * params.splits) {
        return;
    }
    let l = w / params.splits;
    let first = l * params.splits;
    let start = line_starts(l);
    let src0 = start[0];
    let n = u32_to_f32(params.length);
    let eps = bitcast<f32>(params.eps);
    COMBINE
    let begin = (w % params.splits) * params.chunk;
    let end = min(begin + params.chunk, params.length);
    for (var i = begin + t; i < end; i += WORKGROUP) {
        let y = ((element(src0, i) - shift) - fine) * scale;
        store_out(u32(start[1] + i32(i) * params.dst_step), affine(y, l, i));
    }
}";

/// A layer norm's line: the mean of the chunks' estimates by their
/// lengths, then the chunks' squared deviations moved to it (Chan et al.),
/// each chunk's mean its estimate and correction apart, and the line's
/// mean corrected by their deviations from it (`fine`).
pub(super) const LAYER_COMBINE: &str = "var sum = 0.0;
    for (var j = 0u; j < params.splits; j++) {
        sum += chunk_length(j) * partials[3u * (first + j)];
    }
    let shift = div_f32(sum, n);
    var p = 0.0;
    var m2 = 0.0;
    for (var j = 0u; j < params.splits; j++) {
        let at = 3u * (first + j);
        let d = (partials[at] - shift) + partials[at + 1u];
        p += chunk_length(j) * d;
        m2 += partials[at + 2u] + chunk_length(j) * d * d;
    }
    let fine = div_f32(p, n);
    let scale = div_f32(1.0, sqrt_f32(corrected(div_f32(m2, n), fine) + eps));";

/// An RMS norm's line: the chunks' sums of squares.
pub(super) const RMS_COMBINE: &str = "var q = 0.0;
    for (var j = 0u; j < params.splits; j++) {
        q += partials[3u * (first + j)];
    }
    let shift = 0.0;
    let fine = 0.0;
    let scale = div_f32(1.0, sqrt_f32(div_f32(q, n) + eps));";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_long_lines_split_into_non_empty_chunks_within_the_limits() {
        let h100 = 1 << 18;
        // 256 lines of 25,088 (a group norm of 32 x 64 x 56 x 56 in 8
        // groups): 2,048 workgroups' worth, 8 a line.
        assert_eq!(split(256, 25_088, h100), (8, 3136));
        // Lines enough to fill the device, or short ones: no split.
        assert_eq!(split(1024, 25_088, h100), (1, 25_088));
        assert_eq!(split(4, 8191, h100), (1, 8191));
        // One line: at most MAX_SPLITS chunks.
        assert_eq!(split(1, 1 << 20, h100), (64, 16_384));
        // lavapipe on two cores: 16 workgroups.
        let two_cores = 2 * 4 * 256;
        assert_eq!(split(4, 16_384, two_cores), (4, 4096));
        assert_eq!(split(9, 16_384, two_cores), (1, 16_384));
        for lines in [1, 2, 3, 7, 100] {
            for length in [8192, 9000, 20_011, 100_003, 1 << 20] {
                let (splits, chunk) = split(lines, length, h100);
                assert!(splits <= MAX_SPLITS);
                assert!(splits == 1 || chunk >= MIN_CHUNK, "{lines} {length}");
                // The last chunk holds at least one element.
                assert!((splits - 1) * chunk < length && splits * chunk >= length);
            }
        }
    }
}
