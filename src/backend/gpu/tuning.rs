//! Settings that choose among kernel variants: which tile the matmul
//! uses. The device holds them (`GpuOptions`, `WEBTENSOR_MATMUL_TILE`,
//! `Device::set_matmul_tile`); the kernel families read them when they
//! record.

/// Which tile the GPU matmul uses. [`MatmulTile::Auto`] picks by the
/// product's size; the others fix one kernel (for reproducible timings,
/// and so that tests run every kernel on every size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MatmulTile {
    /// By the number of output blocks each tile gives (the default).
    #[default]
    Auto,
    /// 128 x 128 blocks, 8 x 8 outputs per thread, 256 threads.
    Large,
    /// 64 x 64 blocks, 4 x 4 outputs per thread, 256 threads.
    Medium,
    /// 32 x 32 blocks, 4 x 4 outputs per thread, 64 threads.
    Small,
}

impl MatmulTile {
    /// Parses `auto`, `large`, `medium` or `small` (the values of
    /// `WEBTENSOR_MATMUL_TILE`).
    pub fn parse(s: &str) -> Option<MatmulTile> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "auto" => MatmulTile::Auto,
            "large" => MatmulTile::Large,
            "medium" => MatmulTile::Medium,
            "small" => MatmulTile::Small,
            _ => return None,
        })
    }
}
