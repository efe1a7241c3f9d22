//! The per-dispatch parameter block, byte-for-byte the `Params` struct of
//! `shaders/common.wgsl`.

use crate::shape::MAX_RANK;

/// Operands per kernel: the destination and up to three inputs.
pub(crate) const MAX_OPERANDS: usize = 4;

/// Kernel parameters: shape, per-operand strides and offsets, a scalar.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    pub numel: u32,
    pub rank: u32,
    pub row_threads: u32,
    pub scalar: u32,
    pub shape: [u32; MAX_RANK],
    pub offsets: [u32; MAX_OPERANDS],
    pub strides: [[i32; MAX_RANK]; MAX_OPERANDS],
}

/// Size of [`Params`] in bytes (the uniform binding's size).
pub(crate) const PARAMS_SIZE: u64 = std::mem::size_of::<Params>() as u64;

const _: () = assert!(PARAMS_SIZE == 192, "Params must match shaders/common.wgsl");
