//! Recording elementwise ops allocates nothing on the heap once warm: a
//! command's operands and layouts are inline, and a result's storage and
//! buffer claim reuse the cells of the tensors it replaces (see
//! `src/backend/recycle.rs`). Allocations are counted on the test's own
//! thread, so tests running beside it do not count. A file's header
//! reserves no more than the file could fill.

mod common;

use common::{assert_close, noise, own_gpu, read_f32};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use webtensor::{Device, GpuOptions, Result, Tensor};

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNTED: Cell<u64> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    /// Bytes allocated less bytes freed on this thread while counting.
    static NET: Cell<i64> = const { Cell::new(0) };
}

/// Adds `bytes` to this thread's net count while `COUNTING`.
fn net(bytes: i64) {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            NET.with(|n| n.set(n.get() + bytes));
        }
    });
}

/// Counts this thread's allocations and reallocations while `COUNTING`,
/// and keeps the largest of `size` bytes.
fn note(size: usize) {
    // Constant thread locals of plain cells: reading them allocates nothing.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            COUNTED.with(|n| n.set(n.get() + 1));
            LARGEST.with(|n| n.set(n.get().max(size)));
        }
    });
}

/// The system allocator, counting as [`note`] says.
struct Counting;

// SAFETY: forwards every call to `System` unchanged; counting touches
// only constant thread locals and allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        net(layout.size() as i64);
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        net(layout.size() as i64);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        net(new_size as i64 - layout.size() as i64);
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        net(-(layout.size() as i64));
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap allocations `f` makes on this thread.
fn allocations_of(f: impl FnOnce()) -> u64 {
    COUNTED.with(|n| n.set(0));
    LARGEST.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    COUNTED.with(Cell::get)
}

/// The bytes `f` leaves allocated on this thread (allocated less freed).
fn bytes_kept_by(f: impl FnOnce()) -> i64 {
    NET.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    NET.with(Cell::get)
}

/// `steps` rounds of an out-of-place op replacing `x`, an in-place one,
/// and an out-of-place one with a scalar.
fn record(x: &mut Tensor, y: &Tensor, steps: usize) -> Result<()> {
    for _ in 0..steps {
        *x = x.add(y)?;
        x.mul_scalar_(0.5)?;
        *x = x.add_scalar(1.0)?;
    }
    Ok(())
}

#[test]
fn recording_elementwise_ops_allocates_nothing_once_warm() -> Result<()> {
    for fusion in [true, false] {
        // Everything recorded stays pending until the readback: submits
        // (wgpu's own allocations) come after the count.
        let Some(dev) = own_gpu(GpuOptions {
            flush_threshold: Some(4096),
            fusion: Some(fusion),
            ..Default::default()
        }) else {
            return Ok(());
        };
        let (a, b) = (noise(1000, 1), noise(1000, 2));
        let mut x = Tensor::from_slice(&a, [1000], &dev)?;
        let y = Tensor::from_slice(&b, [1000], &dev)?;
        // Warm: the pending list grows and the flush parks the claims.
        record(&mut x, &y, 200)?;
        dev.sync()?;
        let mut recorded = Ok(());
        let allocations = allocations_of(|| recorded = record(&mut x, &y, 100));
        recorded?;
        assert_eq!(
            allocations, 0,
            "fusion {fusion}: heap allocations while recording 300 elementwise ops"
        );
        let cpu = Device::cpu();
        let mut want = Tensor::from_slice(&a, [1000], &cpu)?;
        record(&mut want, &Tensor::from_slice(&b, [1000], &cpu)?, 300)?;
        assert_close(
            &read_f32(&x),
            &read_f32(&want),
            1e-5,
            "the recorded ops' result",
        );
    }
    Ok(())
}

/// A device that makes buffers over and over keeps no memory for those it
/// has dropped. Uploads after the idle buffers were let go, each time:
/// - read back each time (a submit each), they left the pool's record of
///   the buffers it made (which refuses a wrap of one of them as the
///   application's) 8 bytes and more a buffer: about 140 KB for 8,000;
/// - with no op between them, they left wgpu each write's staging and the
///   dropped buffer until the queue's next submit: about 600 bytes a
///   write, 4.8 MB for 8,000 (a second copy of a whole model, loading).
#[test]
fn buffers_made_and_dropped_leave_nothing_behind() -> Result<()> {
    let Some(dev) = own_gpu(GpuOptions::default()) else {
        return Ok(());
    };
    let round = |n: usize, read: bool| -> Result<()> {
        for i in 0..n {
            let t = Tensor::from_slice(&[i as f32; 4], [4], &dev)?;
            if read {
                assert_eq!(t.to_vec::<f32>()?, [i as f32; 4]);
            }
            drop(t);
            dev.release_pooled_memory();
        }
        dev.sync()
    };
    for read in [true, false] {
        round(1100, read)?;
        let mut done = Ok(());
        let kept = bytes_kept_by(|| done = round(8000, read));
        done?;
        // Without reads, up to 1,024 writes wait for the next submit, and
        // the 1,024 before them for the GPU to finish the empty submit
        // that let them go (a loaded machine's lavapipe finishes it late:
        // 1.3 MB were kept once). The leak this guards against kept 4.5 MB.
        let most = if read { 32 << 10 } else { 2 << 20 };
        assert!(
            kept < most,
            "read {read}: 8,000 buffers made and dropped kept {kept} bytes"
        );
    }
    // The pool still knows a buffer it holds when it is handed out.
    let x = Tensor::from_slice(&[1.0f32, 2.0], [2], &dev)?;
    let handed = x.gpu_buffer()?;
    let back = Tensor::from_gpu_buffer(&handed.buffer, webtensor::DType::F32, [2], 0, &dev)?;
    assert_eq!(back.to_vec::<f32>()?, [1.0, 2.0]);
    Ok(())
}

