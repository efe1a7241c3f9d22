//! The toolkit every kernel family builds on; it depends on no family, on
//! nothing that records or submits, and on nothing of the open device.
//!
//! - `wgsl_type`: the compute types and their literals;
//! - `buffer`: how each dtype lives in a buffer (plain, native or packed
//!   f16, bytes packed in words) and the WGSL declaring, loading and
//!   storing it;
//! - `prelude`: what every shader starts with (`enable f16;`, math.wgsl);
//!   `library`: math.wgsl cut to what one kernel uses, before it compiles;
//! - `strided`: the one row-major walk from an index to strided positions;
//! - `template`: fills a shader's `{{SLOT}}`s, failing on a missing or
//!   unknown one;
//! - `params_block`: parameter blocks as Pod structs, checked against
//!   naga's layout of the WGSL `Params`;
//! - `grid`: the dispatch grid; `loop_budget`: how long one invocation may
//!   loop;
//! - `pipeline`: pipelines compiled once per key, a cache that names no
//!   family; `deep_stack`: the thread an application's WGSL compiles on.

pub(crate) mod buffer;
pub(crate) mod deep_stack;
pub(crate) mod grid;
pub(crate) mod library;
pub(crate) mod loop_budget;
pub(crate) mod params_block;
pub(crate) mod pipeline;
pub(crate) mod prelude;
pub(crate) mod rows;
pub(crate) mod strided;
pub(crate) mod template;
pub(crate) mod wgsl_type;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod workgroup_memory;
