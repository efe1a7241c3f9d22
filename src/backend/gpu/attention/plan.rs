//! How an attention runs on the flash kernel (pure arithmetic over the
//! call's shapes and the adapter's limits): the tile of keys that the
//! workgroup memory holds, and the splits of the keys that keep each
//! workgroup's loops within the loop budget and give the device enough
//! workgroups; and the batch walk's shape and strides.

use crate::backend::AttentionCall;
use crate::backend::gpu::adapter_facts::AdapterFacts;
use crate::backend::gpu::kernel::loop_budget::ITERATIONS;
use crate::error::{Error, Result};

/// Queries a workgroup takes.
pub(super) const ROWS: usize = 16;

/// Threads a workgroup has.
const WORKGROUP: usize = 64;

/// The tile sizes tried, largest first.
const KEY_TILES: [u32; 3] = [32, 16, 8];

/// One attention's launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    pub length: usize,
    pub source: usize,
    pub head: usize,
    pub value: usize,
    /// Batches (leading axes and heads), query tiles a batch.
    pub batches: usize,
    pub tiles: usize,
    /// Splits of the keys, key tiles a split.
    pub splits: usize,
    pub tiles_per_split: usize,
    /// (batch, query tile) pairs a dispatch takes: their partial results
    /// fit one binding.
    pub pairs_per_chunk: usize,
    /// Keys a tile; quads of a head and of a value row (a multiple of 4).
    pub keys: u32,
    pub head4: u32,
    pub value4: u32,
}

/// Bytes of workgroup memory flash.wgsl declares for a tile of `keys`.
pub(super) fn workgroup_bytes(keys: u32, head4: u32, value4: u32) -> usize {
    let (keys, head4, value4) = (keys as usize, head4 as usize, value4 as usize);
    16 * (ROWS * (head4 + 1) + keys * (head4.max(value4) + 1))
        + 4 * ROWS * (keys + 1)
        + 4 * 3 * WORKGROUP
}

/// Loop iterations one thread of flash.wgsl runs per tile of keys, and
/// once per split (counted generously: every loop's trips).
fn iterations(keys: u32, head4: u32, value4: u32, rank: usize) -> (usize, usize) {
    let (keys, head4, value4) = (keys as usize, head4 as usize, value4 as usize);
    let (per_thread, owned) = (keys / 4, value4 / 4);
    let per_tile = (keys * head4).div_ceil(WORKGROUP)
        + head4 * (per_thread + 1)
        + 2 * per_thread
        + (keys * value4).div_ceil(WORKGROUP)
        + 2 * per_thread
        + owned
        + keys * (1 + owned)
        + 4;
    let once = (ROWS * head4).div_ceil(WORKGROUP) + 8 * owned + rank + 8;
    (per_tile, once)
}

/// What a launch plans by: the adapter's workgroup memory (bytes), the
/// threads it keeps resident, its largest storage binding (bytes).
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub workgroup_bytes: usize,
    pub resident_threads: usize,
    pub max_binding: u64,
}

impl Limits {
    pub fn of(facts: &AdapterFacts) -> Limits {
        Limits {
            workgroup_bytes: facts.workgroup_bytes as usize,
            resident_threads: facts.resident_threads,
            max_binding: facts.max_storage_binding,
        }
    }
}

/// An attention's extents: batches, query rows a batch, keys, the head's
/// and the value's, and the operands' rank.
#[derive(Debug, Clone, Copy)]
pub(super) struct Extents {
    pub batches: usize,
    pub length: usize,
    pub source: usize,
    pub head: usize,
    pub value: usize,
    pub rank: usize,
}

impl Extents {
    /// The extents of `call`, a batch a key head: its rows are the
    /// queries of the query heads it serves.
    pub fn of(call: &AttentionCall) -> Extents {
        let (qd, vd) = (call.q.layout.dims(), call.v.layout.dims());
        let r = qd.len();
        let g = call.groups.max(1);
        Extents {
            batches: qd[..r - 2].iter().product::<usize>() / g,
            length: g * qd[r - 2],
            source: vd[r - 2],
            head: qd[r - 1],
            value: vd[r - 1],
            rank: r,
        }
    }
}

