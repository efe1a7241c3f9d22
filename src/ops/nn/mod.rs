//! The neural-network layers beyond products, convolutions and pooling:
//! normalisations (`norms.rs`: PyTorch's `layer_norm` and `rms_norm` over
//! trailing axes and `group_norm` over groups of channels;
//! `batch_norm.rs`: `batch_norm` in inference) and the piecewise-linear
//! activations (`activations.rs`: `relu6`, `hardsigmoid`, `hardswish`).

mod activations;
mod batch_norm;
mod norms;
