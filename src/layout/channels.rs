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
        let mut nhwc = self.clone();
        nhwc.shape = [0, 2, 3, 1].map(|a| self.dims()[a]).into();
        nhwc.strides = [0, 2, 3, 1].map(|a| self.strides[a]).into_iter().collect();
        nhwc.is_contiguous()
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
