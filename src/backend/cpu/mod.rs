//! The CPU backend: host storage and strided loops, generic over the element
//! type. It runs every op and is the reference the GPU results are tested
//! against.

mod alloc;
mod conv;
mod conv_call;
mod conv_gemm;
mod conv_nhwc;
mod conv_transpose;
mod count;
mod depthwise_nhwc;
mod depthwise_taps;
mod elementwise;
mod exp_f32;
mod fft;
mod field;
mod host_vec;
mod householder;
mod indexing;
mod jacobi;
mod kept_weights;
mod linalg;
mod matmul;
mod numeric;
mod pool;
mod profile;
mod quant;
mod quant_fused;
mod random;
mod reduce;
mod scan;
mod search;
mod sgemm;
mod softmax;
mod sort;
mod special;
mod spectral;
mod storage;
mod strided;
#[cfg(not(target_arch = "wasm32"))]
mod team;
mod threads;

pub(crate) use alloc::{try_collect, try_zeroed};
pub(crate) use conv::depthwise;
pub(crate) use conv_call::conv;
pub(crate) use conv_nhwc::channels_last_out;
pub(crate) use conv_transpose::conv_transpose;
pub(crate) use count::count;
pub(crate) use elementwise::run;
pub(crate) use fft::fft;
pub(crate) use householder::householder;
pub(crate) use indexing::{gather, scatter};
pub(crate) use jacobi::jacobi;
pub(crate) use linalg::{factor, triangular};
pub(crate) use matmul::matmul;
pub(crate) use pool::{release as release_pooled, stats as pool_stats};
pub(crate) use profile::{mark as profile_mark, profile_ops, profiled};
pub(crate) use quant::quant;
pub(crate) use random::{philox, random};
pub(crate) use reduce::reduce;
pub(crate) use scan::scan;
pub(crate) use search::search;
pub(crate) use softmax::softmax;
pub(crate) use sort::sort;
pub(crate) use spectral::spectral;
pub(crate) use storage::{CpuData, CpuStorage, with_cpu_data};
pub(crate) use threads::Threads;
