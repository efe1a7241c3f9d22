//! Drawing without readback: a tensor written into an application's
//! `wgpu::Texture`, its values turned into colours by GPU ops and copied
//! buffer-to-texture on the device.

use crate::backend::gpu::interop;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::PadMode;
use crate::tensor::Tensor;

/// How [`Tensor::write_to_texture`] turns elements into colours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ColorMap {
    /// A `[height, width]` tensor, `min` black to `max` white (values
    /// outside clamp, NaN is black).
    Gray {
        /// The value drawn black.
        min: f32,
        /// The value drawn white.
        max: f32,
    },
    /// A `[height, width]` tensor, `min` to `max` through black, red,
    /// yellow and white.
    Heat {
        /// The value drawn black.
        min: f32,
        /// The value drawn white.
        max: f32,
    },
    /// A `[height, width, 4]` (RGBA) or `[height, width, 3]` (RGB, opaque)
    /// tensor: floats in `[0, 1]` (clamped), u8 as they are; other
    /// integers as floats (clamped to `[0, 1]`: scale a 0..255 image of
    /// i32 to u8 first).
    Rgba,
}

/// The texture formats written.
fn byte_order(format: wgpu::TextureFormat) -> Option<bool> {
    match format {
        wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb => Some(false),
        wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb => Some(true),
        _ => None,
    }
}

impl Tensor {
    /// Writes this tensor's elements as pixels into the top-left
    /// `width x height` of `texture` (mip level 0), coloured by `map`, on
    /// the GPU: nothing is read back. The texture needs format
    /// `Rgba8Unorm`, `Bgra8Unorm` or their sRGB forms, usage `COPY_DST`,
    /// and the tensor's device's wgpu device. The copy is submitted at
    /// once, after the ops that compute the tensor, so work the
    /// application submits next sees the pixels.
    ///
    /// Each channel's byte (`round(255 * value)`) is stored as it is in
    /// every format: an sRGB texture holds it as an sRGB-encoded value, as
    /// an image file would, so a sampler decodes 0.5 to about 0.21, not
    /// to a linear 0.5.
    ///
    /// wgpu tells a texture of another wgpu `Instance` only by an id that
    /// may be one of this instance's: it is refused where that id names
    /// no texture of this device, else written as that one, so keep one
    /// instance, as webtensor does for the devices it opens.
    ///
    /// # Errors
    /// `Error::Argument` naming `write_to_texture` for a CPU tensor, a
    /// texture of another format, usage or device, one of another wgpu
    /// instance as above (in a
    /// browser, where WebGPU checks the copy after this returns, a texture
    /// it refuses is left as it was, with no error), or one smaller than
    /// the tensor; `Error::Shape` for a tensor of another rank (or a last axis
    /// other than 3 or 4 for `Rgba`); `Error::DType` for bool or c64.
    pub fn write_to_texture(&self, texture: &wgpu::Texture, map: ColorMap) -> Result<()> {
        const OP: &str = "write_to_texture";
        let Some(ctx) = self.device().gpu_context() else {
            return Err(Error::argument(
                OP,
                "the tensor is on the CPU; move it to the texture's GPU device",
            ));
        };
        let Some(swap) = byte_order(texture.format()) else {
            return Err(Error::argument(
                OP,
                format!(
                    "the texture's format is {:?}; Rgba8Unorm, Bgra8Unorm or their sRGB forms are written",
                    texture.format()
                ),
            ));
        };
        if !texture.usage().contains(wgpu::TextureUsages::COPY_DST) {
            return Err(Error::argument(
                OP,
                format!(
                    "the texture's usage is {:?}; it needs COPY_DST",
                    texture.usage()
                ),
            ));
        }
        if !self.dtype().is_numeric() {
            return Err(Error::dtype(
                OP,
                format!("not defined for dtype {}", self.dtype()),
            ));
        }
        let rgba = map == ColorMap::Rgba;
        let fits = if rgba {
            self.rank() == 3 && matches!(self.dims()[2], 3 | 4)
        } else {
            self.rank() == 2
        };
        if !fits {
            let want = if rgba {
                "[height, width, 3 or 4]"
            } else {
                "[height, width]"
            };
            return Err(Error::shape(
                OP,
                format!(
                    "needs a {want} tensor for {map:?}, the shape is {}",
                    self.shape()
                ),
            ));
        }
        let (height, width) = (self.dims()[0], self.dims()[1]);
        let size = texture.size();
        if (width as u64) > size.width as u64 || (height as u64) > size.height as u64 {
            return Err(Error::argument(
                OP,
                format!(
                    "a {width} x {height} image does not fit the {} x {} texture",
                    size.width, size.height
                ),
            ));
        }
        if width == 0 || height == 0 {
            return Ok(());
        }
        let [r, g, b, a] = self.channels(map)?;
        let (r, b) = if swap { (b, r) } else { (r, b) };
        // One little-endian u32 per pixel: its bytes are r, g, b, a.
        let byte =
            |c: &Tensor| -> Result<Tensor> { c.mul_scalar(255.0)?.round()?.to_dtype(DType::U32) };
        let mut pixels = byte(&r)?;
        for (c, scale) in [(&g, 1u32 << 8), (&b, 1 << 16), (&a, 1 << 24)] {
            pixels = pixels.add(&byte(c)?.mul_scalar(scale)?)?;
        }
        // Rows of a buffer-to-texture copy are 256-byte aligned.
        let pitch = (width * 4).next_multiple_of(256) / 4;
        let padded = pixels.pad(&[(0, pitch - width)], PadMode::Constant(0.into()))?;
        let source = padded.contiguous_gpu_buffer()?;
        interop::copy_to_texture(
            OP,
            &ctx,
            (&source.buffer, source.byte_offset, (pitch * 4) as u32),
            texture,
            (width as u32, height as u32),
        )
    }

    /// The red, green, blue and alpha of each pixel, f32 in `[0, 1]`.
    fn channels(&self, map: ColorMap) -> Result<[Tensor; 4]> {
        let x = self.to_dtype(DType::F32)?;
        let unit = |t: Tensor| t.clamp(0.0, 1.0);
        let level = |min: f32, max: f32| -> Result<Tensor> {
            let span = if max == min { 1.0 } else { max - min };
            // NaN is drawn as min.
            let t = x.sub_scalar(min)?.div_scalar(span)?;
            let t = Tensor::where_cond(&t.isnan()?, &t.zeros_like()?, &t)?;
            unit(t)
        };
        let opaque = || Tensor::ones(&self.dims()[..2], DType::F32, self.device());
        Ok(match map {
            ColorMap::Gray { min, max } => {
                let t = level(min, max)?;
                [t.clone(), t.clone(), t, opaque()?]
            }
            ColorMap::Heat { min, max } => {
                let t = level(min, max)?.mul_scalar(3.0)?;
                [
                    unit(t.clone())?,
                    unit(t.sub_scalar(1.0)?)?,
                    unit(t.sub_scalar(2.0)?)?,
                    opaque()?,
                ]
            }
            ColorMap::Rgba => {
                let x = if self.dtype() == DType::U8 {
                    x.div_scalar(255.0)?
                } else {
                    x
                };
                let c = |k: usize| -> Result<Tensor> { unit(x.narrow(2, k, 1)?.squeeze_axis(2)?) };
                let alpha = if self.dims()[2] == 4 {
                    c(3)?
                } else {
                    opaque()?
                };
                [c(0)?, c(1)?, c(2)?, alpha]
            }
        })
    }
}
