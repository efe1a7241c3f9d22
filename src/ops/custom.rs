//! Custom kernels: WGSL written by the user, run by webtensor over every
//! element of an output, with each tensor argument read through its own
//! (shape, strides, offset), so views stay views. The user writes a
//! function body; webtensor writes the bindings, the strided accessors,
//! the parameters and the entry point, and records the kernel in its
//! batches like its own (fusion stops at it).

use super::Arg;
use super::custom_names::check_name;
use crate::backend::{CustomCall, CustomSpec, CustomSpecs, custom};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::scalar::{Scalar, TypedScalar};
use crate::shape::Shape;
use crate::tensor::Tensor;
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// The most bytes a custom kernel's body may have: the compile of the
/// deepest expression so many bytes can write (an operand per two bytes)
/// fits the stack it runs on (`backend/gpu/kernel/deep_stack.rs`).
const MAX_CUSTOM_BODY: usize = 1 << 16;

/// A WGSL kernel of the user's, run once per element of its output (GPU
/// devices only, native and in the browser).
///
/// The body sees, for the output element being computed:
/// - each tensor argument by its name: its element at the same position
///   (arguments broadcast to the output's shape, as NumPy's ufuncs);
/// - `NAME_at(i: u32)`: element `i`, counted row-major over the argument's
///   own shape, for stencils and gathers, and `NAME_dim(d: u32) -> u32`,
///   its extent along axis `d`;
/// - each scalar argument by its name;
/// - `index: u32`, the output element's row-major position, with
///   `out_coord(d: u32) -> u32` its coordinate along axis `d` and
///   `out_dim(d: u32) -> u32` the output's extent;
/// - the output as a variable named as the output, which the body assigns.
///
/// Nothing else of the kernel's is in the body's reach: the buffers, the
/// parameters and webtensor's own functions that touch them are shadowed
/// there, so a body reads its arguments only through their views (`NAME_at`
/// past the argument's last element is zero) and writes only its output
/// element. Argument names are WGSL identifiers that are not keywords,
/// reserved words or types, nor `index`, `out_coord` or `out_dim`; they do
/// not start with `wt_` (webtensor's own) and are not another argument's
/// name followed by `_at` or `_dim` (so no input is named `out`: its
/// `out_dim` would be the body's).
///
/// Values are in their compute type: `f32` for f32, f16 and bf16 (rounded
/// once when stored), `i32`, `u32` for u32 and u8, `bool`. The functions of
/// webtensor's own kernels (`log_f32`, `tan_f32` ...) are in scope too.
/// A body holds at most WGSL's 8,192 bytes of variables a thread (the
/// output's variable among them; no value larger either) and no barrier
/// or subgroup operation: it runs only for threads that have an output
/// element.
///
/// ```
/// use webtensor::{CustomKernel, DType, Device, Tensor};
/// # fn main() -> webtensor::Result<()> {
/// let lerp = CustomKernel::new(
///     "lerp",
///     &[("a", DType::F32), ("b", DType::F32)],
///     &[("t", DType::F32)],
///     ("out", DType::F32),
///     "out = a + t * (b - a);",
/// )?;
/// if let Ok(gpu) = Device::gpu() {
///     let a = Tensor::zeros([2, 3], DType::F32, &gpu)?;
///     let b = Tensor::ones([3], DType::F32, &gpu)?; // broadcast
///     let y = lerp.call(&[&a, &b], &[0.25.into()])?;
///     assert_eq!(y.to_vec::<f32>()?, vec![0.25; 6]);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CustomKernel {
    spec: Arc<CustomSpec>,
}

