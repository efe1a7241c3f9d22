//! The call protocol between the op layer and the backends: one struct per
//! kernel family (`Call` for elementwise ops, `ReduceCall`, `MatmulCall`
//! ...) holding the operands as `TensorRef`s (storage, layout already
//! arranged for the kernel, dtype), built by `ops/` after it has checked
//! every argument, and run by the dispatch functions in `backend/mod.rs`.

use super::Storage;
use super::custom_spec::CustomSpec;
use crate::dtype::KernelType;
use crate::layout::Layout;
use crate::op::{ElementwiseOp, IndexOp, ReduceOp, ScanOp};
use crate::scalar::TypedScalar;
use smallvec::SmallVec;
use std::sync::Arc;

/// A tensor as a kernel sees it: storage, layout (already broadcast to the
/// destination's shape) and dtype.
#[derive(Clone)]
pub(crate) struct TensorRef<'a> {
    pub storage: StorageRef<'a>,
    pub layout: Layout,
    pub dtype: KernelType,
}

impl<'a> TensorRef<'a> {
    /// The same tensor read through `layout` (this one's is not cloned).
    pub fn with_layout(&self, layout: Layout) -> TensorRef<'a> {
        TensorRef {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
        }
    }
}

/// The storage of a tensor as a call holds it: the tensor's own, or the one
/// a recovery restored its data to (see `backend/kept.rs`), held for the
/// call. Either way a plain reference: reading it costs what reading the
/// tensor's own did.
pub(crate) struct StorageRef<'a> {
    /// The tensor's storage, or the one `held` owns.
    storage: &'a Arc<Storage>,
    /// Null, or a `Box<Arc<Storage>>` this value owns (a raw pointer, not
    /// a `Box`, so that moving this value does not assert unique access to
    /// what `storage` points at).
    held: *mut Arc<Storage>,
}

impl<'a> StorageRef<'a> {
    /// The tensor's own storage.
    #[inline(always)]
    pub fn own(storage: &'a Arc<Storage>) -> StorageRef<'a> {
        StorageRef {
            storage,
            held: std::ptr::null_mut(),
        }
    }

    /// A storage this reference holds.
    pub fn held(storage: Arc<Storage>) -> StorageRef<'a> {
        let held = Box::into_raw(Box::new(storage));
        // SAFETY: `held` is a live allocation this value owns until its
        // drop frees it, at one address meanwhile and never written;
        // `storage` is private and lent out only for as long as `self` is
        // borrowed (`Deref`), so no reference to it outlives the
        // allocation.
        let storage: &'a Arc<Storage> = unsafe { &*held };
        StorageRef { storage, held }
    }
}

// SAFETY: a `StorageRef` is a shared reference to an `Arc<Storage>` and,
// at most, an `Arc<Storage>` it owns, both of which cross and are shared
// between threads natively (the CPU backend's threads read calls). In a
// browser the GPU's storage stays on the page's thread, as it must.
#[cfg(not(target_arch = "wasm32"))]
unsafe impl Send for StorageRef<'_> {}
#[cfg(not(target_arch = "wasm32"))]
unsafe impl Sync for StorageRef<'_> {}
#[cfg(not(target_arch = "wasm32"))]
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Arc<Storage>>();
};

impl Drop for StorageRef<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.held.is_null() {
            // SAFETY: `held` came from `Box::into_raw` in `held()`, is
            // freed only here, once, and `storage` (which points into it)
            // is not used after this.
            drop(unsafe { Box::from_raw(self.held) });
        }
    }
}

impl Clone for StorageRef<'_> {
    fn clone(&self) -> Self {
        if self.held.is_null() {
            StorageRef::own(self.storage)
        } else {
            StorageRef::held(Arc::clone(self.storage))
        }
    }
}

impl std::ops::Deref for StorageRef<'_> {
    type Target = Arc<Storage>;

    #[inline(always)]
    fn deref(&self) -> &Arc<Storage> {
        self.storage
    }
}

/// One kernel input.
#[derive(Clone)]
pub(crate) enum Input<'a> {
    Tensor(TensorRef<'a>),
    Scalar(TypedScalar),
}

