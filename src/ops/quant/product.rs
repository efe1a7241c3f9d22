//! Products with a quantized weight and its dequantization, on either
//! device: the backend's `quant` calls (a GPU's kernels decode the blocks
//! in registers, or into a tiled product's tiles; the CPU decodes a row at
//! a time), and on the CPU a product of many rows (a prompt's) through the
//! dequantized weight and the float matmul.

use super::QTensor;
use crate::backend::{QUANT_MAX_ROWS, QUANT_TILED_ROWS, QuantCall, quant};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Arg, check_devices};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// Activation rows up to which a product decodes the weight for each
/// group of [`QUANT_MAX_ROWS`] rows; more rows run a GPU's tiled kernel,
/// or multiply the dequantized weight on the CPU (each pass over the
/// blocks would cost what one dequantization costs).
const DECODED_ROWS: usize = 4 * QUANT_MAX_ROWS;

/// Bytes of f32 weight rows a CPU product of many rows dequantizes at a
/// time.
const DEQUANTIZED_PART: usize = 256 << 20;

impl Tensor {
    /// `self @ w.T` for a quantized matrix `w` of `n` rows of `k` (ggml's
    /// `mul_mat`, PyTorch's `F.linear` without bias): `self` is `[..., k]`
    /// (f32, f16 or bf16, any view), the result `[..., n]` of its dtype,
    /// summed in f32. On a GPU, up to 32 rows of `self` (a decoding
    /// step's) run the decoding kernel, which reads the blocks once per
    /// eight rows; more rows (a prompt's) run a register-tiled product
    /// that decodes the blocks into its tiles, never the whole weight into
    /// memory, or for f16 activations (f32 ones under
    /// `MatmulPrecision::Fast`) the cooperative-matrix product where the
    /// device has one, the decoded weight rounded to f16 as f16 products
    /// round it. On the CPU, more rows multiply the dequantized weight (in
    /// parts of 256 MiB).
    ///
    /// # Errors
    /// `Error::DType` unless `self` is f32, f16 or bf16; `Error::Shape`
    /// unless `w` is a matrix whose rows are as long as `self`'s last
    /// axis; `Error::DeviceMismatch`; device errors.
    pub fn qmatmul(&self, w: &QTensor) -> Result<Tensor> {
        const OP: &str = "qmatmul";
        let _region = crate::profile_region::op(OP);
        if !matches!(self.dtype(), DType::F32 | DType::F16 | DType::BF16) {
            return Err(Error::dtype(
                OP,
                format!("takes f32, f16 or bf16 activations, not {}", self.dtype()),
            ));
        }
        let (&[n, k], Some(&last)) = (w.dims(), self.dims().last()) else {
            return Err(Error::shape(
                OP,
                format!(
                    "multiplies [..., k] by a quantized [n, k]; got {} and {}",
                    self.shape(),
                    w.shape()
                ),
            ));
        };
        if last != k {
            return Err(Error::shape(
                OP,
                format!(
                    "the activations' last axis is {last}, the weight's rows {k} long ({} and {})",
                    self.shape(),
                    w.shape()
                ),
            ));
        }
        check_devices(OP, self, &[Arg::Tensor(w.blocks())])?;
        let mut dims = self.dims().to_vec();
        *dims.last_mut().unwrap_or(&mut 0) = n;
        let m: usize = self.dims()[..self.rank() - 1].iter().product();
        if m == 0 || n == 0 || k == 0 {
            return Tensor::zeros(Shape::from(dims), self.dtype(), self.device());
        }
        let x = self.to_dtype(DType::F32)?.contiguous()?.reshape([m, k])?;
        let y = if m > DECODED_ROWS && !self.device().is_gpu() {
            w.dequantized_product(&x)?
        } else {
            let y = Tensor::empty_dense(Shape::from([m, n]), DType::F32, self.device(), OP)?;
            // A GPU's decoding dispatch takes at most QUANT_MAX_ROWS rows,
            // a tiled one QUANT_TILED_ROWS; either fewer where their
            // activations or outputs would not fit one storage binding.
            let rows = match y.storage().binding_limit() {
                Some(limit) => {
                    let room = binding_room(limit);
                    let fit = (room / (4 * n)).min(room / (4 * k));
                    let most = match m > DECODED_ROWS {
                        true => QUANT_TILED_ROWS,
                        false => QUANT_MAX_ROWS,
                    };
                    fit.clamp(1, most)
                }
                None => m,
            };
            for start in (0..m).step_by(rows) {
                let len = rows.min(m - start);
                let x_part = x.narrow(0, start, len)?;
                let y_part = y.narrow(0, start, len)?;
                w.run(Some(&x_part), &y_part, len, self.dtype() == DType::F16)?;
            }
            y
        };
        y.reshape(Shape::from(dims))?.to_dtype(self.dtype())
    }
}

