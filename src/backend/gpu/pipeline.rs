//! Compiled pipelines, one per [`PipelineKey`], built on first use.
//!
//! Every kernel family binds the same way: binding 0 is its parameter block
//! (a uniform read at a dynamic offset into the batch's arena), bindings 1..
//! are storage buffers. A family describes one pipeline with a
//! [`PipelineSpec`]; the cache compiles it once per key.

use super::codegen::elementwise_source;
use super::params::params_size;
use super::program::KernelKey;
use crate::error::{Error, Result};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Everything that selects a distinct pipeline, per kernel family.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum PipelineKey {
    Elementwise(KernelKey),
    Reduce(super::reduce::ReduceKey),
    Matmul(super::matmul::MatmulKey),
    Scan(super::scan::ScanKey),
    Index(super::indexing::IndexKey),
}

/// What a pipeline is built from.
pub(crate) struct PipelineSpec {
    pub label: &'static str,
    pub source: String,
    /// The entry point to run.
    pub entry: &'static str,
    /// Size of the parameter block at binding 0.
    pub params_size: u64,
    /// Per storage binding 1, 2, ...: true when the kernel only reads it.
    pub read_only: SmallVec<[bool; 4]>,
}

/// A compute pipeline and the bind group layout its dispatches use.
pub(crate) struct Pipeline {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    /// Size of the parameter block each dispatch binds.
    pub params_size: u64,
}

/// Pipelines by key. Strides and shapes are parameters, so the cache stays
/// small: one entry per (program, dtypes, storage modes, contiguity).
#[derive(Default)]
pub(crate) struct PipelineCache {
    pipelines: Mutex<HashMap<PipelineKey, Arc<Pipeline>>>,
}

impl PipelineCache {
    /// The pipeline for `key`, built from `spec()` on first use.
    ///
    /// # Errors
    /// `Error::Gpu` when the generated shader fails to compile (a bug).
    pub fn get(
        &self,
        device: &wgpu::Device,
        key: PipelineKey,
        spec: impl FnOnce() -> Result<PipelineSpec>,
    ) -> Result<Arc<Pipeline>> {
        let mut map = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(&key) {
            return Ok(p.clone());
        }
        let pipeline = Arc::new(build(device, &spec()?).map_err(|e| match e {
            Error::Gpu { op, msg } => Error::Gpu {
                op,
                msg: format!("{key:?}: {msg}"),
            },
            other => other,
        })?);
        map.insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// The elementwise pipeline for `key`.
    ///
    /// # Errors
    /// As [`PipelineCache::get`].
    pub fn elementwise(&self, device: &wgpu::Device, key: &KernelKey) -> Result<Arc<Pipeline>> {
        self.get(device, PipelineKey::Elementwise(key.clone()), || {
            Ok(PipelineSpec {
                label: "webtensor elementwise",
                source: elementwise_source(key)?,
                entry: "main",
                params_size: params_size(key.operands.len(), key.scalars as usize),
                read_only: std::iter::once(false)
                    .chain(key.inputs.iter().map(|_| true))
                    .collect(),
            })
        })
    }

    /// Number of pipelines compiled so far.
    pub fn len(&self) -> usize {
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

fn build(device: &wgpu::Device, spec: &PipelineSpec) -> Result<Pipeline> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(spec.label),
        source: wgpu::ShaderSource::Wgsl(spec.source.as_str().into()),
    });
    let mut entries = vec![wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: wgpu::BufferSize::new(spec.params_size),
        },
        count: None,
    }];
    for (k, &read_only) in spec.read_only.iter().enumerate() {
        entries.push(wgpu::BindGroupLayoutEntry {
            binding: 1 + k as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        });
    }
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(spec.label),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(spec.label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(spec.label),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some(spec.entry),
        compilation_options: Default::default(),
        cache: None,
    });
    if let Some(err) = pop_now(scope) {
        return Err(Error::gpu("pipeline", err.to_string()));
    }
    Ok(Pipeline {
        pipeline,
        layout,
        params_size: spec.params_size,
    })
}

/// Pops an error scope without blocking: on native the result is ready at
/// once for validation errors; on the web it is not awaited (compilation
/// errors there surface as uncaptured errors).
fn pop_now(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    use futures::FutureExt;
    scope.pop().now_or_never().flatten()
}
