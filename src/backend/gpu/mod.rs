//! The GPU backend on wgpu: pooled buffers, generated WGSL kernels that read
//! every operand through (shape, strides, offset) parameters, a pipeline
//! cache and a scheduler that batches ops into few submits and fuses
//! elementwise chains.
//!
//! The map, in layers, each using only those above it (no import cycle):
//! - `kernel/`, the toolkit: compute types, buffer storage modes, the
//!   strided walk, template filling, parameter blocks, the grid, the loop
//!   budget, the pipeline cache (see its module doc);
//! - `elementwise/`, the elementwise family: programs, their parameter
//!   block and code generation;
//! - recording: `command` (what is recorded), `buffer_claim` (a tensor's
//!   buffer, taken when a flush or anything else first needs it), `fusion` (folds dead
//!   elementwise intermediates into their reader), `dispatch` (a
//!   program's pipeline, grid, parameters and bindings; bind groups),
//!   `temporaries` (buffers of a flush for outputs whose tensors are
//!   gone), `target` (what a flush borrows of the device), `scheduler/`
//!   (batches, flushes against a borrowed `Target`; its `replay` and
//!   `profiling` serve captured steps and profiles);
//! - the device: `adapter_facts` (what the adapter allows),
//!   `matmul_tile_choice` (which tile the matmul uses, fixed or autotuned;
//!   the device holds it, so it sits beside `matmul/`, not in it), `pool` (size-bucketed
//!   buffers), `constants` (tables ops upload once and the device keeps),
//!   `faults` (out-of-range index reports), `lost` (whether the
//!   device is lost, and who hears of it), `opening` (the options, the
//!   instance, the adapter's choice), `context` (opens the device, owns
//!   the pieces above), `storage` (tensor buffers, uploads and readbacks
//!   with the fault record);
//! - `capture` and `graph`: steps captured once and submitted again;
//!   `profile_log` and `profile`: what the scheduler notes while a profile
//!   is open (host times, kernels timed per dispatch), and the profile's run;
//! - `record`: how an op becomes a recorded command; `interop`: what the
//!   public interop (`src/interop/`) needs of the backend (a storage's
//!   buffer handed out, an application's buffer wrapped, a copy into a
//!   texture);
//! - the fixed-function families, each a folder with its launcher (its
//!   WGSL in the same folder under `shaders/` at the crate's root, see
//!   `shader!`): `reduce/`, `scan/`, `softmax/`, `sort/`, `matmul/`,
//!   `indexing/`, `quant/` (products with quantized weights); and
//!   `custom`, the user's WGSL kernels.
//!
//! Views over buffers larger than one storage binding (the device's
//! `max_storage_buffer_binding_size`, which `Storage::binding_limit` alone
//! reports above the backend) are handled in five places, each doing one
//! part: `layout/windows.rs` (the pure math: the aligned window over a
//! view's elements, the blocks of an index space whose operands fit
//! windows), `ops/binding_parts.rs` (ops of the fixed-function families
//! cut views spanning more than one binding into parts that each fit,
//! and join the results), `command.rs` (`Bound::rebased` binds a view in a
//! window of its buffer), `elementwise/windowed.rs` (an elementwise program
//! rebased onto windows) and `dispatch.rs` (one dispatch per block, through
//! a temporary where a program reads its own destination far away).
//!
//! Runtime checks. wgpu guards every shader by default: indices into
//! buffers and into workgroup and private arrays are clamped, every loop
//! gets a counter, workgroup memory is zeroed before each dispatch. The
//! kernels of this module are built without those guards (`PipelineSpec`'s
//! `trusted`; `GpuOptions::runtime_checks` keeps them), because each family
//! is written so that none could fire:
//! - buffers: every position a kernel computes lies in its operand's view
//!   (the op layer checks views against their storage, and `Bound::rebased`
//!   binds a window that holds the view), indexed reads resolve the index
//!   first and never read with one out of range (`indexing/`), and packed
//!   f16 and u8 stores touch only the words of their elements;
//! - arrays: private arrays (`array<i32, N>` of positions, the unravelled
//!   coordinates) are indexed by loop counters below their length, and
//!   workgroup arrays by a thread's local index or a tile coordinate below
//!   the array's extent (`reduce/`, `scan/`, `softmax/`, `sort/`,
//!   `matmul/`, `elementwise_tile.wgsl`);
//! - loops: every loop runs to a bound the parameters fix (a rank, an
//!   extent, a slice that `kernel/loop_budget.rs` keeps short);
//! - workgroup memory: each kernel writes the entries it reads before a
//!   barrier (tiles are loaded with zeros past the edges, reduction trees
//!   start from every thread's own value or the identity).
//!
//! Integer division keeps its guard (elementwise `div`, `rem` and
//! `floor_divide` divide by values the user passes), and custom kernels
//! keep every check.
//!
//! One operand on its way from an op to a kernel: a `Tensor` (handle:
//! storage, layout, dtype, device) becomes a `TensorRef` in a `Call`
//! (storage, layout broadcast to the output, kernel dtype); recorded, a
//! `TensorOperand` of a `RecordedOp` (elementwise: the storage held weakly,
//! its `BufferClaim`, a buffer taken when first needed) or a `Bound` of a `KernelCommand`
//! (other families: a buffer taken at recording, maybe a window); planned,
//! an `Operand` and a layout of a fused `Program`; encoded, a `Binding` of
//! an `Encoded` dispatch, and in the end a bind group entry.

