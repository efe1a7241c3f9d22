//! Gray-Scott reaction-diffusion on webtensor tensors, shared by the
//! desktop and web examples. Two chemicals `u` and `v` on a square grid:
//!
//! ```text
//! u += Du * lap(u) - u v^2 + F (1 - u)
//! v += Dv * lap(v) + u v^2 - (F + k) v
//! ```
//!
//! The five-point Laplacian reads the four neighbours as shifted strided
//! views of the grid (no copies), and each update is written through the
//! interior view in place; the border stays at its start values. The
//! examples step through a captured step ([`GrayScott::step_captured`]).

use webtensor::{DType, Device, Graph, Result, Tensor, s};

/// Diffusion rates and the feed and kill rates ("coral" growth).
const DU: f32 = 0.16;
const DV: f32 = 0.08;
const FEED: f32 = 0.037;
const KILL: f32 = 0.06;

/// The two fields of a Gray-Scott system.
pub struct GrayScott {
    u: Tensor,
    v: Tensor,
    /// Steps taken so far.
    pub steps: usize,
    /// The steps taken at the last checkpoint.
    pub checkpointed: usize,
    /// One step captured, once [`GrayScott::step_captured`] has run.
    graph: Option<Graph>,
}

/// One step of the system `u`, `v`, written in place.
fn step(u: &Tensor, v: &Tensor) -> Result<()> {
    let uc = u.slice(s![1..-1, 1..-1])?;
    let vc = v.slice(s![1..-1, 1..-1])?;
    let uvv = uc.mul(&vc)?.mul(&vc)?;
    let du = laplacian(u)?
        .mul_scalar(DU)?
        .sub(&uvv)?
        .add(&uc.mul_scalar(-FEED)?.add_scalar(FEED)?)?;
    let dv = laplacian(v)?
        .mul_scalar(DV)?
        .add(&uvv)?
        .sub(&vc.mul_scalar(FEED + KILL)?)?;
    uc.add_(&du)?;
    vc.add_(&dv)
}

impl GrayScott {
    /// A `side x side` grid at rest (`u = 1`, `v = 0`) with a few seeded
    /// patches of `v` (and a little noise in them) to grow from.
    ///
    /// # Errors
    /// As the tensor ops it runs (a device error, out of memory).
    pub fn new(side: usize, dev: &Device) -> Result<Self> {
        let u = Tensor::ones([side, side], DType::F32, dev)?;
        let v = Tensor::zeros([side, side], DType::F32, dev)?;
        let noise = Tensor::rand([side, side], DType::F32, 7, dev)?;
        let at = |f: f64| (f * side as f64) as isize;
        for (row, col, half) in [(0.5, 0.5, 0.06), (0.3, 0.7, 0.03), (0.72, 0.28, 0.04)] {
            let (r0, r1) = (at(row - half), at(row + half));
            let (c0, c1) = (at(col - half), at(col + half));
            let patch = s![r0..r1, c0..c1];
            u.slice(patch)?.fill_(0.5)?;
            let v_patch = v.slice(patch)?;
            v_patch.assign(&noise.slice(patch)?.mul_scalar(0.1)?.add_scalar(0.25)?)?;
        }
        Ok(Self {
            u,
            v,
            steps: 0,
            checkpointed: 0,
            graph: None,
        })
    }

    /// Advances `n` steps, each recording its ops (on a GPU, recorded
    /// and submitted in batches; nothing is read back).
    ///
    /// # Errors
    /// As the tensor ops it runs.
    // The examples step captured; benches/host_cost.rs and tests/capture.rs
    // compare with this.
    #[allow(dead_code)]
    pub fn step(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            step(&self.u, &self.v)?;
            self.steps += 1;
        }
        Ok(())
    }

    /// Advances `n` steps through a captured step: the first call captures
    /// one step's ops into a [`Graph`] (running it once), every later step
    /// runs that graph (on a GPU, one submit of the dispatches recorded the
    /// first time: no recording, fusion planning or encoding per step).
    ///
    /// # Errors
    /// As the tensor ops it runs; a capture's errors.
    pub fn step_captured(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            match &mut self.graph {
                Some(graph) => graph.run()?,
                None => {
                    let (u, v) = (self.u.clone(), self.v.clone());
                    let dev = self.u.device().clone();
                    self.graph = Some(dev.capture(move || step(&u, &v))?);
                }
            }
            self.steps += 1;
        }
        Ok(())
    }

    /// Copies both fields, as of this step, to host memory
    /// (`Tensor::checkpoint_all`: both or neither): after a
    /// lost GPU, `Device::recover` restores them from here, and
    /// [`GrayScott::resume`] takes the step count back with them.
    ///
    /// # Errors
    /// As `Tensor::checkpoint` (a lost device among them).
    // The examples recover with these; the bench and tests sharing this
    // file do not.
    #[cfg(not(target_arch = "wasm32"))]
    #[allow(dead_code)]
    pub fn checkpoint(&mut self) -> Result<()> {
        Tensor::checkpoint_all(&[&self.u, &self.v])?;
        self.checkpointed = self.steps;
        Ok(())
    }

    /// [`GrayScott::checkpoint`] without blocking (the browser's form).
    ///
    /// # Errors
    /// As `Tensor::checkpoint`.
    #[cfg(target_arch = "wasm32")]
    pub async fn checkpoint_async(&mut self) -> Result<()> {
        Tensor::checkpoint_all_async(&[&self.u, &self.v]).await?;
        self.checkpointed = self.steps;
        Ok(())
    }

    /// After a recovery: the fields hold the last checkpoint, and so does
    /// the step count (the captured step is captured again by its next run).
    #[allow(dead_code)]
    pub fn resume(&mut self) {
        self.steps = self.checkpointed;
    }

    /// The field drawn: `v`, in about `[0, 0.5]`.
    pub fn v(&self) -> &Tensor {
        &self.v
    }
}

/// The five-point Laplacian of the interior of `x`.
fn laplacian(x: &Tensor) -> Result<Tensor> {
    x.slice(s![..-2, 1..-1])?
        .add(&x.slice(s![2.., 1..-1])?)?
        .add(&x.slice(s![1..-1, ..-2])?)?
        .add(&x.slice(s![1..-1, 2..])?)?
        .sub(&x.slice(s![1..-1, 1..-1])?.mul_scalar(4.0)?)
}