impl Input<'_> {
    pub fn dtype(&self) -> KernelType {
        match self {
            Input::Tensor(t) => t.dtype,
            Input::Scalar(s) => s.dtype,
        }
    }
}

/// One elementwise kernel launch. Inputs that share the destination's storage
/// either have the destination's layout or touch none of its elements (the op
/// layer copies any other overlapping input first).
pub(crate) struct Call<'a> {
    pub kernel: ElementwiseOp,
    pub out: TensorRef<'a>,
    /// Owned, so that a GPU recording moves their layouts into its command.
    pub inputs: Inputs<'a>,
}

/// The inputs of one elementwise call (inline for up to three).
pub(crate) type Inputs<'a> = SmallVec<[Input<'a>; 3]>;

/// One reduction: each element of `out` (a fresh row-major tensor whose
/// shape is the first `kept` axes of `input`) reduces the elements of
/// `input` that share those leading indices. The op layer has permuted the
/// kept axes first and the reduced axes last; the input may be any view.
pub(crate) struct ReduceCall<'a> {
    pub op: ReduceOp,
    pub input: TensorRef<'a>,
    pub kept: usize,
    pub out: TensorRef<'a>,
    /// Divide each sum by the number of reduced elements (a mean).
    pub mean: bool,
    /// A sum of deviations: each element `x` of output `o` enters the sum
    /// as `x - center[o]` (or its square, `Deviation::Squared`), `center`
    /// holding one f32 per output in row-major order at offset 0 (a
    /// variance's passes; `op` is `Sum` and the input and output are f32).
    pub center: Option<(TensorRef<'a>, Deviation)>,
}

/// What a centered sum (`ReduceCall::center`) adds of each deviation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Deviation {
    /// `x - center`.
    Plain,
    /// `(x - center)^2`.
    Squared,
}

impl ReduceCall<'_> {
    /// The kept axes of the input (one output each, row-major), coalesced.
    pub fn kept_layout(&self) -> Layout {
        self.input.layout.leading(self.kept).coalesced()
    }

    /// The reduced axes of the input at offset 0, coalesced (row-major
    /// order, so arg ops' indices are unchanged).
    pub fn reduced_layout(&self) -> Layout {
        self.input.layout.trailing(self.kept).coalesced()
    }
}

/// One (batched) matrix product `out = a @ b`: `a` is `[batch.., m, k]`,
/// `b` is `[batch.., k, n]` (batch axes already broadcast, possibly with
/// stride 0) and `out` a fresh row-major `[batch.., m, n]`. Operands may be
/// any view; kernels read them through their strides.
pub(crate) struct MatmulCall<'a> {
    pub a: TensorRef<'a>,
    pub b: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

impl MatmulCall<'_> {
    /// (m, k, n).
    pub fn dims(&self) -> (usize, usize, usize) {
        let a = self.a.layout.dims();
        let b = self.b.layout.dims();
        let r = a.len();
        (a[r - 2], a[r - 1], b[r - 1])
    }

    /// The batch axes of `t` (all but the last two), at `t`'s offset.
    pub fn batch_layout(t: &TensorRef) -> Layout {
        t.layout.leading(t.layout.rank() - 2)
    }

    /// The strides of [`MatmulCall::batch_layout`], without building it.
    pub fn batch_strides<'t>(t: &'t TensorRef) -> &'t [isize] {
        &t.layout.strides()[..t.layout.rank() - 2]
    }

    /// (row stride, column stride) of the matrices of `t`.
    pub fn matrix_strides(t: &TensorRef) -> (isize, isize) {
        let s = t.layout.strides();
        (s[s.len() - 2], s[s.len() - 1])
    }
}

/// One scan: each line of `input` along its last axis (the op layer moved
/// the scanned axis there) becomes the running sums or products written
/// along the last axis of `out`, a fresh tensor viewed the same way.
pub(crate) struct ScanCall<'a> {
    pub op: ScanOp,
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

