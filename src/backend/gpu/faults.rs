//! Out-of-range indices on the GPU. The host cannot check an index tensor
//! that lives on the device without a round trip, so indexing kernels check
//! each index themselves: a gather writes 0 for an out-of-range index, a
//! scatter skips the write, and the first such index is recorded in a small
//! fault buffer of the device. The next readback from the device (any
//! `to_vec`, `item`, `to_device` or `sync`) copies the record along with its
//! data and returns `Error::Index` naming the op, the index and the axis,
//! then clears it. The copy is encoded only while some indexing kernel has
//! run since the last check.

use super::command::Bound;
use crate::dtype::KernelType;
use crate::error::{Error, Result};
use crate::op::IndexOp;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The pool never hands out this id: it names the fault buffer in the
/// hazard checks of fusion.
const FAULT_BUFFER_ID: u64 = u64::MAX;

/// Bytes of the record: count, op code, raw index (its low word), axis
/// extent, the raw index's high word (i64 indices), as u32 each, and
/// padding to 32 bytes.
pub(crate) const FAULT_BYTES: u64 = 32;

/// The op code a kernel records: the op in bits 0..8, the axis in bits
/// 8..16, bit 16 set for an unsigned (u32) index and bit 17 for an i64 one.
pub(crate) fn fault_code(op: IndexOp, axis: usize, index: KernelType) -> u32 {
    op as u32
        | (axis as u32) << 8
        | u32::from(index == KernelType::U32) << 16
        | u32::from(index == KernelType::I64) << 17
}

/// The fault record of one device.
pub(crate) struct Faults {
    buffer: wgpu::Buffer,
    /// True while a kernel that may record a fault has been recorded since
    /// the last readback copied the record.
    armed: AtomicBool,
    /// Copies of the record whose readback was dropped before it checked
    /// them (a future dropped mid-flight, in a browser), for the next
    /// readback that reports to check first.
    dropped: Mutex<Vec<Unread>>,
}

/// A copy of the record a dropped readback did not check.
pub(crate) enum Unread {
    /// In a staging buffer still mapping, at this byte offset.
    Mapping(wgpu::Buffer, u64),
    /// Read back.
    Read(Vec<u8>),
}

impl Faults {
    pub fn new(device: &wgpu::Device) -> Faults {
        // wgpu zero-initialises new buffers.
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("webtensor index faults"),
            size: FAULT_BYTES,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Faults {
            buffer,
            armed: AtomicBool::new(false),
            dropped: Mutex::default(),
        }
    }

    /// The record, bound for a kernel to write.
    pub fn bound(&self) -> Bound {
        Bound {
            claim: None,
            buffer: self.buffer.clone(),
            buffer_id: FAULT_BUFFER_ID,
            writes: true,
            fault_record: true,
            window: None,
        }
    }

    /// Notes that a kernel binding the record has been recorded (called
    /// under the scheduler's lock, so no readback can slip in between).
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// When armed, encodes a copy of the record to `staging` at byte `at`,
    /// then the record's clearing, and disarms; true when it did. (Cleared
    /// in the same submit: a fault of a later submit stays in the record
    /// for the next readback, whatever runs in between.)
    pub fn copy_if_armed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        staging: &wgpu::Buffer,
        at: u64,
    ) -> bool {
        if !self.armed.swap(false, Ordering::AcqRel) {
            return false;
        }
        encoder.copy_buffer_to_buffer(&self.buffer, 0, staging, at, FAULT_BYTES);
        encoder.clear_buffer(&self.buffer, 0, None);
        true
    }

    /// Keeps a copy of the record its readback was dropped before checking,
    /// for the next readback that reports.
    pub fn keep_unread(&self, unread: Unread) {
        let mut dropped = self.dropped.lock().unwrap_or_else(|e| e.into_inner());
        dropped.push(unread);
        self.arm();
    }

    /// `Error::Index` for the first fault the records kept by
    /// [`Faults::keep_unread`] hold (a copy still mapping is read once its
    /// mapping is done, which a later readback's being done means; until
    /// then it is kept, and the record stays armed).
    ///
    /// # Errors
    /// `Error::Index` for a recorded out-of-range index.
    pub fn check_unread(&self) -> Result<()> {
        let mut dropped = self.dropped.lock().unwrap_or_else(|e| e.into_inner());
        let mut first = Ok(());
        dropped.retain(|unread| {
            let record = match unread {
                Unread::Read(record) => Faults::check(record),
                Unread::Mapping(staging, at) => {
                    // An error while it is not mapped yet.
                    let Ok(view) = staging.get_mapped_range(..*at + FAULT_BYTES) else {
                        return true;
                    };
                    let record = Faults::check(&view[*at as usize..]);
                    drop(view);
                    staging.unmap();
                    record
                }
            };
            first = first.clone().and(record);
            false
        });
        if !dropped.is_empty() {
            self.arm();
        }
        first
    }

    /// `Error::Index` when `record` (the bytes a readback copied) holds a
    /// fault.
    ///
    /// # Errors
    /// `Error::Index` for a recorded out-of-range index.
    pub fn check(record: &[u8]) -> Result<()> {
        let word = |k: usize| {
            record
                .get(4 * k..4 * k + 4)
                .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        if word(0) == 0 {
            return Ok(());
        }
        let code = word(1);
        let op = IndexOp::ALL
            .get((code & 0xff) as usize)
            .map_or("indexing", |op| op.name());
        let raw = word(2);
        let index = if code & (1 << 17) != 0 {
            ((word(4) as u64) << 32 | raw as u64) as i64
        } else if code & (1 << 16) != 0 {
            i64::from(raw)
        } else {
            i64::from(raw as i32)
        };
        Err(Error::Index {
            op,
            index: crate::error::index_value(index),
            axis: ((code >> 8) & 0xff) as usize,
            size: word(3) as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_op_axis_and_signedness() {
        let code = fault_code(IndexOp::Gather, 3, KernelType::U32);
        assert_eq!(code & 0xff, 2);
        assert_eq!((code >> 8) & 0xff, 3);
        assert_ne!(code & (1 << 16), 0);
        let wide = fault_code(IndexOp::Gather, 3, KernelType::I64);
        assert_eq!(wide & (3 << 16), 1 << 17);
        assert_eq!(
            IndexOp::ALL[IndexOp::ScatterAdd as usize],
            IndexOp::ScatterAdd
        );
    }
}