impl CustomKernel {
    /// A kernel named `name` (for errors and labels) with tensor arguments
    /// `inputs` and scalar arguments `scalars` (name and dtype each),
    /// writing `output`, computed by the WGSL `body` (see the type's docs
    /// for what it sees). The WGSL is compiled on each device on first use.
    ///
    /// # Errors
    /// `Error::Argument` naming `CustomKernel::new` for a name that is not a
    /// WGSL identifier or is taken, a repeated name, an empty body, one of
    /// more than 64 KiB (65,536 bytes: the deepest expression such a body
    /// can hold compiles within the stack the compile runs on), or one
    /// whose braces do not pair up (outside comments: a body that closed
    /// its function could declare its own and reach webtensor's buffers);
    /// `Error::DType` for c64, f64 or i64 arguments (a body computes in
    /// WGSL's 32-bit and 16-bit types).
    pub fn new(
        name: &str,
        inputs: &[(&str, DType)],
        scalars: &[(&str, DType)],
        output: (&str, DType),
        body: &str,
    ) -> Result<CustomKernel> {
        const OP: &str = "CustomKernel::new";
        let all = inputs.iter().chain(scalars).chain([&output]);
        // The names so far and the accessors they define (`x_at`, `x_dim`):
        // sets, so that a kernel of many scalars is checked in linear time.
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        let mut accessors: FxHashSet<String> = FxHashSet::default();
        for &(arg, dtype) in all {
            check_name(name, arg)?;
            // An input's accessors must not take the body's own names (an
            // input `out` would define a second `out_dim`).
            if inputs.iter().any(|&(i, _)| i == arg)
                && ["index", "out_coord", "out_dim"]
                    .iter()
                    .any(|b| *b == format!("{arg}_at") || *b == format!("{arg}_dim"))
            {
                return Err(Error::argument(
                    OP,
                    format!(
                        "kernel {name:?}: an input named {arg:?} would define {arg}_dim, which the body has already"
                    ),
                ));
            }
            let (at, dim) = (format!("{arg}_at"), format!("{arg}_dim"));
            if seen.contains(arg)
                || accessors.contains(arg)
                || seen.contains(at.as_str())
                || seen.contains(dim.as_str())
            {
                return Err(Error::argument(
                    OP,
                    format!("kernel {name:?}: the name {arg:?} is taken twice"),
                ));
            }
            seen.insert(arg);
            accessors.extend([at, dim]);
            if matches!(dtype, DType::C64 | DType::F64 | DType::I64) {
                return Err(Error::dtype(
                    OP,
                    format!(
                        "kernel {name:?}: argument {arg:?} is {dtype}; custom kernels take f32, f16, bf16, i32, u32, u8 and bool"
                    ),
                ));
            }
        }
        if body.trim().is_empty() {
            return Err(Error::argument(
                OP,
                format!("kernel {name:?}: the body is empty"),
            ));
        }
        if body.len() > MAX_CUSTOM_BODY {
            return Err(Error::argument(
                OP,
                format!(
                    "kernel {name:?}: the body has {} bytes, more than the {MAX_CUSTOM_BODY} a \
                     body may have",
                    body.len()
                ),
            ));
        }
        super::custom_names::check_braces(OP, name, body)?;
        let owned = |v: &[(&str, DType)]| v.iter().map(|&(n, d)| (n.to_string(), d)).collect();
        // Kernels of equal text share one spec, so one pipeline per device,
        // which goes with the last of them.
        Ok(CustomKernel {
            spec: CustomSpecs::intern(CustomSpec {
                id: 0,
                name: name.to_string(),
                inputs: owned(inputs),
                scalars: owned(scalars),
                output: (output.0.to_string(), output.1),
                body: body.to_string(),
            }),
        })
    }

    /// Runs the kernel into a fresh tensor whose shape is the inputs'
    /// broadcast shape, on their device (a kernel without tensor arguments
    /// runs through [`CustomKernel::call_into`]).
    ///
    /// # Errors
    /// As [`CustomKernel::call_into`], and `Error::Argument` naming
    /// `CustomKernel::call` for a kernel without tensor arguments.
    pub fn call(&self, inputs: &[&Tensor], scalars: &[Scalar]) -> Result<Tensor> {
        let op = "CustomKernel::call";
        let lead = inputs.first().ok_or_else(|| {
            Error::argument(
                op,
                format!(
                    "kernel {:?} takes no tensor to tell the device; use call_into",
                    self.spec.name
                ),
            )
        })?;
        // Every argument checked before the output is made: a wrong call
        // is its own error, not the broadcast output's allocation.
        self.check_arguments(op, lead, inputs, scalars)?;
        let mut shape = Shape::scalar();
        for t in inputs {
            shape = crate::shape::broadcast_for(op, &shape, t.shape())?;
        }
        let out = Tensor::empty_dense(shape, self.spec.output.1, lead.device(), op)?;
        self.run(op, &out, inputs, scalars)?;
        Ok(out)
    }

