//! Compiled pipelines, one per [`KernelKey`], built on first use.

use super::codegen::elementwise_source;
use super::params::params_size;
use super::program::KernelKey;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A compute pipeline and the bind group layout its dispatches use.
pub(crate) struct Pipeline {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Pipelines by key. Strides and shapes are parameters, so the cache stays
/// small: one entry per (program, dtypes, storage modes, contiguity).
#[derive(Default)]
pub(crate) struct PipelineCache {
    pipelines: Mutex<HashMap<KernelKey, Arc<Pipeline>>>,
}

impl PipelineCache {
    /// The pipeline for `key`, compiled on first use.
    ///
    /// # Errors
    /// `Error::Gpu` when the generated shader fails to compile (a bug).
    pub fn get(&self, device: &wgpu::Device, key: &KernelKey) -> Result<Arc<Pipeline>> {
        let mut map = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(key) {
            return Ok(p.clone());
        }
        let pipeline = Arc::new(build(device, key)?);
        map.insert(key.clone(), pipeline.clone());
        Ok(pipeline)
    }

    /// Number of pipelines compiled so far.
    pub fn len(&self) -> usize {
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

fn build(device: &wgpu::Device, key: &KernelKey) -> Result<Pipeline> {
    let source = elementwise_source(key);
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("webtensor elementwise"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let mut entries = vec![
        wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: wgpu::BufferSize::new(params_size(
                    key.operands.len(),
                    key.scalars as usize,
                )),
            },
            count: None,
        },
        storage(1, false),
    ];
    for k in 0..key.inputs.len() {
        entries.push(storage(2 + k as u32, true));
    }
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("webtensor elementwise"),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("webtensor elementwise"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("webtensor elementwise"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    if let Some(err) = pop_now(scope) {
        return Err(Error::gpu("pipeline", format!("{key:?}: {err}")));
    }
    Ok(Pipeline { pipeline, layout })
}

/// Pops an error scope without blocking: on native the result is ready at
/// once for validation errors; on the web it is not awaited (compilation
/// errors there surface as uncaptured errors).
fn pop_now(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    use futures::FutureExt;
    scope.pop().now_or_never().flatten()
}