/// (lines, step) of `t` for kernels that walk lines along the last axis:
/// the layout of all axes but the last (at `t`'s offset), and the last
/// axis's stride.
pub(crate) fn lines(t: &TensorRef) -> (Layout, isize) {
    t.layout.split_last()
}

impl ScanCall<'_> {
    /// Elements per line.
    pub fn length(&self) -> usize {
        self.input.layout.dims().last().copied().unwrap_or(1)
    }
}

/// One sort: the lines of `input` along its last axis (the op layer moved
/// the sorted axis there) are sorted stably, ascending with NaN last (or,
/// with `descending`, descending with NaN first), and the position along
/// the line of each element in sorted order is written along the last axis
/// of `out`, a fresh i32 tensor viewed the same way. Equal elements (and
/// -0 and +0) keep their order.
pub(crate) struct SortCall<'a> {
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
    pub descending: bool,
}

impl SortCall<'_> {
    /// Elements per line.
    pub fn length(&self) -> usize {
        self.input.layout.dims().last().copied().unwrap_or(1)
    }
}

/// One run of a user's WGSL kernel (GPU only; the op layer refuses the
/// CPU): each input read through its layout broadcast to `out` (for the
/// element at hand) and through its own layout (for `NAME_at`).
pub(crate) struct CustomCall<'a> {
    pub op: &'static str,
    pub spec: &'a CustomSpec,
    pub inputs: Vec<(TensorRef<'a>, Layout)>,
    pub scalars: Vec<TypedScalar>,
    pub out: TensorRef<'a>,
}

/// The longest line a GPU scan runs in one pass (its workgroup's loop
/// budget); a longer one restarts each pass from the last output, rounded
/// to the dtype.
pub(crate) const SCAN_PASS: usize = 1 << 16;

/// The longest line a [`SoftmaxCall`] takes, on every device (the GPU
/// walks a line with one workgroup, and lavapipe's loop limit bounds that
/// walk); ops compose longer softmaxes from reductions.
pub(crate) const MAX_SOFTMAX_LINE: usize = 1 << 20;

/// One softmax: each line of `input` along its last axis (the op layer
/// moved the softmax axis there) becomes `exp(x - max) / sum(exp(x - max))`
/// (or, with `log`, `(x - max) - log(sum(exp(x - max)))`) along the last
/// axis of `out`, a fresh float tensor of the input's dtype viewed the same
/// way.
///
/// With `total` (GPU only; `log` unused) each line gives one value instead,
/// its logsumexp `m + ln(s)` (NaN for a line holding NaN, +inf for one
/// holding +inf, -inf for one of -inf only), written in line order into
/// `out`, an f32 tensor of the lines' shape.
pub(crate) struct SoftmaxCall<'a> {
    pub log: bool,
    pub total: bool,
    /// The softmax of `-x` (a softmin).
    pub negate: bool,
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

impl SoftmaxCall<'_> {
    /// Elements per line.
    pub fn length(&self) -> usize {
        self.input.layout.dims().last().copied().unwrap_or(1)
    }
}

/// How a resize samples (the op layer's `Resize`): the element at the
/// position, or a blend of the two around it, pixel centres or corners
/// aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sampling {
    /// The element at `floor(i * ratio)`, but that an axis as long as its
    /// input copies it and one twice as long takes `i / 2` (PyTorch's fast
    /// nearest path).
    Nearest,
    /// The element at `floor(i * ratio)` always (PyTorch's generic one).
    NearestGeneric,
    Bilinear,
    BilinearAlignCorners,
    /// Bilinear with PyTorch's antialiasing: each output weighs a window
    /// of the input as wide as the scale (`ops/resize_taps.rs`'s
    /// `antialias_weights`).
    BilinearAntialias,
}

/// The most input positions an antialiased output weighs along one axis
/// on a GPU's single-pass kernel (the window of a scale up to 31.5); wider
/// windows are composed by the op layer.
pub(crate) const MAX_ANTIALIAS_TAPS: usize = 64;

