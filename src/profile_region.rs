//! Regions of a profile: named spans of ops, opened by a public op that
//! may run as several (`conv2d`, `layer_norm` ...) or by the user
//! (`Device::profile_region`, in `profiling.rs`), noted per thread. A profile's log notes
//! the innermost region open on the recording thread with each op, and
//! [`regions`] turns those notes into [`ProfiledRegion`]s.

use crate::profile::{ProfiledKernel, ProfiledOp, ProfiledRegion};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// Profiles open in the process, on any device: while there are none, a
/// public op opens no region (its cost is this load).
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// The next region's id.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// An open region, and the ones it is open inside.
#[derive(Debug)]
pub(crate) struct Frame {
    id: u64,
    name: Cow<'static, str>,
    parent: Option<Arc<Frame>>,
}

thread_local! {
    /// The innermost region open on this thread.
    static TOP: RefCell<Option<Arc<Frame>>> = const { RefCell::new(None) };
}

/// Counts a profile as open until dropped.
pub(crate) struct ProfileOpen(());

impl ProfileOpen {
    pub fn new() -> ProfileOpen {
        OPEN.fetch_add(1, Ordering::Relaxed);
        ProfileOpen(())
    }
}

impl Drop for ProfileOpen {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Closes its region when dropped, on the thread that opened it.
#[must_use]
pub(crate) struct Region {
    /// The innermost region open before, restored when dropped (`None`
    /// where this one opened nothing).
    previous: Option<Option<Arc<Frame>>>,
    _thread: PhantomData<*const ()>,
}

impl Region {
    /// Opens a region named `name` on this thread.
    pub(crate) fn open(name: Cow<'static, str>) -> Region {
        Region::enter(new_frame(name))
    }

    /// Makes `frame` the innermost region open on this thread until dropped.
    fn enter(frame: Arc<Frame>) -> Region {
        Region {
            previous: Some(TOP.with(|top| top.borrow_mut().replace(frame))),
            _thread: PhantomData,
        }
    }

    fn none() -> Region {
        Region {
            previous: None,
            _thread: PhantomData,
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            TOP.with(|top| *top.borrow_mut() = previous);
        }
    }
}

/// A region named `name` inside the innermost one open on this thread.
fn new_frame(name: Cow<'static, str>) -> Arc<Frame> {
    Arc::new(Frame {
        id: NEXT.fetch_add(1, Ordering::Relaxed),
        name,
        parent: current(),
    })
}

/// Opens the region of the public op `name` while a profile is open
/// anywhere; otherwise nothing.
pub(crate) fn op(name: &'static str) -> Region {
    if OPEN.load(Ordering::Relaxed) == 0 {
        return Region::none();
    }
    Region::open(Cow::Borrowed(name))
}

/// A future whose every poll runs inside one region: a public async op's
/// (its ops before and after a readback are one region, whichever thread
/// polls it; the region is open only while it is polled).
pub(crate) struct InRegion<F> {
    frame: Option<Arc<Frame>>,
    inner: Pin<Box<F>>,
}

impl<F: Future> InRegion<F> {
    /// `inner` in the region of the public op `name` while a profile is
    /// open anywhere (inside the region open on this thread now).
    pub(crate) fn new(name: &'static str, inner: F) -> InRegion<F> {
        let open = OPEN.load(Ordering::Relaxed) != 0;
        InRegion {
            frame: open.then(|| new_frame(Cow::Borrowed(name))),
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for InRegion<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _entered = self.frame.clone().map_or_else(Region::none, Region::enter);
        self.inner.as_mut().poll(cx)
    }
}

/// The innermost region open on this thread, for a log noting an op.
pub(crate) fn current() -> Option<Arc<Frame>> {
    TOP.with(|top| top.borrow().clone())
}

/// What is known of a frame across a profile's ops.
#[derive(Default)]
struct Seen {
    ops: usize,
    has_children: bool,
    /// The name of its first op.
    first: &'static str,
}

/// The regions of a profile whose op `i` was recorded inside `frames[i]`;
/// sets each op's `region` and the ops each kernel computes must be set.
/// A public op's region holding only one op of its own name is left out
/// (the op says it all). A kernel's GPU time counts for the regions of the
/// last op it computes; a region's GPU time is `None` where `timed` is
/// false or one of its kernels has no time.
pub(crate) fn regions(
    frames: &[Option<Arc<Frame>>],
    ops: &mut [ProfiledOp],
    kernels: &[ProfiledKernel],
    timed: bool,
) -> Vec<ProfiledRegion> {
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    for (i, frame) in frames.iter().enumerate() {
        let mut frame = frame.as_deref();
        let mut child = false;
        while let Some(f) = frame {
            let s = seen.entry(f.id).or_default();
            s.ops += 1;
            s.has_children |= child;
            if s.first.is_empty() {
                s.first = ops[i].name;
            }
            child = true;
            frame = f.parent.as_deref();
        }
    }
    let shown = |f: &Frame| {
        let s = &seen[&f.id];
        let alone = s.ops == 1 && !s.has_children;
        let own = matches!(f.name, Cow::Borrowed(name) if name == s.first);
        !(alone && own)
    };
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut out: Vec<ProfiledRegion> = Vec::new();
    let mut untimed = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let mut chain = Vec::new();
        let mut f = frame.as_deref();
        while let Some(fr) = f {
            if shown(fr) {
                chain.push(fr);
            }
            f = fr.parent.as_deref();
        }
        let mut parent = None;
        for fr in chain.iter().rev() {
            let at = *index.entry(fr.id).or_insert_with(|| {
                out.push(ProfiledRegion {
                    name: fr.name.to_string(),
                    parent,
                    ops: i..i,
                    host: Duration::ZERO,
                    gpu: timed.then_some(Duration::ZERO),
                });
                untimed.push(false);
                out.len() - 1
            });
            out[at].ops.end = i + 1;
            out[at].host += ops[i].host;
            parent = Some(at);
        }
        ops[i].region = parent;
    }
    for k in kernels {
        let Some(mut at) = k.ops.iter().max().and_then(|&o| ops[o].region) else {
            continue;
        };
        loop {
            match k.gpu {
                Some(t) => out[at].gpu = out[at].gpu.map(|g| g + t),
                None => untimed[at] = true,
            }
            match out[at].parent {
                Some(p) => at = p,
                None => break,
            }
        }
    }
    for (region, untimed) in out.iter_mut().zip(untimed) {
        if untimed {
            region.gpu = None;
        }
    }
    out
}
