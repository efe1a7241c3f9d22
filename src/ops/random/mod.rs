//! Random numbers made where the tensor lives: a counter-based generator
//! ([`Generator`], Philox4x32-10) whose draws a GPU computes in one kernel
//! that writes the tensor (nothing is uploaded) and the CPU computes by the
//! same steps, bit for bit.

mod draw;
mod generator;

pub use generator::Generator;