impl Plan {
    /// The launch of an attention of `extents` within `limits`; `None`
    /// where a tile of its heads does not fit the workgroup memory, its
    /// partial results not one binding, or its extents not the kernel's
    /// 32 bits.
    pub fn new(extents: Extents, limits: Limits) -> Option<Plan> {
        let Extents {
            batches,
            length,
            source,
            head,
            value,
            rank: r,
        } = extents;
        let head4 = u32::try_from(head.div_ceil(4)).ok()?;
        let value4 = u32::try_from(value.div_ceil(16) * 4).ok()?;
        let keys = KEY_TILES
            .into_iter()
            .find(|&keys| workgroup_bytes(keys, head4, value4) <= limits.workgroup_bytes)?;
        let (per_tile, once) = iterations(keys, head4, value4, r);
        let budget = ITERATIONS.checked_sub(once)? / per_tile;
        if budget == 0 {
            return None;
        }
        let tiles = length.div_ceil(ROWS);
        let pairs = batches.checked_mul(tiles)?;
        let key_tiles = source.div_ceil(keys as usize);
        let least = key_tiles.div_ceil(budget);
        // More splits only where the (batch, query tile) pairs leave the
        // device half empty, as long as each split has a tile.
        let fill = (limits.resident_threads / WORKGROUP / 2 / pairs.max(1)).max(1);
        // A pair's partial results: 16 rows of m, l and the value row.
        let pair_bytes = |splits: usize| (4 * ROWS * splits * (value + 2)) as u64;
        let mut splits = least.max(fill).min(key_tiles).max(1);
        while splits > least && pair_bytes(splits) > limits.max_binding {
            splits = least.max(splits / 2);
        }
        let tiles_per_split = key_tiles.div_ceil(splits).max(1);
        let splits = key_tiles.div_ceil(tiles_per_split).max(1);
        // Pairs a dispatch takes: all without splits, else as many as
        // their partial results fit one binding.
        let pairs_per_chunk = match splits {
            1 => pairs.max(1),
            _ => usize::try_from(limits.max_binding / pair_bytes(splits)).ok()?,
        };
        let fits = |n: usize| u32::try_from(n).is_ok();
        (pairs_per_chunk > 0
            && 2 * splits <= ITERATIONS
            && fits(pairs.checked_mul(splits)?)
            && fits(batches.checked_mul(length)?.checked_mul(value.max(head))?)
            && fits(source))
        .then_some(Plan {
            length,
            source,
            head,
            value,
            batches,
            tiles,
            splits,
            tiles_per_split,
            pairs_per_chunk,
            keys,
            head4,
            value4,
        })
    }
}

/// The batch walk: its extents (the queries' leading axes and their key
/// heads) and each operand's strides over them (q, k, v, mask, output;
/// zeros for an absent mask); and the steps between the query heads a key
/// head serves, which a workgroup's rows run over with the queries (q,
/// mask, output).
pub(super) struct BatchLayouts {
    pub shape: Vec<usize>,
    pub strides: [Vec<isize>; 5],
    pub group_steps: [isize; 3],
}

