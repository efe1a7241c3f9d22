//! Operations: each validates its operands, works out the destination layout
//! and hands one [`Call`](crate::backend::Call) to the backend.

mod along_axis;
mod assign;
mod binding_parts;
pub(crate) mod complex;
mod complex_scaled;
mod conv;
mod conv1d;
mod conv_add;
mod conv_args;
mod conv_disjoint;
mod conv_tap_rows;
mod conv_transpose_phases;
mod counting;
mod custom;
mod custom_names;
mod einsum;
mod elementwise;
mod fft;
mod fft_lines;
mod indexing;
mod join;
pub mod linalg;
mod logsumexp;
mod matmul;
mod matmul_split;
mod nn;
mod norm;
mod operators;
mod pool;
mod predicates;
mod quant;
mod quantile;
mod random;
mod rearrange;
mod reduce;
mod reductions;
mod resize;
mod resize_taps;
mod sort;
mod special;
mod stft;
mod triangles;
mod windows;

pub use conv_args::{Conv, ConvPadding};
pub use counting::{Side, Unique};
pub use custom::CustomKernel;
pub use fft::{Fft, FftNorm};
pub use nn::{Activation, Attention, Rope, RopeScaling, RopeStyle, Sampling};
pub use pool::Pool;
pub use quant::QTensor;
pub use quantile::{Interpolation, Quantiles};
pub use random::Generator;
pub use rearrange::PadMode;
pub use reduce::Axes;
pub use resize::Resize;
pub use sort::{SortOrder, TopK};
pub use stft::Stft;
pub use windows::Pair;

use crate::backend::{Call, Input, Inputs, run};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::dense_layout_like;
use crate::op::ElementwiseOp;
use crate::shape::Shape;
use crate::tensor::Tensor;
use smallvec::SmallVec;

/// An operand given to an op: a tensor or a checked scalar.
pub(crate) enum Arg<'a> {
    Tensor(&'a Tensor),
    Scalar(crate::scalar::TypedScalar),
}

/// `f`'s result, an error named `op` (see `Error::named`): the body of a
/// public op composed of others, whose parts fail under their own names,
/// and which a profile shows as a region named `op`.
///
/// # Errors
/// Those of `f`.
pub(super) fn as_op<T>(op: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let _region = crate::profile_region::op(op);
    f().map_err(|e| e.named(op))
}

/// [`as_op`] of an async body (a public op that reads back midway): one
/// region over its ops on either side of the readback, errors named `op`.
///
/// # Errors
/// Those of `body`, named `op`.
pub(super) async fn as_op_async<T>(
    op: &'static str,
    body: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    crate::profile_region::InRegion::new(op, body)
        .await
        .map_err(|e| e.named(op))
}

