//! What a custom kernel is, and the registry that shares one spec (so one
//! pipeline per device) among kernels made from equal text, and tells the
//! GPU backend which specs are still held so that it drops the pipelines
//! of the others.

use crate::dtype::DType;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// A custom kernel's name, arguments, output and body (the op layer's
/// `CustomKernel` holds one; the GPU backend generates its WGSL). `id` is
/// the registry's: equal specs made while one is held share it.
#[derive(Debug)]
pub(crate) struct CustomSpec {
    pub id: u64,
    pub name: String,
    pub inputs: Vec<(String, DType)>,
    pub scalars: Vec<(String, DType)>,
    pub output: (String, DType),
    pub body: String,
}

/// Specs dropped so far (a device sweeps its custom pipelines when this
/// moves).
static DROPPED: AtomicU64 = AtomicU64::new(0);

impl Drop for CustomSpec {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

impl CustomSpec {
    /// Equal text: everything but the id.
    fn same_kernel(&self, other: &CustomSpec) -> bool {
        (
            &self.name,
            &self.inputs,
            &self.scalars,
            &self.output,
            &self.body,
        ) == (
            &other.name,
            &other.inputs,
            &other.scalars,
            &other.output,
            &other.body,
        )
    }
}

/// Every spec some `CustomKernel` holds, by id.
#[derive(Default)]
struct Registry {
    next_id: u64,
    live: HashMap<u64, Weak<CustomSpec>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// The process's custom kernel specs.
pub(crate) struct CustomSpecs;

impl CustomSpecs {
    /// The held spec equal to `spec` (its id ignored), or `spec` itself
    /// under a new id. Specs no kernel holds any more are forgotten here.
    pub fn intern(mut spec: CustomSpec) -> Arc<CustomSpec> {
        let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let registry = guard.get_or_insert_with(Registry::default);
        registry.live.retain(|_, w| w.strong_count() > 0);
        if let Some(held) = registry
            .live
            .values()
            .filter_map(Weak::upgrade)
            .find(|held| held.same_kernel(&spec))
        {
            return held;
        }
        registry.next_id += 1;
        spec.id = registry.next_id;
        let spec = Arc::new(spec);
        registry.live.insert(spec.id, Arc::downgrade(&spec));
        spec
    }

    /// How many specs have been dropped so far.
    pub fn dropped() -> u64 {
        DROPPED.load(Ordering::Relaxed)
    }

    /// True while some kernel holds the spec with this id.
    pub fn is_held(id: u64) -> bool {
        let guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .as_ref()
            .and_then(|r| r.live.get(&id))
            .is_some_and(|w| w.strong_count() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(body: &str) -> CustomSpec {
        CustomSpec {
            id: 0,
            name: "k".into(),
            inputs: vec![("x".into(), DType::F32)],
            scalars: vec![],
            output: ("y".into(), DType::F32),
            body: body.into(),
        }
    }

    #[test]
    fn equal_kernels_share_a_spec_while_one_is_held() {
        let a = CustomSpecs::intern(spec("y = x;"));
        let b = CustomSpecs::intern(spec("y = x;"));
        let c = CustomSpecs::intern(spec("y = 2.0 * x;"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_ne!(a.id, c.id);
        let id = a.id;
        drop((a, b));
        assert!(!CustomSpecs::is_held(id));
        assert!(CustomSpecs::is_held(c.id));
        assert_ne!(CustomSpecs::intern(spec("y = x;")).id, id);
    }
}
