//! Creating tensors: from host data, constants, ranges and seeded noise.

use super::Tensor;
use crate::backend::cpu::try_collect;
use crate::backend::{Input, Place, Storage, recycle};
use crate::device::Device;
use crate::dtype::{DType, Element, KernelType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::ElementwiseOp;
use crate::scalar::{Scalar, TypedScalar};
use crate::shape::Shape;
use smallvec::smallvec;
use std::sync::Arc;

impl Tensor {
    /// A contiguous tensor of `shape` holding a copy of `data`.
    ///
    /// # Errors
    /// `Error::Shape` when `data.len()` differs from the shape's element
    /// count; device errors (f64 on the GPU, size over the largest buffer).
    pub fn from_slice<T: Element>(
        data: &[T],
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        Self::from_owned("from_slice", data.to_vec(), shape.into(), device)
    }

    /// A contiguous tensor of `shape` taking `data`.
    ///
    /// # Errors
    /// As [`Tensor::from_slice`].
    pub fn from_vec<T: Element>(
        data: Vec<T>,
        shape: impl Into<Shape>,
        device: &Device,
    ) -> Result<Tensor> {
        Self::from_owned("from_vec", data, shape.into(), device)
    }

    /// [`Tensor::from_vec`] with the errors naming `op`.
    fn from_owned<T: Element>(
        op: &'static str,
        data: Vec<T>,
        shape: Shape,
        device: &Device,
    ) -> Result<Tensor> {
        shape.check(op)?;
        if shape.numel() != data.len() {
            return Err(Error::shape(
                op,
                format!(
                    "{} values cannot fill shape {shape} ({} element{})",
                    data.len(),
                    shape.numel(),
                    if shape.numel() == 1 { "" } else { "s" }
                ),
            ));
        }
        let storage = device.with_place(|place| Storage::from_vec(place, op, data))?;
        let t = Tensor::from_parts(
            recycle::cell(storage),
            Layout::contiguous(shape),
            T::DTYPE,
            device.clone(),
        );
        // Inside a step captured on a GPU the upload happens once; the step
        // gets a copy of it, which every run writes again (as each CPU run
        // makes the tensor anew): a step that changes a tensor it made
        // from host values (`arange`, `linspace`, a slice) in place starts
        // from those values on every run.
        match device.is_capturing() {
            true => t.contiguous_copy().map_err(|e| e.named(op)),
            false => Ok(t),
        }
    }

    /// The 1-D tensor of the `n` values `f(0)..f(n)`, built on the host
    /// once the shape and the device's largest storage allow them (so a
    /// GPU refuses a count past its limit before the host builds it).
    ///
    /// # Errors
    /// `Error::Shape` past the maximum element count; device errors (f64
    /// on the GPU, size over the largest buffer), naming `op`;
    /// `Error::OutOfMemory` when the host refuses the values.
    pub(crate) fn from_fn<T: Element>(
        op: &'static str,
        n: usize,
        f: impl FnMut(usize) -> T,
        device: &Device,
    ) -> Result<Tensor> {
        let shape = Shape::from([n]);
        shape.check(op)?;
        device.with_place(|place| Storage::check_fits(place, op, T::KERNEL_TYPE, n))?;
        let data = try_collect(op, n, (0..n).map(f))?;
        Self::from_owned(op, data, shape, device)
    }

    /// The f32 table of `len` values `make()` gives for `key`, on a GPU
    /// the one the device keeps (made by the first call that asks; see
    /// `backend/gpu/constants.rs`). Nothing may write it.
    ///
    /// # Errors
    /// As [`Tensor::from_vec`]; `Error::Internal` naming `op` when `make`
    /// gives another count than `len`.
    pub(crate) fn constant(
        op: &'static str,
        key: crate::backend::ConstKey,
        len: usize,
        device: &Device,
        make: impl FnOnce() -> Vec<f32>,
    ) -> Result<Tensor> {
        let storage = device.with_place(|place| Storage::constant(place, op, key, make))?;
        if storage.len() != len {
            return Err(Error::internal(
                op,
                format!("a table of {} values, {len} expected", storage.len()),
            ));
        }
        Ok(Tensor::from_parts(
            recycle::cell(storage),
            Layout::contiguous(Shape::from([len])),
            DType::F32,
            device.clone(),
        ))
    }

    /// A contiguous zero-filled tensor.
    ///
    /// # Errors
    /// Device errors (f64 on the GPU, size over the largest buffer), rank over 8.
    pub fn zeros(shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        let shape = shape.into();
        shape.check("zeros")?;
        let (stored, per_element) = dtype.stored_as();
        let len = shape.numel().saturating_mul(per_element);
        let storage =
            device.with_place(|place| Storage::alloc_host_zeros(place, "zeros", stored, len))?;
        let t = Tensor::from_parts(
            recycle::cell(storage),
            Layout::contiguous(shape),
            dtype,
            device.clone(),
        );
        if device.is_gpu() {
            // Pooled buffers hold whatever their last tensor left.
            match KernelType::of(dtype) {
                Some(k) => t.launch_into(
                    "zeros",
                    ElementwiseOp::Fill,
                    smallvec![Input::Scalar(TypedScalar::zero(k))],
                )?,
                None => t.fill_(0.0)?,
            }
        }
        Ok(t)
    }

    /// A contiguous tensor whose elements the caller overwrites before
    /// anyone reads them (unspecified on either device).
    pub(crate) fn empty_dense(
        shape: Shape,
        dtype: DType,
        device: &Device,
        op: &'static str,
    ) -> Result<Tensor> {
        shape.check(op)?;
        let storage = alloc(device, op, dtype, shape.numel())?;
        Ok(Tensor::from_parts(
            storage,
            Layout::contiguous(shape),
            dtype,
            device.clone(),
        ))
    }

    /// A contiguous tensor of ones (`true` for bool).
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn ones(shape: impl Into<Shape>, dtype: DType, device: &Device) -> Result<Tensor> {
        let one = if dtype == DType::Bool {
            Scalar::Bool(true)
        } else {
            Scalar::Int(1)
        };
        Self::full(shape, one, dtype, device).map_err(|e| e.named("ones"))
    }

    /// A contiguous tensor with every element `value`.
    ///
    /// # Errors
    /// `Error::DType` when `value` is not representable in `dtype`; as
    /// [`Tensor::zeros`].
    pub fn full(
        shape: impl Into<Shape>,
        value: impl Into<Scalar>,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let value = value.into();
        if dtype.is_complex() {
            let t = Self::empty_dense(shape.into(), dtype, device, "full")?;
            t.fill_(value)?;
            return Ok(t);
        }
        let value = TypedScalar::new("full", value, dtype)?;
        let t = Self::empty_dense(shape.into(), dtype, device, "full")?;
        match t.wide_scalar(&value)? {
            Some(wide) => t.assign(&wide)?,
            None => t.launch_into("full", ElementwiseOp::Fill, smallvec![Input::Scalar(value)])?,
        }
        Ok(t)
    }

    /// `start, start + step, ...` up to but excluding `end` (NumPy's
    /// `arange`), 1-D, with the element type of the arguments. Floats
    /// count `ceil((end - start) / step)` in their own precision, as
    /// NumPy's arange of their scalars (a quotient that underflows to 0
    /// counts 1 where `end - start` is not 0 and has the step's sign, as
    /// NumPy's); the values are `start + i * step`
    /// in f64, rounded once (PyTorch's formula: NumPy's steps by
    /// `(start + step) - start`, which can differ in the last ulp).
    ///
    /// # Errors
    /// `Error::Argument` for a zero or non-finite step or a non-finite
    /// start or end (as NumPy and PyTorch refuse them); `Error::Shape` for
    /// more elements than a tensor holds; `Error::OutOfMemory` when the
    /// host cannot hold them.
    pub fn arange<T: Element>(start: T, end: T, step: T, device: &Device) -> Result<Tensor> {
        // i64 in integers (f64 holds them only to 2^53), as NumPy's.
        let whole = |v: &T| (v as &dyn std::any::Any).downcast_ref::<i64>().copied();
        if let (Some(s), Some(e), Some(st)) = (whole(&start), whole(&end), whole(&step)) {
            return Self::arange_i64(s, e, st, device);
        }
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if st == 0.0 || !st.is_finite() {
            return Err(Error::argument(
                "arange",
                format!("step must be finite and non-zero, got {step:?}"),
            ));
        }
        if !(s.is_finite() && e.is_finite()) {
            return Err(Error::argument(
                "arange",
                format!("start and end must be finite, got {start:?} and {end:?}"),
            ));
        }
        // A float type counts in its own precision, as NumPy's arange of
        // its scalars: counted in f64, `arange(0.0f32, 0.3, 0.1)` had a
        // fourth element, equal to `end`. Each f64 operation of two values
        // of the type, rounded to it, is the type's own operation.
        let ratio = (e - s) / st;
        let (span, steps) = if T::DTYPE.is_float() {
            let round = |v: f64| T::from_f64(v).to_f64();
            let span = round(e - s);
            let steps = Some(round(span / st)).filter(|r| r.is_finite());
            (span, steps.unwrap_or(ratio))
        } else {
            (e - s, ratio)
        };
        // NumPy's rule for a quotient that underflows to 0: a span that is
        // not empty holds `start` where the step points toward `end`.
        let steps = match steps == 0.0 && span != 0.0 {
            true => f64::from(u8::from(steps.is_sign_positive())),
            false => steps.ceil().max(0.0),
        };
        // Finite ends and step: the count is a number, infinite past f64.
        if steps > crate::shape::MAX_ELEMENTS as f64 {
            return Err(Error::shape(
                "arange",
                format!(
                    "{steps:.3e} elements are more than a tensor holds ({})",
                    crate::shape::MAX_ELEMENTS
                ),
            ));
        }
        Self::from_fn(
            "arange",
            steps as usize,
            |i| T::from_f64(s + i as f64 * st),
            device,
        )
    }

    /// [`Tensor::arange`] of i64, counted and stepped in integers.
    fn arange_i64(s: i64, e: i64, st: i64, device: &Device) -> Result<Tensor> {
        if st == 0 {
            return Err(Error::argument(
                "arange",
                "step must be finite and non-zero, got 0",
            ));
        }
        let (span, step) = (i128::from(e) - i128::from(s), i128::from(st));
        let steps = match span.signum() == step.signum() {
            true => (span.abs() + step.abs() - 1) / step.abs(),
            false => 0,
        };
        let count = usize::try_from(steps).unwrap_or(usize::MAX);
        // Every value lies between s and e: no overflow.
        let value = |i: usize| (i128::from(s) + i as i128 * step) as i64;
        Self::from_fn("arange", count, value, device)
    }

    /// The `n x n` identity matrix.
    ///
    /// # Errors
    /// As [`Tensor::zeros`], naming `eye`.
    pub fn eye(n: usize, dtype: DType, device: &Device) -> Result<Tensor> {
        let t = Self::zeros([n, n], dtype, device).map_err(|e| e.named("eye"))?;
        // The diagonal is a strided view of stride n + 1.
        let diag = t.with_layout(Layout::from_parts(
            Shape::from([n]),
            smallvec::smallvec![n as isize + 1],
            0,
        ));
        diag.fill_(if dtype == DType::Bool {
            Scalar::Bool(true)
        } else {
            Scalar::Int(1)
        })?;
        Ok(t)
    }

    /// Uniform samples in `[0, 1)` of a [`Generator`](crate::Generator)
    /// seeded with `seed` (its first draw): made where the tensor lives,
    /// the same values on every device.
    ///
    /// # Errors
    /// As [`Generator::rand`](crate::Generator::rand).
    pub fn rand(
        shape: impl Into<Shape>,
        dtype: DType,
        seed: u64,
        device: &Device,
    ) -> Result<Tensor> {
        crate::Generator::new(seed).rand(shape, dtype, device)
    }

    /// Standard normal samples of a [`Generator`](crate::Generator)
    /// seeded with `seed` (its first draw): made where the tensor lives,
    /// the same values on every device.
    ///
    /// # Errors
    /// As [`Generator::randn`](crate::Generator::randn).
    pub fn randn(
        shape: impl Into<Shape>,
        dtype: DType,
        seed: u64,
        device: &Device,
    ) -> Result<Tensor> {
        crate::Generator::new(seed).randn(shape, dtype, device)
    }
}

/// [`alloc`] on the device of `lead`, an op's operand: on a GPU its own
/// (read from its storage, where the handle's device needs a load; a
/// tensor of a lost device fails here, as it would in its kernel).
///
/// # Errors
/// As [`alloc`]; `Error::DeviceLost` for a tensor of a lost GPU.
pub(crate) fn alloc_beside(
    lead: &Tensor,
    op: &'static str,
    dtype: DType,
    len: usize,
) -> Result<Arc<Storage>> {
    let Storage::Gpu(s) = &**lead.storage() else {
        return alloc(lead.device(), op, dtype, len);
    };
    let (stored, per_element) = dtype.stored_as();
    let len = len.saturating_mul(per_element);
    Ok(recycle::cell(Storage::alloc(
        Place::Gpu(&s.ctx),
        op,
        stored,
        len,
    )?))
}

/// Storage for `len` elements of `dtype` on `device`, for a destination
/// that is written in full before it is read: its values are unspecified
/// (a pooled buffer's) on either device.
///
/// # Errors
/// `UnsupportedDType` for f64 on the GPU, `TooLarge` over the largest buffer.
pub(crate) fn alloc(
    device: &Device,
    op: &'static str,
    dtype: DType,
    len: usize,
) -> Result<Arc<Storage>> {
    let (stored, per_element) = dtype.stored_as();
    let len = len.saturating_mul(per_element);
    Ok(recycle::cell(device.with_place(|place| {
        Storage::alloc(place, op, stored, len)
    })?))
}