/// The batch walk of `call`.
///
/// # Errors
/// `Error::Internal` for operands whose leading axes are not the queries'
/// (the op layer broadcasts them).
pub(super) fn batch_layouts(call: &AttentionCall) -> Result<BatchLayouts> {
    let q = &call.q.layout;
    let r = q.rank();
    let lead = |l: &crate::layout::Layout| l.strides()[..r - 2].to_vec();
    let zeros = vec![0; r - 2];
    let mask = call.mask.as_ref().map_or(zeros, |m| lead(&m.layout));
    let mut given = [
        lead(q),
        lead(&call.k.layout),
        lead(&call.v.layout),
        mask,
        lead(&call.out.layout),
    ];
    let heads = if r >= 3 { q.dims()[r - 3] } else { 1 };
    let g = call.groups.max(1);
    let lead_match = [&call.k, &call.v].iter().all(|t| {
        let d = t.layout.dims();
        d.len() == r
            && d[..r.saturating_sub(3)] == q.dims()[..r.saturating_sub(3)]
            && (r < 3 || d[r - 3] * g == heads)
    });
    if !lead_match || !heads.is_multiple_of(g) {
        return Err(Error::internal(
            "sdpa",
            "the attention kernel got keys or values whose leading axes are not the queries'",
        ));
    }
    if r == 2 {
        return Ok(BatchLayouts {
            shape: vec![1],
            strides: [vec![0], vec![0], vec![0], vec![0], vec![0]],
            group_steps: [0; 3],
        });
    }
    // Heads h = kv * g + j: key head kv, the j-th query head it serves.
    let h = r - 3;
    let mut shape = q.dims()[..r - 2].to_vec();
    shape[h] = heads / g;
    let mut group_steps = [0; 3];
    for (k, strides) in given.iter_mut().enumerate() {
        let s = strides[h];
        if let Some(slot) = [0, 3, 4].iter().position(|&o| o == k) {
            group_steps[slot] = s;
            strides[h] = s * g as isize;
        }
    }
    Ok(BatchLayouts {
        shape,
        strides: given,
        group_steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAVAPIPE: Limits = Limits {
        workgroup_bytes: 32 << 10,
        resident_threads: 2048,
        max_binding: 128 << 20,
    };

    fn extents(batches: usize, length: usize, source: usize, head: usize) -> Extents {
        Extents {
            batches,
            length,
            source,
            head,
            value: head,
            rank: 4,
        }
    }

    #[test]
    fn a_tile_of_keys_is_what_the_workgroup_memory_holds() {
        let keys = |head, bytes| {
            let limits = Limits {
                workgroup_bytes: bytes,
                ..LAVAPIPE
            };
            Plan::new(extents(64, 64, 64, head), limits).map(|p| p.keys)
        };
        assert_eq!(keys(128, 48 << 10), Some(32));
        assert_eq!(keys(128, 32 << 10), Some(32));
        assert_eq!(keys(128, 16 << 10), Some(8));
        assert_eq!(keys(256, 32 << 10), Some(8));
        assert_eq!(keys(256, 16 << 10), None);
        assert_eq!(keys(64, 16 << 10), Some(32));
        for (keys, head4, value4) in [(32, 32, 32), (8, 64, 64), (16, 2, 4)] {
            assert!(workgroup_bytes(keys, head4, value4) > 0);
        }
    }

    #[test]
    fn keys_split_for_the_loop_budget_and_to_fill_the_device() {
        // Enough query tiles: one split while a workgroup's tiles fit the
        // budget; more when they do not, each within it.
        let p = Plan::new(extents(32, 1024, 32 * 8, 128), LAVAPIPE).unwrap();
        assert_eq!((p.splits, p.tiles_per_split), (1, 8));
        let long = Plan::new(extents(4, 1024, 32 * 100, 128), LAVAPIPE).unwrap();
        assert!(long.splits > 1 && long.splits * long.tiles_per_split >= 100);
        let (per_tile, once) = iterations(long.keys, long.head4, long.value4, 4);
        assert!(once + long.tiles_per_split * per_tile <= ITERATIONS);
        // A decoding step: splits until the device is half full (16 of
        // 32 workgroups).
        let step = Plan::new(extents(4, 1, 32 * 20, 64), LAVAPIPE).unwrap();
        assert_eq!((step.tiles, step.splits, step.tiles_per_split), (1, 4, 5));
        let wide = Plan::new(extents(16, 1, 32 * 20, 64), LAVAPIPE).unwrap();
        assert_eq!(wide.splits, 1);
        // Never more splits than key tiles.
        let short = Plan::new(extents(1, 1, 40, 64), LAVAPIPE).unwrap();
        assert_eq!((short.splits, short.tiles_per_split), (2, 1));
        // Partial results past one binding: fewer splits, or none.
        let tight = Limits {
            max_binding: 20 << 10,
            ..LAVAPIPE
        };
        let p = Plan::new(extents(1, 16, 32 * 20, 64), tight).unwrap();
        assert_eq!((p.splits, p.tiles_per_split, p.pairs_per_chunk), (4, 5, 1));
        assert!(Plan::new(extents(1, 4000, 4000, 64), tight).is_none());
        // Pairs in chunks whose partial results fit one binding.
        let limits = Limits {
            max_binding: 100 << 10,
            ..LAVAPIPE
        };
        let p = Plan::new(extents(8, 64, 32 * 50, 64), limits).unwrap();
        assert_eq!((p.splits, p.pairs_per_chunk), (3, 8));
        assert_eq!(
            Plan::new(extents(8, 64, 64, 64), limits)
                .unwrap()
                .pairs_per_chunk,
            32
        );
    }
}
