//! The GPU a [`Device`](super::Device) handle stands for, which a recovery
//! replaces.
//!
//! A handle's clones (the application's, and each tensor's) share one
//! [`GpuHandle`]. It points at the device the handle is now: a wgpu device
//! webtensor opened or was given (a [`GpuContext`]), or, once a lost GPU
//! could not be opened again, the CPU. Each `GpuContext` is one wgpu
//! device for all its life, as is each storage on it: a recovery installs
//! a new context and leaves the lost one to the tensors still on it, whose
//! every call then fails with `Error::DeviceLost` (a storage never changes
//! device, so no stale buffer can be bound on the new one).
//!
//! Ops read the pointer without a lock (one `arc_swap` load where an op
//! allocates its output); a recovery swaps it.

use crate::backend::cpu::Threads;
use crate::backend::gpu::GpuContext;
use crate::backend::gpu::Listener;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A CPU device: the threads its ops run on, and why it is the CPU when a
/// GPU was asked for.
#[derive(Clone)]
pub(crate) struct CpuDevice {
    pub reason: Option<Arc<str>>,
    pub threads: Threads,
}

/// What a GPU handle is now.
pub(crate) enum Now {
    Gpu(Arc<GpuContext>),
    /// A lost GPU none could replace: the handle's tensors are made on the
    /// CPU from then on.
    Cpu(CpuDevice),
}

/// The shared target of a GPU [`Device`](super::Device) handle.
pub(crate) struct GpuHandle {
    now: ArcSwap<Now>,
    /// The id of the first device: what the handle prints and
    /// `DeviceInfo::id` says, whatever it is now.
    id: u64,
    /// The options it was opened with (and each device that replaces it).
    pub options: crate::GpuOptions,
    /// False for the application's device (`Device::from_wgpu`), which
    /// webtensor cannot open again.
    pub reopens: bool,
    heralds: Arc<Heralds>,
    /// Set once what it is now is the CPU (read by every op that asks
    /// which kind of device it is on, without loading `now`).
    on_cpu: AtomicBool,
    /// Held by a replacement of `now` alone (never by a reader): the swap,
    /// the generation and the new device's listener go together.
    replacing: Mutex<()>,
    /// Recovers by itself once the device is lost
    /// (`GpuOptions::auto_recover`).
    auto_recover: bool,
}

/// Who hears of a handle's losses. Its devices' lost callbacks hold it,
/// not the handle (which they would keep alive, and which a browser's
/// wgpu types keep from being shared with a callback).
#[derive(Default)]
struct Heralds {
    /// Recoveries so far: the generation of the device the handle is now.
    generation: AtomicU64,
    told: Mutex<Told>,
}

/// The application's listeners (`Device::on_lost`), and the generation
/// whose loss they were told of, with its reason.
#[derive(Default)]
struct Told {
    listeners: Vec<Listener>,
    loss: Option<(u64, String)>,
}

impl GpuHandle {
    /// A handle on `ctx`, opened with `options`; `reopens`: webtensor
    /// opened it (not the application), and can open another.
    pub fn new(ctx: Arc<GpuContext>, options: crate::GpuOptions, reopens: bool) -> Arc<GpuHandle> {
        let id = ctx.id();
        let handle = Arc::new(GpuHandle {
            now: ArcSwap::from_pointee(Now::Gpu(ctx.clone())),
            id,
            reopens,
            heralds: Arc::default(),
            on_cpu: AtomicBool::new(false),
            replacing: Mutex::default(),
            auto_recover: reopens
                && options
                    .auto_recover
                    .or_else(|| crate::backend::gpu::env_flag("WEBTENSOR_AUTO_RECOVER"))
                    .unwrap_or(false),
            options,
        });
        handle.hear(&ctx, 0);
        handle
    }

    /// What the handle is now (a lock-free load; hold it briefly).
    #[inline]
    pub fn now(&self) -> arc_swap::Guard<Arc<Now>> {
        self.now.load()
    }

    /// What the handle is now, kept.
    pub fn now_full(&self) -> Arc<Now> {
        self.now.load_full()
    }

