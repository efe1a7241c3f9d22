//! Channels-last (NHWC) memory for `[batch, channels, height, width]`
//! views: each pixel's channels side by side, as PyTorch's
//! `torch.channels_last` memory format lays them out.

use super::Layout;

impl Layout {
    /// True for a rank-4 `[n, c, h, w]` layout of at least one element
    /// whose memory is dense channels-last `[n, h, w, c]` (extents of 1
    /// may have any stride, as in [`Layout::is_contiguous`]), from any
    /// offset.
    pub fn is_channels_last(&self) -> bool {
        if self.rank() != 4 || self.numel() == 0 {
            return false;
        }
        // Row-major over the axes in the order [n, h, w, c], innermost
        // first, without a copy of the layout (a check on ops' paths).
        let mut expected = 1isize;
        for a in [1, 3, 2, 0] {
            let d = self.dims()[a];
            if d != 1 {
                if self.strides[a] != expected {
                    return false;
                }
                expected *= d as isize;
            }
        }
        true
    }

    /// True for a rank-4 `[n, c, h, w]` layout of two or more channels
    /// whose channels lie one after another (stride 1) inside each pixel,
    /// every other axis of more than one element striding past a whole
    /// pixel's channels: dense channels-last memory and its crops,
    /// channel slices and flips. A convolution of such an input writes
    /// channels-last on the CPU.
    pub(crate) fn has_channels_innermost(&self) -> bool {
        let d = self.dims();
        self.rank() == 4
            && d[1] > 1
            && self.strides[1] == 1
            && [0, 2, 3]
                .iter()
                .all(|&a| d[a] <= 1 || self.strides[a].unsigned_abs() >= d[1])
    }
}