impl QTensor {
    /// The values as `dtype` (f32, f16 or bf16; f64 on the CPU), decoded as
    /// gguf-py decodes them (bit for bit in f32), contiguous.
    ///
    /// # Errors
    /// `Error::DType` for another dtype, `Error::UnsupportedDType` for f64
    /// on a GPU; device errors.
    pub fn dequantize(&self, dtype: DType) -> Result<Tensor> {
        const OP: &str = "QTensor::dequantize";
        let _region = crate::profile_region::op("dequantize");
        if !dtype.is_float() || dtype.is_complex() {
            return Err(Error::dtype(
                OP,
                format!("dequantizes to a float dtype, not {dtype}"),
            ));
        }
        // Before any block is decoded: a GPU holds no f64.
        if dtype == DType::F64 && self.device().is_gpu() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype,
                device: self.device().to_string(),
            });
        }
        let out = Tensor::empty_dense(self.shape.clone(), DType::F32, self.device(), OP)?;
        let rows = self.blocks.dims()[0];
        if out.numel() > 0 {
            self.run(None, &out.reshape([rows, out.numel() / rows])?, 0, false)?;
        }
        out.to_dtype(dtype)
    }

    /// `x @ self.T` on the CPU (`x` contiguous f32 `[m, k]`) through the
    /// dequantized weight, in parts of rows of at most
    /// [`DEQUANTIZED_PART`] bytes of f32: a product of many rows (a
    /// prompt's) never holds the whole weight in f32.
    fn dequantized_product(&self, x: &Tensor) -> Result<Tensor> {
        let (n, k) = (self.dims()[0], self.dims()[1]);
        let per_part = (DEQUANTIZED_PART / (4 * k)).max(1);
        if per_part >= n {
            return x.matmul(&self.dequantize(DType::F32)?.t());
        }
        let m = x.dims()[0];
        let y = Tensor::empty_dense(Shape::from([m, n]), DType::F32, x.device(), "qmatmul")?;
        for start in (0..n).step_by(per_part) {
            let len = per_part.min(n - start);
            let part = self.rows(start..start + len)?.dequantize(DType::F32)?;
            y.narrow(1, start, len)?.assign(&x.matmul(&part.t())?)?;
        }
        Ok(y)
    }

    /// One backend call over the weight's rows, in parts that each fit
    /// one storage binding: `x`'s `m` rows times them into `out` (a view
    /// of `m` rows of `n`; `half` where they were f16), or them decoded
    /// into `out` (`[rows, k]`).
    fn run(&self, x: Option<&Tensor>, out: &Tensor, m: usize, half: bool) -> Result<()> {
        let (rows, row_bytes) = (self.blocks.dims()[0], self.blocks.dims()[1]);
        let k = self.dims().last().copied().unwrap_or(0);
        // Weight rows per call: their blocks, and a dequantization's
        // outputs, each within one storage binding.
        let per_part = match self.blocks.storage().binding_limit() {
            Some(limit) => {
                let out_row = if x.is_some() { 4 } else { 4 * k };
                (binding_room(limit) / row_bytes.max(out_row)).max(1)
            }
            None => rows.max(1),
        };
        for start in (0..rows).step_by(per_part) {
            let len = per_part.min(rows - start);
            let w = self.blocks.narrow(0, start, len)?;
            let out_part = match x {
                Some(_) => out.narrow(1, start, len)?,
                None => out.narrow(0, start, len)?,
            };
            let x_ref = x.map(|x| x.kernel_ref(x.layout().clone())).transpose()?;
            let done = quant(&QuantCall {
                ty: self.ty,
                w: w.kernel_ref(w.layout().clone())?,
                x: x_ref,
                out: out_part.kernel_out(out_part.layout().clone())?,
                n: len,
                k,
                m,
                out_stride: out.strides()[0] as usize,
                half,
            })?;
            if !done {
                let values = self.rows_on_host(start, len)?;
                match x {
                    Some(x) => out_part.assign(&x.matmul(&values.t())?)?,
                    None => out_part.assign(&values)?,
                }
            }
        }
        Ok(())
    }

    /// Rows `start..start + len` decoded on the host and placed on the
    /// device, f32 `[len, k]`: what a GPU whose self-check dropped the
    /// type's kernels computes with (natively; a browser probes nothing).
    #[cfg(not(target_arch = "wasm32"))]
    fn rows_on_host(&self, start: usize, len: usize) -> Result<Tensor> {
        let bytes = self.blocks.narrow(0, start, len)?.to_vec::<u8>()?;
        let values = crate::quant::dequantize("qmatmul", self.ty, &bytes)?;
        let k = self.dims().last().copied().unwrap_or(0);
        Tensor::from_vec(values, [len, k], self.device())
    }

    #[cfg(target_arch = "wasm32")]
    fn rows_on_host(&self, _: usize, _: usize) -> Result<Tensor> {
        Err(Error::internal(
            "qmatmul",
            "a browser's quant kernels are never dropped",
        ))
    }
}

/// Bytes of a view that surely fit a storage binding of `limit` bytes
/// however it lies in its buffer: a window starts at most one alignment
/// (256 bytes at most) before the view.
fn binding_room(limit: u64) -> usize {
    (limit as usize).saturating_sub(256)
}
