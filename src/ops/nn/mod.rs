//! The neural-network layers beyond products, convolutions and pooling:
//! normalisations over trailing axes (`norms.rs`: PyTorch's `layer_norm`
//! and `rms_norm`).

mod norms;