/// The WGSL source `shaders/<path>`, built into the crate. The tree under
/// `shaders/` mirrors this one, a folder per kernel family (a launcher in
/// `src/backend/gpu/<family>/` loads `shaders/<family>/...`); a test checks
/// that every file there has a loader.
macro_rules! shader {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $path))
    };
}

mod adapter_facts;
mod attention;
mod attention_mask;
mod bind_groups;
mod buffer_claim;
mod capture;
mod command;
mod constants;
mod context;
mod conv;
mod count;
mod custom;
mod dispatch;
mod elementwise;
mod faults;
mod fft;
mod fusion;
mod graph;
mod indexing;
pub(crate) mod interop;
mod kernel;
mod linalg;
mod lost;
mod matmul;
mod matmul_tile_choice;
mod norm;
mod opening;
mod own_work;
mod pool;
mod pooling;
mod profile;
mod profile_log;
mod quant;
mod random;
mod record;
mod reduce;
mod resize;
mod scan;
mod scheduler;
mod search;
mod softmax;
mod sort;
mod storage;
mod target;
mod temporaries;
#[cfg(not(target_arch = "wasm32"))]
mod timer;
mod upload_window;

pub(crate) use attention::attention;
pub(crate) use buffer_claim::BufferClaim;
pub(crate) use constants::ConstKey;
pub(crate) use context::GpuContext;
pub(crate) use conv::{conv, conv_transpose, depthwise};
pub(crate) use count::count;
pub(crate) use custom::{custom, is_wgsl_line_break};
pub(crate) use fft::chirp as fft_chirp;
pub(crate) use fft::{fft, fft_line_limit};
pub(crate) use graph::{GpuGraph, capture_step};
pub(crate) use indexing::{gather, scatter};
pub(crate) use kernel::grid::WINDOW_TAPS;
pub(crate) use linalg::{factor, householder, jacobi, triangular};
pub(crate) use lost::Listener;
pub(crate) use matmul::K_SLICE;
pub(crate) use matmul::matmul;
pub use matmul_tile_choice::{MatmulPrecision, MatmulTile, TunedMatmul};
pub(crate) use norm::norm;
pub use opening::GpuOptions;
pub(crate) use opening::env_flag;
pub(crate) use pooling::pool;
pub(crate) use profile::profile_ops;
pub(crate) use quant::{
    MAX_ROWS as QUANT_MAX_ROWS, TILED_ROWS as QUANT_TILED_ROWS, probe_quant, quant,
};
pub(crate) use random::random;
pub(crate) use record::record_elementwise;
pub(crate) use reduce::reduce;
pub(crate) use resize::resize;
pub(crate) use scan::scan;
pub(crate) use search::search;
pub(crate) use softmax::softmax;
pub(crate) use sort::sort;
pub(crate) use storage::GpuStorage;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every file under `dir`, recursively, as paths relative to `root`.
    fn files(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    /// A shader without a loader is dead code nobody compiles or tests (a
    /// loader naming a missing file fails to build).
    #[test]
    fn every_shader_has_a_loader_beside_its_family() {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let (shaders, sources) = (crate_dir.join("shaders"), crate_dir.join("src/backend/gpu"));
        let (mut wgsl, mut rust) = (Vec::new(), Vec::new());
        files(&shaders, &shaders, &mut wgsl);
        files(&sources, &sources, &mut rust);
        assert!(!wgsl.is_empty());
        for shader in &wgsl {
            assert!(shader.ends_with(".wgsl"), "shaders/{shader} is not WGSL");
            let family = shader.split('/').next().unwrap();
            let loader = format!("shader!(\"{shader}\")");
            let loaded = rust
                .iter()
                .filter(|r| r.starts_with(&format!("{family}/")))
                .any(|r| {
                    std::fs::read_to_string(sources.join(r))
                        .unwrap()
                        .contains(&loader)
                });
            assert!(
                loaded,
                "shaders/{shader}: no {loader} in src/backend/gpu/{family}/"
            );
        }
    }
}