    /// True once the handle went on on the CPU (for good).
    #[inline]
    pub fn on_cpu(&self) -> bool {
        self.on_cpu.load(Ordering::Acquire)
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Holds off replacements (and the restoring of kept storages that
    /// comes with them) while the guard lives.
    pub fn hold_replacements(&self) -> MutexGuard<'_, ()> {
        self.replacing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Recoveries so far.
    pub fn generation(&self) -> u64 {
        self.heralds.generation()
    }

    /// Runs `then` (the restoring of kept storages), then makes `next`
    /// what the handle is, in place of `was` (the lost device), before any
    /// other replacement may start, unless another recovery replaced `was`
    /// first (then false, and `next` goes). The listeners hear of `next`'s
    /// loss (at once where it was lost meanwhile).
    pub fn replace(
        self: &Arc<Self>,
        was: &Arc<Now>,
        next: Arc<Now>,
        then: impl FnOnce(&Now),
    ) -> bool {
        let _replacing = self.replacing.lock().unwrap_or_else(|e| e.into_inner());
        if !Arc::ptr_eq(&self.now.load(), was) {
            return false;
        }
        // Ops that ask the kind see the CPU no later than they find it.
        if matches!(&*next, Now::Cpu(_)) {
            self.on_cpu.store(true, Ordering::Release);
        }
        // The kept storages restored before the device is seen: an op of
        // another thread on a kept tensor meets the device it lives on.
        then(&next);
        let generation = self.heralds.generation.load(Ordering::Acquire) + 1;
        self.now.store(next.clone());
        self.heralds.generation.store(generation, Ordering::Release);
        if let Now::Gpu(ctx) = &*next {
            self.hear(ctx, generation);
        }
        true
    }

    /// Has `ctx`, the device of `generation`, tell the listeners of its
    /// loss, then recover the handle when it recovers by itself: natively
    /// on a thread of its own, as wgpu tells of a loss inside whatever call
    /// met it (a submit webtensor makes holding its locks, which a listener
    /// or a recovery takes); in a browser, where the page's event loop
    /// tells of it, at once (the recovery then runs as a task of the page).
    fn hear(self: &Arc<Self>, ctx: &GpuContext, generation: u64) {
        let heralds = self.heralds.clone();
        #[cfg(not(target_arch = "wasm32"))]
        let auto = self.auto_recover.then(|| Arc::downgrade(self));
        #[cfg(target_arch = "wasm32")]
        let auto = self.auto_recover.then(|| page::keep(self));
        ctx.on_lost(Arc::new(move |reason: &str| {
            #[cfg(not(target_arch = "wasm32"))]
            {
                let (heralds, reason, auto) = (heralds.clone(), reason.to_string(), auto.clone());
                let told = std::thread::Builder::new()
                    .name("webtensor device lost".into())
                    .spawn(move || {
                        heralds.tell(generation, &reason);
                        if let Some(handle) = auto.and_then(|h| h.upgrade()) {
                            let _ = handle_device(handle).recover();
                        }
                    });
                if told.is_ok() {
                    return;
                }
            }
            heralds.tell(generation, reason);
            #[cfg(target_arch = "wasm32")]
            if let Some(id) = auto {
                page::recover(id);
            }
        }));
    }

    /// Calls `listener` at every loss of the handle's device from now on,
    /// and at once when the device it is now is lost and the listeners
    /// were told.
    pub fn listen(&self, listener: Listener) {
        self.heralds.listen(listener);
    }
}

impl Heralds {
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Calls the listeners with `reason`, the loss of `generation`'s
    /// device, unless the handle has moved on from it (a device a recovery
    /// replaced is no longer the application's concern).
    fn tell(&self, generation: u64, reason: &str) {
        let listeners = {
            let mut told = self.lock();
            if generation != self.generation() {
                return;
            }
            told.loss = Some((generation, reason.to_string()));
            told.listeners.clone()
        };
        for listener in &listeners {
            listener(reason);
        }
    }

    fn listen(&self, listener: Listener) {
        let now = {
            let mut told = self.lock();
            told.listeners.push(listener.clone());
            match &told.loss {
                Some((generation, reason)) if *generation == self.generation() => {
                    Some(reason.clone())
                }
                _ => None,
            }
        };
        if let Some(reason) = now {
            listener(&reason);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Told> {
        self.told.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The device of `handle`.
fn handle_device(handle: Arc<GpuHandle>) -> super::Device {
    super::Device {
        inner: super::Inner::Gpu(handle),
    }
}

/// The handles of the page that recover by themselves, by id (a browser's
/// wgpu types stay on the page's thread, where the lost callback runs).
#[cfg(target_arch = "wasm32")]
mod page {
    use super::GpuHandle;
    use std::cell::RefCell;
    use std::sync::{Arc, Weak};

    thread_local! {
        static HANDLES: RefCell<Vec<(u64, Weak<GpuHandle>)>> = const { RefCell::new(Vec::new()) };
    }

    /// Remembers `handle` (weakly) and returns its id.
    pub fn keep(handle: &Arc<GpuHandle>) -> u64 {
        HANDLES.with_borrow_mut(|all| {
            all.retain(|(_, h)| h.strong_count() > 0);
            if !all.iter().any(|(id, _)| *id == handle.id()) {
                all.push((handle.id(), Arc::downgrade(handle)));
            }
        });
        handle.id()
    }

    /// Recovers handle `id`, if it lives, as a task of the page.
    pub fn recover(id: u64) {
        let handle = HANDLES.with_borrow(|all| {
            all.iter()
                .find(|(i, _)| *i == id)
                .and_then(|(_, h)| h.upgrade())
        });
        if let Some(handle) = handle {
            wasm_bindgen_futures::spawn_local(async move {
                let _ = super::handle_device(handle).recover_async().await;
            });
        }
    }
}