/// `f` of a 0-d tensor taken as one line of one element along axis 0 or
/// -1, as PyTorch takes it (`cumsum(tensor(3.), 0)`), its result 0-d
/// again; `None` for a dimensioned tensor or another axis.
///
/// # Errors
/// Those of `f`.
pub(super) fn on_scalar_line(
    t: &Tensor,
    axis: isize,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Option<Result<Tensor>> {
    (t.rank() == 0 && matches!(axis, 0 | -1))
        .then(|| f(&t.reshape([1])?)?.reshape(Vec::<usize>::new()))
}

/// Checks that every tensor argument is on `device` of `lead`.
///
/// # Errors
/// `Error::DeviceMismatch` naming `op` and both devices.
pub(crate) fn check_devices(op: &'static str, lead: &Tensor, args: &[Arg]) -> Result<()> {
    for a in args {
        if let Arg::Tensor(t) = a
            && t.device() != lead.device()
        {
            return Err(Error::DeviceMismatch {
                op,
                lhs: lead.device().to_string(),
                rhs: t.device().to_string(),
            });
        }
    }
    Ok(())
}

/// Checks that two tensors share a dtype.
///
/// # Errors
/// `Error::DType` naming `op` and both dtypes.
pub(crate) fn check_same_dtype(op: &'static str, a: DType, b: DType) -> Result<()> {
    if a != b {
        return Err(Error::dtype(
            op,
            format!("operands have different dtypes ({a} and {b}); cast one with to_dtype"),
        ));
    }
    Ok(())
}

/// The shape every tensor argument broadcasts to.
///
/// # Errors
/// `Error::Shape` naming `op` when two shapes are incompatible.
fn broadcast_all(op: &'static str, args: &[Arg]) -> Result<Shape> {
    let mut shapes = args.iter().filter_map(|a| match a {
        Arg::Tensor(t) => Some(t.shape()),
        Arg::Scalar(_) => None,
    });
    let Some(first) = shapes.next() else {
        return Ok(Shape::scalar());
    };
    // Worked out only where a shape differs (most ops' operands agree).
    let mut broadcast: Option<Shape> = None;
    for shape in shapes {
        let so_far = broadcast.as_ref().unwrap_or(first);
        if shape != so_far {
            broadcast = Some(crate::shape::broadcast_for(op, so_far, shape)?);
        }
    }
    Ok(broadcast.unwrap_or_else(|| first.clone()))
}

impl Tensor {
    /// Runs `kernel` over `args` (broadcast together) into a fresh tensor of
    /// `out_dtype` on the device of the first tensor argument `lead`.
    ///
    /// # Errors
    /// Shape and device errors naming `op`; backend failures.
    pub(crate) fn launch_new(
        lead: &Tensor,
        op: &'static str,
        kernel: ElementwiseOp,
        out_dtype: DType,
        args: &[Arg],
    ) -> Result<Tensor> {
        check_devices(op, lead, args)?;
        check_real(op, out_dtype, args)?;
        let shape = broadcast_all(op, args)?;
        shape.check(op)?;
        // Each tensor's view broadcast to the output, read in place.
        let mut views: SmallVec<[crate::layout::Layout; 3]> = SmallVec::new();
        for a in args {
            if let Arg::Tensor(t) = a {
                views.push(t.layout().broadcast_to(&shape)?);
            }
        }
        let layout = {
            let layout_refs: SmallVec<[&crate::layout::Layout; 3]> = views.iter().collect();
            dense_layout_like(&shape, &layout_refs)
        };
        let storage = crate::tensor::alloc_beside(lead, op, out_dtype, shape.numel())?;
        let out = Tensor::from_parts(storage, layout, out_dtype, lead.device().clone());
        let mut views = views.into_iter();
        // Written out, not through `kernel_inputs`: its closure, inlined
        // otherwise, cost about 340 instructions an op here.
        let mut inputs = Inputs::new();
        for a in args {
            inputs.push(match a {
                Arg::Tensor(t) => {
                    Input::Tensor(t.kernel_ref(views.next().ok_or_else(missing_view)?)?)
                }
                Arg::Scalar(s) => Input::Scalar(*s),
            });
        }
        // A fresh dense tensor: writable.
        out.record_into(op, kernel, inputs)?;
        Ok(out)
    }

    /// Runs `kernel` writing into this tensor (a view of any layout), with
    /// `args` broadcast to its shape. An argument that shares storage with
    /// `self` under another layout is copied first, so the result equals
    /// NumPy's.
    ///
    /// # Errors
    /// `Error::OverlappingWrite` for a broadcast destination; shape and device
    /// errors naming `op`; backend failures.
    pub(crate) fn launch_into_args(
        &self,
        op: &'static str,
        kernel: ElementwiseOp,
        args: &[Arg],
    ) -> Result<()> {
        check_devices(op, self, args)?;
        check_real(op, self.dtype(), args)?;
        self.layout().check_writable(op)?;
        // The common case in one pass: each tensor's view broadcast to the
        // destination and read in place.
        let mut inputs = Inputs::new();
        for a in args {
            inputs.push(match a {
                Arg::Tensor(t) => {
                    let layout = self.broadcast_arg(op, t)?;
                    if self.overlaps_other(t, &layout) {
                        return self.launch_through_copies(op, kernel, args);
                    }
                    Input::Tensor(t.kernel_ref(layout)?)
                }
                Arg::Scalar(s) => Input::Scalar(*s),
            });
        }
        self.record_into(op, kernel, inputs)
    }

    /// `t`'s view broadcast to this tensor's shape.
    fn broadcast_arg(&self, op: &'static str, t: &Tensor) -> Result<crate::layout::Layout> {
        t.layout().broadcast_to(self.shape()).map_err(|_| {
            Error::shape(
                op,
                format!(
                    "cannot broadcast shape {} into the destination's shape {}",
                    t.shape(),
                    self.shape()
                ),
            )
        })
    }

    /// True when `t`, read through `layout`, shares elements with this
    /// tensor under another layout.
    fn overlaps_other(&self, t: &Tensor, layout: &crate::layout::Layout) -> bool {
        t.shares_storage(self) && layout != self.layout() && layout.may_overlap(self.layout())
    }

    /// [`Tensor::launch_into_args`] where an argument overlaps the
    /// destination under another layout: such arguments are copied first.
    fn launch_through_copies(
        &self,
        op: &'static str,
        kernel: ElementwiseOp,
        args: &[Arg],
    ) -> Result<()> {
        // Each tensor's view broadcast to the destination, read in place
        // (`Some`), or copied first where it overlaps the destination with
        // another layout (`None`, the copy in `copies`).
        let mut copies: SmallVec<[Tensor; 3]> = SmallVec::new();
        let mut views: SmallVec<[Option<crate::layout::Layout>; 3]> = SmallVec::new();
        for a in args {
            if let Arg::Tensor(t) = a {
                let layout = self.broadcast_arg(op, t)?;
                if self.overlaps_other(t, &layout) {
                    copies.push(t.with_layout(layout).contiguous_copy()?);
                    views.push(None);
                } else {
                    views.push(Some(layout));
                }
            }
        }
        let (mut views, mut copies) = (views.into_iter(), copies.iter());
        let inputs = kernel_inputs(args, |t| {
            Ok(Input::Tensor(
                match views.next().ok_or_else(missing_view)? {
                    Some(layout) => t.kernel_ref(layout)?,
                    None => {
                        let copy = copies.next().ok_or_else(missing_view)?;
                        copy.kernel_ref(copy.layout().clone())?
                    }
                },
            ))
        })?;
        self.record_into(op, kernel, inputs)
    }

    /// [`Tensor::launch_into_args`] for inputs already prepared by the caller.
    pub(crate) fn launch_into<'a>(
        &'a self,
        op: &'static str,
        kernel: ElementwiseOp,
        inputs: Inputs<'a>,
    ) -> Result<()> {
        self.layout().check_writable(op)?;
        self.record_into(op, kernel, inputs)
    }

    /// [`Tensor::launch_into`] once the destination is known writable.
    fn record_into<'a>(
        &'a self,
        op: &'static str,
        kernel: ElementwiseOp,
        inputs: Inputs<'a>,
    ) -> Result<()> {
        if self.dtype().is_complex() {
            return Err(complex::not_for_complex(op));
        }
        run(Call {
            kernel,
            out: self.kernel_out(self.layout().clone())?,
            inputs,
        })
    }
}

/// `Error::DType` naming `op` when the destination (`out`) or a tensor
/// argument is c64: complex ops take their own path (`ops/complex.rs`).
fn check_real(op: &'static str, out: DType, args: &[Arg]) -> Result<()> {
    let complex_arg = args
        .iter()
        .any(|a| matches!(a, Arg::Tensor(t) if t.dtype().is_complex()));
    if out.is_complex() || complex_arg {
        return Err(complex::not_for_complex(op));
    }
    Ok(())
}

/// The error of a prepared view missing for a tensor argument.
fn missing_view() -> Error {
    Error::internal("kernel", "fewer prepared views than tensors")
}

/// The kernel inputs of `args`: each tensor as `tensor` reads it (its
/// storage through a prepared layout), each scalar as it is.
fn kernel_inputs<'b>(
    args: &'b [Arg<'b>],
    mut tensor: impl FnMut(&'b Tensor) -> Result<Input<'b>>,
) -> Result<Inputs<'b>> {
    let mut inputs = Inputs::new();
    for a in args {
        inputs.push(match a {
            Arg::Tensor(t) => tensor(t)?,
            Arg::Scalar(s) => Input::Scalar(*s),
        });
    }
    Ok(inputs)
}
