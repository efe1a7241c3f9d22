//! One opened GPU: wgpu device and queue, the adapter's facts, the pipeline
//! cache and the scheduler of pending work.

use super::pipeline::PipelineCache;
use super::scheduler::Scheduler;
use crate::error::{Error, Result};
use std::sync::{Mutex, MutexGuard};

/// Options for opening a GPU device.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Store f16 packed two to a `u32` even when the adapter has SHADER_F16
    /// (the path every adapter without it takes). Also set by the environment
    /// variable `WEBTENSOR_F16=packed`.
    pub force_packed_f16: bool,
    /// Prefer a low-power adapter over a high-performance one.
    pub low_power: bool,
}

/// Facts about the adapter, kept for `Device::info`.
#[derive(Debug, Clone)]
pub(crate) struct AdapterFacts {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub native_f16: bool,
    pub max_storage_binding: u64,
    pub max_buffer_size: u64,
    pub max_workgroups_per_dim: u32,
    pub uniform_align: u32,
}

/// An opened GPU device.
pub(crate) struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub facts: AdapterFacts,
    pub pipelines: PipelineCache,
    scheduler: Mutex<Scheduler>,
}

impl GpuContext {
    /// Opens the adapter chosen by `WGPU_ADAPTER_NAME` (a case-insensitive
    /// substring of the adapter name) or else the best one wgpu offers for
    /// the backends in `WGPU_BACKEND`, with the adapter's own limits.
    ///
    /// # Errors
    /// `Error::NoAdapter` when no adapter matches or the device cannot be opened.
    pub async fn open(options: &GpuOptions) -> Result<GpuContext> {
        const OP: &str = "Device::gpu";
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pick_adapter(&instance, options).await?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let force_packed = options.force_packed_f16
            || std::env::var("WEBTENSOR_F16").is_ok_and(|v| v.eq_ignore_ascii_case("packed"));
        let native_f16 = adapter.features().contains(wgpu::Features::SHADER_F16) && !force_packed;
        let required_features = if native_f16 {
            wgpu::Features::SHADER_F16
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webtensor"),
                required_features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::NoAdapter {
                op: OP,
                reason: format!("adapter {:?} refused a device: {e}", info.name),
            })?;
        let facts = AdapterFacts {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info)
                .trim()
                .to_string(),
            native_f16,
            max_storage_binding: limits.max_storage_buffer_binding_size as u64,
            max_buffer_size: limits.max_buffer_size,
            max_workgroups_per_dim: limits.max_compute_workgroups_per_dimension,
            uniform_align: limits.min_uniform_buffer_offset_alignment,
        };
        Ok(GpuContext {
            device,
            queue,
            facts,
            pipelines: PipelineCache::default(),
            scheduler: Mutex::new(Scheduler::default()),
        })
    }

    /// The pending work of this device.
    pub fn scheduler(&self) -> MutexGuard<'_, Scheduler> {
        self.scheduler.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Submits everything pending.
    ///
    /// # Errors
    /// `Error::Gpu` when the submission fails.
    pub fn flush(&self) -> Result<()> {
        self.scheduler().flush(self, |_| {})
    }
}

async fn pick_adapter(instance: &wgpu::Instance, options: &GpuOptions) -> Result<wgpu::Adapter> {
    const OP: &str = "Device::gpu";
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let wanted = wanted.to_lowercase();
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
            .ok_or_else(|| Error::NoAdapter {
                op: OP,
                reason: format!("WGPU_ADAPTER_NAME={wanted:?} matches none of {names:?}"),
            });
    }
    let power_preference = if options.low_power {
        wgpu::PowerPreference::LowPower
    } else {
        wgpu::PowerPreference::HighPerformance
    };
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| Error::NoAdapter {
            op: OP,
            reason: e.to_string(),
        })
}