/// One resize on a GPU's single-pass kernel: the last two axes of `input`
/// (a float tensor for the blending modes) resized into `out`, a fresh
/// contiguous tensor of its dtype; `ratio` is each axis's input positions
/// per output position in f32 (`ops/resize_taps.rs`'s `source_ratio`).
pub(crate) struct ResizeCall<'a> {
    pub mode: Sampling,
    pub ratio: [f32; 2],
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

/// One depthwise convolution on a GPU's single-pass kernel: `input`
/// `[batch, channels, h, w]` (any view), `weight` `[out, 1, kh, kw]`
/// contiguous, of the input's dtype, an optional f32 `bias` of one value
/// per output channel, into `out`, a fresh contiguous `[batch, out, ho,
/// wo]` of that dtype; `pad` is the padding before each axis.
pub(crate) struct DepthwiseCall<'a> {
    pub input: TensorRef<'a>,
    pub weight: TensorRef<'a>,
    pub bias: Option<TensorRef<'a>>,
    pub out: TensorRef<'a>,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
    /// A one-op activation applied to each biased f32 sum before its
    /// rounding (the CPU's kernel takes it; a GPU's call has none).
    pub activation: Option<crate::op::UnaryOp>,
}

/// One layer, RMS or group normalisation on a GPU's single-pass kernel:
/// each line of `input` along its last axis (the op layer flattened the
/// normalised axes there) normalised into `out`, a fresh tensor of its
/// dtype viewed the same way, times the f32 `weight` and plus the f32
/// `bias` (contiguous, one per line element or per channel) where given.
pub(crate) struct NormCall<'a> {
    /// RMS (no centring) or layer normalisation.
    pub rms: bool,
    pub eps: f32,
    pub input: TensorRef<'a>,
    pub weight: Option<TensorRef<'a>>,
    pub bias: Option<TensorRef<'a>>,
    /// A group normalisation's channels: `(groups, span)` when element `i`
    /// of line `l` belongs to channel `(l % groups) * (length / span) + i /
    /// span` (the lines are (batch, group) pairs, each `length / span`
    /// channels of `span` elements), which indexes the weight and bias;
    /// `None` when they are indexed by `i` (layer and RMS normalisation).
    pub channels: Option<(usize, usize)>,
    pub out: TensorRef<'a>,
}

/// A product with a quantized weight, or the weight's dequantization. The
/// weight `w` is a u8 view of `n` rows of `row_bytes` bytes each (rows
/// contiguous, starting at any byte), each row `k` elements in blocks of
/// `ty`. With `x` (contiguous f32 `[m, k]`): `out[i, r] = sum_c x[i, c]
/// w[r, c]` into the f32 view `out` (`m` rows `out_stride` apart, `n`
/// contiguous columns); without: `w` decoded into `out`, contiguous f32
/// `[n, k]`.
pub(crate) struct QuantCall<'a> {
    pub ty: crate::quant::GgmlType,
    pub w: TensorRef<'a>,
    pub x: Option<TensorRef<'a>>,
    pub out: TensorRef<'a>,
    pub n: usize,
    pub k: usize,
    pub m: usize,
    pub out_stride: usize,
    /// The activations were f16 (widened to f32 for the call): a product
    /// may round the decoded weight to f16, as f16 products do (the
    /// cooperative kernel).
    pub half: bool,
}

impl QuantCall<'_> {
    /// Bytes of one weight row.
    pub fn row_bytes(&self) -> usize {
        self.k / self.ty.block_size() as usize * self.ty.block_bytes() as usize
    }
}

/// One pooling on a GPU's single-pass kernel: each window over the last two
/// axes of `input` (a float tensor) reduced into `out`, a fresh contiguous
/// tensor of its dtype; `pad` is the padding before each axis (the space
/// after is implied by `out`'s extents).
pub(crate) struct PoolCall<'a> {
    /// An average (true) or a maximum.
    pub average: bool,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
    /// Whether an average divides by the padding its window covers.
    pub count_include_pad: bool,
    /// PyTorch's adaptive average: output `i` of an axis of `n` inputs and
    /// `m` outputs averages inputs `floor(i n / m)..ceil((i + 1) n / m)`,
    /// with `kernel` the longest such bin (stride, padding and dilation
    /// unused), and `m (n + 1)` at most 2^32 on each axis.
    pub adaptive: bool,
    pub input: TensorRef<'a>,
    pub out: TensorRef<'a>,
}

