//! Rotary position embeddings (RoPE): each pair of a head's features
//! rotated by an angle that grows with the position, as Hugging Face's
//! Llama (`rotate_half`: the half-split layout of GPT-NeoX) or GPT-J and
//! ggml's normal mode (the interleaved layout) rotate them.
//!
//! A rotation is one elementwise chain over views (fused into one kernel on
//! a GPU): with `x` viewed as pairs `[x1, x2]` along a new axis of two, and
//! the pair reversed, `[x2, x1]`, by a flipped view of it, `x * cos +
//! flip(x) * (-sin, sin)` gives `x1 cos - x2 sin` and `x2 cos + x1 sin`, each
//! rounded as written. The signed sines are made once per [`Rope`].

use super::check_float;
use super::rope_scaling::RopeScaling;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Arg, check_devices};
use crate::tensor::Tensor;

/// Which features of a head a rotation pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Feature `i` with feature `i + d/2` (GPT-NeoX; Hugging Face's
    /// `rotate_half`, as its Llama, Qwen2 and Mistral use).
    HalfSplit,
    /// Feature `2i` with feature `2i + 1` (GPT-J; ggml's normal mode, which
    /// the Llama-architecture GGUF files are laid out for).
    Interleaved,
}

/// The tables of a rotary embedding for a run of positions: what
/// [`Tensor::rope`] rotates by.
///
/// ```
/// use webtensor::{DType, Device, Rope, RopeStyle, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let dev = Device::cpu();
/// // Positions 0..128 of 64-feature heads, Llama's theta.
/// let rope = Rope::new(0, 128, 64, 10000.0, RopeStyle::HalfSplit, &dev)?;
/// let q = Tensor::randn([1, 8, 16, 64], DType::F32, 7, &dev)?; // (batch, heads, seq, dim)
/// let rotated = q.rope(&rope.positions(0, 16)?)?;
/// assert_eq!(rotated.dims(), q.dims());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Rope {
    style: RopeStyle,
    /// `(len, 1, d/2)` (half-split) or `(len, d/2, 1)` (interleaved): the
    /// cosines, broadcast over the pair axis.
    cos: Tensor,
    /// `(len, 2, d/2)` or `(len, d/2, 2)`: `-sin` for the pair's first
    /// feature, `sin` for its second.
    sin: Tensor,
}

/// The tables' extents, not their values (printing them would read them
/// back).
impl std::fmt::Debug for Rope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rope")
            .field("style", &self.style)
            .field("positions", &self.len())
            .field("head_dim", &self.head_dim())
            .field("dtype", &self.sin.dtype())
            .field("device", &self.sin.device().to_string())
            .finish()
    }
}

impl Rope {
    /// The tables for positions `start..start + len` of heads of
    /// `head_dim` features, as Hugging Face's Llama makes them in f32:
    /// frequencies `1 / theta^(2i / head_dim)`, angles `position *
    /// frequency`, their cosines and sines. Computed on the host and
    /// placed on `device` once; slice them per step with
    /// [`Rope::positions`].
    ///
    /// # Errors
    /// `Error::Argument` naming `Rope::new` for an odd or zero `head_dim`,
    /// no positions, a `theta` that is not above 1 or past f32's range, or
    /// positions past 2^24 (where f32 no longer holds every one);
    /// `Error::OutOfMemory` naming it for tables the host cannot hold;
    /// device errors.
    pub fn new(
        start: usize,
        len: usize,
        head_dim: usize,
        theta: f64,
        style: RopeStyle,
        device: &Device,
    ) -> Result<Rope> {
        let rope = Rope::scaled(
            start,
            len,
            head_dim,
            theta,
            &RopeScaling::None,
            style,
            device,
        );
        rope.map_err(|e| match e {
            Error::Argument { .. }
            | Error::OutOfMemory {
                op: "Rope::scaled", ..
            } => e.named("Rope::new"),
            other => other,
        })
    }

