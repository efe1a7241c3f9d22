//! What an attention's scores add or mask: the attention kernels' keys
//! and the self-check's verdicts on the cooperative one name it (a leaf,
//! so that `matmul_tile_choice.rs` can).

/// What the scores add or mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MaskKind {
    None,
    /// True where a query attends a key.
    Bool,
    /// Added to the scores.
    Float,
}