/// A GGUF header's counts of metadata entries, tensors and array values
/// reserve no more than the file could fill: a 4 MiB file claiming as many
/// entries as its bytes allow (12 each) is refused without any allocation
/// past twice its size (each entry takes 56 bytes in memory: reserving
/// them all was about 19 MB, and past isize::MAX on a 32-bit target for a
/// file of 460 MB).
#[test]
fn a_gguf_header_reserves_no_more_than_its_file_fills() {
    let len = 4 << 20;
    let mut file = b"GGUF".to_vec();
    file.extend_from_slice(&3u32.to_le_bytes());
    file.extend_from_slice(&0u64.to_le_bytes());
    file.extend_from_slice(&((len as u64 - 24) / 12).to_le_bytes());
    file.resize(len, 0);
    let mut result = None;
    allocations_of(|| result = Some(webtensor::io::Gguf::from_bytes(file)));
    assert!(result.unwrap().is_err());
    let largest = LARGEST.with(Cell::get);
    assert!(largest <= 2 * len, "{largest} bytes allocated at once");
}

/// A GGUF file of more metadata entries than any real one has (2^17 valid
/// ones of 16 bytes: a 3-byte key and a u8) is refused at its count,
/// without any allocation past twice its size: read, the entries took 56
/// bytes each in one vector, and their keys as much again.
#[test]
fn a_gguf_file_of_too_many_entries_is_refused_at_its_count() {
    let alphabet: Vec<u8> = (b'0'..=b'9')
        .chain(b'A'..=b'Z')
        .chain(b'a'..=b'z')
        .chain(*b"_.")
        .collect();
    let count = 1u64 << 17;
    let mut file = b"GGUF".to_vec();
    file.extend_from_slice(&3u32.to_le_bytes());
    file.extend_from_slice(&0u64.to_le_bytes());
    file.extend_from_slice(&count.to_le_bytes());
    for k in 0..count as usize {
        file.extend_from_slice(&3u64.to_le_bytes());
        file.extend([k / 4096, k / 64 % 64, k % 64].map(|d| alphabet[d]));
        file.extend_from_slice(&0u32.to_le_bytes()); // u8
        file.push(1);
    }
    let len = file.len();
    let mut result = None;
    allocations_of(|| result = Some(webtensor::io::Gguf::from_bytes(file)));
    let e = result.unwrap().err().unwrap().to_string();
    assert!(e.contains("65536"), "{e}");
    let largest = LARGEST.with(Cell::get);
    assert!(largest <= 2 * len, "{largest} bytes allocated at once");
}

/// A safetensors header is read entry by entry: a 4 MiB header holding one
/// long array (the safetensors crate's reader buffers it as JSON values,
/// 16 bytes per 2 of the file, before refusing it) and one of a tensor
/// whose shape is that array are refused without any allocation past
/// twice the file's size.
#[test]
fn a_safetensors_header_costs_no_more_than_its_file() {
    let zeros = vec!["0"; 2 << 20].join(",");
    for header in [
        format!("{{\"a\":[{zeros}]}}"),
        format!("{{\"a\":{{\"dtype\":\"U8\",\"shape\":[{zeros}],\"data_offsets\":[0,0]}}}}"),
    ] {
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header.as_bytes());
        let mut result = None;
        allocations_of(|| {
            result = Some(webtensor::io::from_safetensors_bytes(&file, &Device::cpu()))
        });
        assert!(result.unwrap().is_err());
        let largest = LARGEST.with(Cell::get);
        assert!(
            largest <= 2 * file.len(),
            "{largest} bytes allocated at once"
        );
    }
}

/// The CPU's variance of a broadcast view reads it in place: no tensor of
/// its squares (a 2^12 x 2^13 view of one element made a 134 MB one).
#[test]
fn a_cpu_variance_of_a_broadcast_view_allocates_no_tensor_of_squares() {
    let cpu = Device::cpu();
    let x = Tensor::full([1, 1], 3.0, webtensor::DType::F32, &cpu)
        .unwrap()
        .broadcast_to([1 << 12, 1 << 13])
        .unwrap();
    let mut var = None;
    allocations_of(|| var = Some(x.var(.., 0).unwrap()));
    assert_eq!(read_f32(&var.unwrap()), [0.0]);
    let largest = LARGEST.with(Cell::get);
    assert!(largest <= 1 << 20, "{largest} bytes allocated at once");
}