    /// The tables of [`Rope::new`] with its frequencies scaled by
    /// `scaling` ([`RopeScaling::frequencies`]): a model whose context
    /// was stretched past the one it was trained on (Llama 3.1's "llama3"
    /// scaling, a GGUF file's `rope_freqs`, position interpolation).
    ///
    /// # Errors
    /// `Error::Argument` naming `Rope::scaled` as [`Rope::new`] and
    /// [`RopeScaling::frequencies`] refuse their arguments; device errors.
    #[allow(clippy::too_many_arguments)]
    pub fn scaled(
        start: usize,
        len: usize,
        head_dim: usize,
        theta: f64,
        scaling: &RopeScaling,
        style: RopeStyle,
        device: &Device,
    ) -> Result<Rope> {
        const OP: &str = "Rope::scaled";
        let inv_freq = scaling
            .frequencies(head_dim, theta)
            .map_err(|e| e.named(OP))?;
        if len == 0 || start.saturating_add(len) > 1 << 24 {
            return Err(Error::argument(
                OP,
                format!(
                    "positions {start}..{} are empty or past 2^24",
                    start.saturating_add(len)
                ),
            ));
        }
        let half = head_dim / 2;
        // At most 2^24 positions of 2^15 pairs: a failed allocation (or a
        // count past a 32-bit host's usize) is an error, not an abort.
        let entries = (len as u64).saturating_mul(half as u64);
        let entries = usize::try_from(entries).map_err(|_| Error::OutOfMemory {
            op: OP,
            requested: entries.saturating_mul(8),
            in_use: 0,
            cap: None,
        })?;
        let mut cos = crate::backend::cpu::try_with_capacity(OP, entries)?;
        let mut sin = crate::backend::cpu::try_with_capacity(OP, entries)?;
        for p in start..start + len {
            for f in &inv_freq {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let cos = Tensor::from_vec(cos, [len, half], device)?;
        let sin = Tensor::from_vec(sin, [len, half], device)?;
        Rope::from_tables(&cos, &sin, style).map_err(|e| e.named(OP))
    }

    /// The tables from the cosines and sines of each position's angles,
    /// `cos` and `sin` of shape `(len, head_dim / 2)` (a model's own
    /// frequencies: scaled, interpolated ...), on their device, in their
    /// dtype.
    ///
    /// # Errors
    /// `Error::Shape` naming `Rope::from_tables` for tables that are not
    /// 2-D of one shape; `Error::DType` for tables that are not of one
    /// float dtype; `Error::DeviceMismatch`.
    pub fn from_tables(cos: &Tensor, sin: &Tensor, style: RopeStyle) -> Result<Rope> {
        const OP: &str = "Rope::from_tables";
        check_devices(OP, cos, &[Arg::Tensor(sin)])?;
        check_float(OP, cos.dtype())?;
        if cos.dtype() != sin.dtype() {
            return Err(Error::dtype(
                OP,
                format!("cos is {} and sin {}", cos.dtype(), sin.dtype()),
            ));
        }
        if cos.rank() != 2 || cos.dims() != sin.dims() || cos.dims().contains(&0) {
            return Err(Error::shape(
                OP,
                format!(
                    "cos {:?} and sin {:?} must be one non-empty (positions, head_dim / 2) shape",
                    cos.dims(),
                    sin.dims()
                ),
            ));
        }
        let (len, half) = (cos.dims()[0], cos.dims()[1]);
        let (pair, axis) = match style {
            RopeStyle::HalfSplit => ([len, 1, half], [2, 1]),
            RopeStyle::Interleaved => ([len, half, 1], [1, 2]),
        };
        let signs =
            Tensor::from_slice(&[-1.0f32, 1.0], axis, cos.device())?.to_dtype(sin.dtype())?;
        Ok(Rope {
            style,
            cos: cos.reshape(pair)?,
            sin: sin.reshape(pair)?.mul(&signs)?,
        })
    }

    /// These tables' positions `start..start + len` (views, no copy), for
    /// one step of a model that made the tables for its whole context.
    ///
    /// # Errors
    /// `Error::Argument` naming `Rope::positions` for positions outside
    /// the tables.
    pub fn positions(&self, start: usize, len: usize) -> Result<Rope> {
        const OP: &str = "Rope::positions";
        let have = self.len();
        if len == 0 || start.checked_add(len).is_none_or(|end| end > have) {
            return Err(Error::argument(
                OP,
                format!(
                    "positions {start}..{} are empty or outside the tables' {have}",
                    start.saturating_add(len)
                ),
            ));
        }
        let cut = |t: &Tensor| t.narrow(0, start, len).map_err(|e| e.named(OP));
        Ok(Rope {
            style: self.style,
            cos: cut(&self.cos)?,
            sin: cut(&self.sin)?,
        })
    }

    /// Positions the tables hold.
    pub fn len(&self) -> usize {
        self.cos.dims()[0]
    }

    /// Always false: tables hold at least one position.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Features of a head the tables rotate.
    pub fn head_dim(&self) -> usize {
        self.sin.numel() / self.len()
    }

    /// How the tables pair features.
    pub fn style(&self) -> RopeStyle {
        self.style
    }

    /// The tables of the positions in `positions` (a 1-D integer tensor
    /// on the tables' device), gathered on the device: a step whose
    /// positions live in a tensor (a captured decoding step, see
    /// `Device::capture`) takes its tables without a host value. A
    /// negative position counts back from the end of the tables, as
    /// [`Tensor::index_select`]'s indices do (and PyTorch's `cos[positions]`
    /// indexing; its `index_select` refuses them).
    ///
    /// # Errors
    /// As [`Tensor::index_select`], naming `Rope::at`: positions that are
    /// not a 1-D integer tensor, or on another device; `Error::Shape` for
    /// no positions (tables hold at least one); `Error::Index` naming
    /// `index_select` for a position outside the tables (`-len..len`), on
    /// the CPU at once, on a GPU at the next readback.
    pub fn at(&self, positions: &Tensor) -> Result<Rope> {
        const OP: &str = "Rope::at";
        if positions.rank() != 1 || positions.numel() == 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "positions must be 1-D and not empty, got {:?}",
                    positions.dims()
                ),
            ));
        }
        let gather = |t: &Tensor| t.index_select(positions, 0).map_err(|e| e.named(OP));
        Ok(Rope {
            style: self.style,
            cos: gather(&self.cos)?,
            sin: gather(&self.sin)?,
        })
    }
}