/// The axis an index tensor addresses: which one (for error reports), its
/// extent and its stride in the indexed tensor, and the positions along it
/// that one call touches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexedAxis {
    pub axis: usize,
    pub size: usize,
    pub stride: isize,
    /// The call touches positions `first..first + count` along the axis,
    /// and the indexed layout (`src` of a gather, `out` of a scatter) is
    /// at position `first`: indices that resolve outside are skipped
    /// without a fault. All of the axis (`first` 0, `count` `size`) but in
    /// the parts of a GPU op over a view larger than one storage binding
    /// (`ops/binding_parts.rs`); the CPU takes only the whole axis.
    pub first: usize,
    pub count: usize,
}

impl IndexedAxis {
    /// All of axis `axis`, of extent `size` and stride `stride`.
    pub fn whole(axis: usize, size: usize, stride: isize) -> IndexedAxis {
        IndexedAxis {
            axis,
            size,
            stride,
            first: 0,
            count: size,
        }
    }

    /// True when the call touches all of the axis.
    pub fn is_whole(&self) -> bool {
        self.first == 0 && self.count == self.size
    }

    /// The position along the axis that `raw` (an i32 or u32 index)
    /// names: `-size..size` for signed indices (negative ones count from
    /// the end, as NumPy), `0..size` for unsigned; `None` outside.
    pub fn resolve(&self, raw: i64) -> Option<usize> {
        let size = self.size as i64;
        let k = if raw < 0 { raw + size } else { raw };
        (0..size).contains(&k).then_some(k as usize)
    }
}

/// Indexing that reads (take, index_select, gather): output element `o`
/// is the element of the source at `src`'s position for `o` plus
/// `target.stride` times the index at `index`'s position for `o`. Both are
/// layouts over the output's coordinates (stride 0 where they do not vary).
pub(crate) struct GatherCall<'a> {
    pub op: IndexOp,
    pub src: TensorRef<'a>,
    pub index: TensorRef<'a>,
    /// A fresh row-major tensor.
    pub out: TensorRef<'a>,
    pub target: IndexedAxis,
}

/// Indexing that writes (scatter, scatter_add) in place: along each line
/// (the index's last axis, to which the op layer moved the scatter axis)
/// element `i` of `src` goes to the destination at `out`'s position for
/// the line plus `target.stride` times the index. `out` is a layout over
/// the index's coordinates with stride 0 along the line; `src` and `index`
/// have the index's shape. Lines write distinct elements; within a line the
/// writes happen in order.
pub(crate) struct ScatterCall<'a> {
    pub op: IndexOp,
    pub out: TensorRef<'a>,
    pub src: TensorRef<'a>,
    pub index: TensorRef<'a>,
    pub target: IndexedAxis,
}

/// How an FFT reads the elements of its input lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FftRead {
    /// Complex elements: the input is the pair view of a c64 tensor.
    Complex,
    /// Real elements (f32 or f16), each with a zero imaginary part.
    Real,
    /// The first half of a Hermitian spectrum (the pair view of a c64
    /// tensor): element `k` of the transformed line is the input's `k` for
    /// `k <= n / 2` and the conjugate of its `n - k` beyond (NumPy's
    /// `irfft`).
    Hermitian,
}

/// A twiddle applied to every output of a four-step FFT's first pass:
/// output `k` of line `l` is multiplied by `w^(j k)`, `w` the `total`-th
/// root of unity (conjugated for an inverse), `j = l % period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FftTwist {
    pub period: usize,
    pub total: usize,
}