    /// Runs the kernel writing every element of `out` (any writable view
    /// of the output dtype, on a GPU), the inputs broadcast to its shape.
    /// An input sharing `out`'s storage (`x` updated from itself) is copied
    /// first, so the result never depends on the order threads run in.
    ///
    /// # Errors
    /// `Error::Argument` naming `CustomKernel::call_into` for a CPU device
    /// or wrong argument counts, and for WGSL that does not compile (with
    /// the line of the body, on native; in a browser the readback or sync
    /// that submits the call returns `Error::Gpu` with the browser's
    /// message), natively too for a body over 8,192 bytes of variables (or
    /// making a larger value) or with a barrier or subgroup operation;
    /// `Error::DType` for dtypes other than declared or scalars the dtype
    /// cannot hold; `Error::Shape` when an input does not broadcast to
    /// `out`; `Error::DeviceMismatch`; `Error::OverlappingWrite` for a
    /// broadcast `out`; `Error::TooLarge` for an operand whose storage
    /// (not only the view) is larger than one storage binding.
    pub fn call_into(&self, out: &Tensor, inputs: &[&Tensor], scalars: &[Scalar]) -> Result<()> {
        self.run("CustomKernel::call_into", out, inputs, scalars)
    }

    fn run(
        &self,
        op: &'static str,
        out: &Tensor,
        inputs: &[&Tensor],
        scalars: &[Scalar],
    ) -> Result<()> {
        let spec = &self.spec;
        let name = &spec.name;
        let scalars = self.check_arguments(op, out, inputs, scalars)?;
        out.layout().check_writable(op)?;
        if out.dtype() != spec.output.1 {
            return Err(Error::dtype(
                op,
                format!(
                    "kernel {name:?}: {:?} is declared {}, given {}",
                    spec.output.0,
                    spec.output.1,
                    out.dtype()
                ),
            ));
        }
        let mut prepared = Vec::with_capacity(inputs.len());
        for (t, (arg, _)) in inputs.iter().zip(&spec.inputs) {
            t.layout().broadcast_to(out.shape()).map_err(|_| {
                Error::shape(op, format!("kernel {name:?}: {arg:?} of shape {} does not broadcast to the output's {}", t.shape(), out.shape()))
            })?;
            // A buffer bound for writing cannot be bound for reading in the
            // same dispatch, and threads would race on it anyway.
            prepared.push(if t.shares_storage(out) {
                t.contiguous_copy()?
            } else {
                (*t).clone()
            });
        }
        // An empty output still reaches the backend: its limits and the
        // WGSL's compilation are checked before nothing is recorded.
        let refs = prepared
            .iter()
            .map(|t| {
                let broadcast = t.layout().broadcast_to(out.shape())?;
                Ok((t.kernel_ref(broadcast)?, t.layout().clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        custom(&CustomCall {
            op,
            spec,
            inputs: refs,
            scalars,
            out: out.kernel_out(out.layout().clone())?,
        })
    }

    /// The checks of a call that need no output: a GPU `lead` (the output,
    /// or the first input), the declared counts, the inputs on `lead`'s
    /// device in their declared dtypes, and the scalars in theirs.
    fn check_arguments(
        &self,
        op: &'static str,
        lead: &Tensor,
        inputs: &[&Tensor],
        scalars: &[Scalar],
    ) -> Result<Vec<TypedScalar>> {
        let spec = &self.spec;
        let name = &spec.name;
        if !lead.device().is_gpu() {
            return Err(Error::argument(
                op,
                format!(
                    "kernel {name:?}: custom WGSL kernels run on GPU devices; {} is the CPU",
                    lead.device()
                ),
            ));
        }
        if inputs.len() != spec.inputs.len() || scalars.len() != spec.scalars.len() {
            return Err(Error::argument(
                op,
                format!(
                    "kernel {name:?} takes {} tensors and {} scalars, given {} and {}",
                    spec.inputs.len(),
                    spec.scalars.len(),
                    inputs.len(),
                    scalars.len()
                ),
            ));
        }
        let args: Vec<Arg> = inputs.iter().map(|t| Arg::Tensor(t)).collect();
        super::check_devices(op, lead, &args)?;
        for (t, (arg, want)) in inputs.iter().zip(&spec.inputs) {
            if t.dtype() != *want {
                return Err(Error::dtype(
                    op,
                    format!(
                        "kernel {name:?}: {arg:?} is declared {want}, given {}",
                        t.dtype()
                    ),
                ));
            }
        }
        scalars
            .iter()
            .zip(&spec.scalars)
            .map(|(&s, (_, d))| TypedScalar::new(op, s, *d))
            .collect()
    }
}