impl Tensor {
    /// This tensor, of shape `(..., len, head_dim)` (any view, any leading
    /// axes: batch, heads), with each position's features rotated by
    /// `rope`'s tables for `len` positions (see [`Rope`]): `x1 cos - x2
    /// sin` and `x2 cos + x1 sin` for each pair, rounded as written. f16
    /// and bf16 compute in the tables' dtype and round once.
    ///
    /// # Errors
    /// `Error::Shape` naming `rope` when the last two extents are not the
    /// tables' positions and head size; `Error::DType` for a tensor that
    /// is not a float; `Error::DeviceMismatch`.
    pub fn rope(&self, rope: &Rope) -> Result<Tensor> {
        self.rope_parts(rope).map_err(|e| e.named("rope"))
    }

    /// [`Tensor::rope`], whose composed parts' errors name their own ops.
    fn rope_parts(&self, rope: &Rope) -> Result<Tensor> {
        const OP: &str = "rope";
        let _region = crate::profile_region::op(OP);
        check_float(OP, self.dtype())?;
        check_devices(OP, self, &[Arg::Tensor(&rope.cos)])?;
        let (len, dim) = (rope.len(), rope.head_dim());
        let dims = self.dims();
        if dims.len() < 2 || dims[dims.len() - 2..] != [len, dim] {
            return Err(Error::shape(
                OP,
                format!(
                    "a tensor of shape {dims:?} has no trailing (positions, head_dim) of the \
                     tables' ({len}, {dim})"
                ),
            ));
        }
        let lead = &dims[..dims.len() - 1];
        let pairs: Vec<usize> = match rope.style {
            RopeStyle::HalfSplit => lead.iter().copied().chain([2, dim / 2]).collect(),
            RopeStyle::Interleaved => lead.iter().copied().chain([dim / 2, 2]).collect(),
        };
        let flipped = match rope.style {
            RopeStyle::HalfSplit => -2,
            RopeStyle::Interleaved => -1,
        };
        let x = self.reshape(pairs)?;
        let swapped = x.flip(&[flipped])?;
        let out = x.mul(&rope.cos)?.add(&swapped.mul(&rope.sin)?)?;
        let out = if out.dtype() == self.dtype() || self.dtype() == DType::F64 {
            out
        } else {
            out.to_dtype(self.dtype())?
        };
        out.reshape(self.shape().clone())
    }
}
