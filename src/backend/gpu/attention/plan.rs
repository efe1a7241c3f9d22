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
        + per_thread * (head4 + 1)
        + (keys * value4).div_ceil(WORKGROUP)
        + 2 * per_thread
        + owned
        + keys * (1 + owned)
        + 4;
    let once = (ROWS * head4).div_ceil(WORKGROUP) + 6 * owned + rank + 8;
    (per_tile, once)
}

impl Plan {
    /// The launch of `call` on an adapter of `facts`; `None` where a tile
    /// of its heads does not fit the workgroup memory, its partial
    /// results not one binding, or its extents not the kernel's 32 bits.
    pub fn new(facts: &AdapterFacts, call: &AttentionCall) -> Option<Plan> {
        let (qd, vd) = (call.q.layout.dims(), call.v.layout.dims());
        let r = qd.len();
        let (length, head) = (qd[r - 2], qd[r - 1]);
        let (source, value) = (vd[r - 2], vd[r - 1]);
        let batches: usize = qd[..r - 2].iter().product();
        let head4 = u32::try_from(head.div_ceil(4)).ok()?;
        let value4 = u32::try_from(value.div_ceil(16) * 4).ok()?;
        let keys = KEY_TILES
            .into_iter()
            .find(|&keys| workgroup_bytes(keys, head4, value4) <= facts.workgroup_bytes as usize)?;
        let (per_tile, once) = iterations(keys, head4, value4, r);
        let budget = ITERATIONS.checked_sub(once)? / per_tile;
        if budget == 0 {
            return None;
        }
        let tiles = length.div_ceil(ROWS);
        let key_tiles = source.div_ceil(keys as usize);
        let least = key_tiles.div_ceil(budget);
        // Enough workgroups to fill the device, as long as each has a tile.
        let fill = (facts.resident_threads / WORKGROUP).div_ceil((batches * tiles).max(1));
        let partial_bytes = |splits: usize| 4 * batches * length * splits * (value + 2);
        let mut splits = least.max(fill).min(key_tiles).max(1);
        while splits > least && partial_bytes(splits) as u64 > facts.max_storage_binding {
            splits = least.max(splits / 2);
        }
        let tiles_per_split = key_tiles.div_ceil(splits).max(1);
        let splits = key_tiles.div_ceil(tiles_per_split).max(1);
        let fits = |n: usize| u32::try_from(n).is_ok();
        let workgroups = batches.checked_mul(tiles)?.checked_mul(splits)?;
        let sound = splits == 1 || (partial_bytes(splits) as u64) <= facts.max_storage_binding;
        (sound
            && 2 * splits <= ITERATIONS
            && fits(workgroups)
            && fits(batches * length * value.max(head))
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
            keys,
            head4,
            value4,
        })
    }
}

/// The batch walk: its extents (the queries' leading axes, their heads
/// split into (key heads, queries a key head) where heads are grouped) and
/// each operand's strides over them (q, k, v, mask, output; zeros for an
/// absent mask, and for k and v along the group axis).
pub(super) struct BatchLayouts {
    pub shape: Vec<usize>,
    pub strides: [Vec<isize>; 5],
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
        });
    }
    let mut shape = q.dims()[..r - 2].to_vec();
    if g > 1 {
        // Heads h = kv * g + j: key head kv, the j-th query it serves.
        let h = r - 3;
        shape[h] = heads / g;
        shape.insert(h + 1, g);
        for (k, strides) in given.iter_mut().enumerate() {
            let s = strides[h];
            let (outer, inner) = match k {
                1 | 2 => (s, 0),
                _ => (s * g as isize, s),
            };
            strides[h] = outer;
            strides.insert(h + 1, inner);
        }
    }
    Ok(BatchLayouts {
        shape,
        strides: given,
    })
}