/// One discrete Fourier transform of length `n` of every line of `input`
/// along its last axis (the op layer moved the transformed axis there;
/// complex operands are pair views, whose line axis is the one before
/// their trailing axis of 2). A line shorter than `n` reads zeros past its
/// end; a longer one is read up to `n`. Output `k` of a line, for `k` up to
/// the output's line length, is `scale` times `sum_j x[j] w^(j k)` with `w
/// = exp(-2 pi i / n)` (its conjugate for an `inverse`), written along the
/// last axis of `out`: the pair view of a c64 tensor, or (after a
/// `Hermitian` read) an f32 tensor of the real parts.
pub(crate) struct FftCall<'a> {
    pub input: TensorRef<'a>,
    pub read: FftRead,
    pub out: TensorRef<'a>,
    pub n: usize,
    pub inverse: bool,
    pub scale: f32,
    /// GPU only: the twiddle of a four-step FFT's first pass.
    pub twist: Option<FftTwist>,
    /// GPU only: Bluestein's algorithm in the kernel (a length with a prime
    /// factor past its radices, whose convolution fits one line).
    pub chirp: bool,
}

impl FftCall<'_> {
    /// The lines of `t` (pair axis dropped when `complex`), with the step
    /// and length of each, in elements of its storage.
    fn line_walk(t: &TensorRef, complex: bool) -> (Layout, isize, usize) {
        let layout = if complex {
            t.layout.leading(t.layout.rank() - 1)
        } else {
            t.layout.clone()
        };
        let length = layout.dims().last().copied().unwrap_or(1);
        let (lines, step) = layout.split_last();
        (lines, step, length)
    }

    /// The input's lines, step and elements per line (in f32 units for a
    /// complex input, pointing at the real parts).
    pub fn input_lines(&self) -> (Layout, isize, usize) {
        Self::line_walk(&self.input, self.read != FftRead::Real)
    }

    /// The output's lines, step and elements per line, as the input's.
    pub fn out_lines(&self) -> (Layout, isize, usize) {
        Self::line_walk(&self.out, self.complex_out())
    }

    /// True when the output is complex (every read but `Hermitian`).
    pub fn complex_out(&self) -> bool {
        self.read != FftRead::Hermitian
    }
}

/// One 2-D convolution by the GPU's implicit-GEMM kernel: `out` (a fresh
/// row-major `[batch, out_channels, out_h, out_w]`) is, per image and
/// group, the `[out_channels / groups, in_channels / groups * kh * kw]`
/// weight matrix (`weight`, row-major `[out_channels, in_channels / groups,
/// kh, kw]`) times the input's patches (`input`, `[batch, in_channels, h,
/// w]`, any strides), read where they are: tap `(i, j)` of output `(y, x)`
/// is input `(y stride + i dilation - pad, x stride + j dilation - pad)`,
/// zero outside the input.
pub(crate) struct ConvCall<'a> {
    pub input: TensorRef<'a>,
    pub weight: TensorRef<'a>,
    pub out: TensorRef<'a>,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// Zeros before each axis (those after are implied by the output's size).
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
    /// An f32 bias per output channel, added before the one rounding (the
    /// CPU's kernels take it; a GPU's call has none, the op layer adds it).
    pub bias: Option<TensorRef<'a>>,
    /// A one-op activation applied to each biased f32 sum (plus the
    /// residual) before its rounding (the CPU only, as the bias).
    pub activation: Option<crate::op::UnaryOp>,
    /// Added to each biased sum before the activation (`Conv::residual`;
    /// the CPU's channels-last f32 outputs only).
    pub residual: Option<ConvResidual<'a>>,
}

/// The residual a convolution adds to each biased sum before its
/// activation.
pub(crate) enum ConvResidual<'a> {
    /// An f32 tensor of the output's dims and strides.
    Tensor(TensorRef<'a>),
    /// The values the output holds: the output is the residual's storage,
    /// handed over by its last handle (`Tensor::add_conv2d`), each sum
    /// added to the value it replaces (a product's `C += A B`).
    InOutput,
}

impl<'a> ConvResidual<'a> {
    /// The residual's tensor, unless it is the output's own values.
    pub fn tensor(&self) -> Option<&TensorRef<'a>> {
        match self {
            ConvResidual::Tensor(t) => Some(t),
            ConvResidual::InOutput => None,
        }
    }
}
