//! A spectrogram: two seconds of a synthetic recording (a rising chirp, a
//! steady 1 kHz tone that stops half-way, a burst of clicks, a little noise)
//! cut into overlapping Hann-windowed frames and transformed
//! (`Tensor::stft`, PyTorch's), its power in decibels drawn as a picture:
//! time left to right, frequency upwards, black to white through red and
//! yellow. Everything from the signal to the pixels' bytes runs on the
//! default device; the PNG is written here.
//!
//! ```text
//! cargo run --release --example spectrogram            # spectrogram.png
//! cargo run --release --example spectrogram -- out.png
//! ```

use webtensor::{Device, Result, Stft, Tensor};

const RATE: f64 = 16_000.0;
const SECONDS: f64 = 2.0;
const N_FFT: usize = 512;
const HOP: usize = 128;

fn main() -> Result<()> {
    let path = std::env::args().nth(1).unwrap_or("spectrogram.png".into());
    let dev = Device::default_device()?;
    println!("on {dev}");
    let signal = recording(&dev)?;
    let window = Tensor::hann_window(N_FFT, &dev)?;
    // [257 frequencies, 251 frames] of c64.
    let spectrum = signal.stft(&Stft::new(N_FFT).hop(HOP).window(&window))?;
    let power = spectrum.abs()?.square()?;
    let db = power
        .add_scalar(1e-10)?
        .log()?
        .mul_scalar(10.0 / std::f64::consts::LN_10)?;
    let peak = db.max(..)?.item::<f32>()?;
    // 80 dB below the peak is black; the peak is white.
    let level = db
        .sub_scalar(peak - 80.0)?
        .div_scalar(80.0)?
        .clamp(0.0, 1.0)?;
    let image = level.flip(&[0])?; // low frequencies at the bottom
    let pixels = heat(&image)?;
    let (height, width) = (image.dims()[0], image.dims()[1]);
    std::fs::write(&path, png(width, height, &pixels)).map_err(|e| webtensor::Error::Io {
        op: "spectrogram",
        path: path.clone(),
        msg: e.to_string(),
    })?;
    println!(
        "{} x {} spectrogram ({} frames of {N_FFT} samples, hop {HOP}) written to {path}",
        width,
        height,
        spectrum.dims()[1]
    );
    Ok(())
}

/// The samples: a chirp from 200 Hz to 6 kHz, a 1 kHz tone for the first
/// second, clicks every quarter second, and noise.
fn recording(dev: &Device) -> Result<Tensor> {
    let n = (RATE * SECONDS) as usize;
    let t = Tensor::arange(0.0f32, n as f32, 1.0, dev)?.div_scalar(RATE)?;
    // Phase of a linear chirp: 2 pi (f0 t + (f1 - f0) t^2 / (2 T)).
    let (f0, f1) = (200.0, 6000.0);
    let sweep = t.square()?.mul_scalar((f1 - f0) / (2.0 * SECONDS))?;
    let chirp = t
        .mul_scalar(f0)?
        .add(&sweep)?
        .mul_scalar(std::f64::consts::TAU)?
        .sin()?;
    let tone = t
        .mul_scalar(std::f64::consts::TAU * 1000.0)?
        .sin()?
        .mul_scalar(0.5)?;
    let first_second = t.lt_scalar(1.0)?.to_dtype(webtensor::DType::F32)?;
    let clicks = t.mul_scalar(4.0)?.remainder_scalar(1.0)?.lt_scalar(0.002)?;
    let clicks = clicks.to_dtype(webtensor::DType::F32)?.mul_scalar(0.8)?;
    let noise = Tensor::randn([n], webtensor::DType::F32, 3, dev)?.mul_scalar(0.001)?;
    chirp
        .add(&tone.mul(&first_second)?)?
        .add(&clicks)?
        .add(&noise)
}

/// RGB bytes of `level` (`[height, width]` in `[0, 1]`): black, red,
/// yellow, white.
fn heat(level: &Tensor) -> Result<Vec<u8>> {
    let t = level.mul_scalar(3.0)?;
    let channel = |shift: f64| -> Result<Tensor> {
        t.sub_scalar(shift)?
            .clamp(0.0, 1.0)?
            .mul_scalar(255.0)?
            .round()
    };
    let rgb = Tensor::stack(&[&channel(0.0)?, &channel(1.0)?, &channel(2.0)?], 2)?;
    Ok(rgb.to_vec::<f32>()?.into_iter().map(|v| v as u8).collect())
}

/// A PNG of 8-bit RGB `pixels`, rows top to bottom: the signature, a
/// header, the rows (each after a filter byte 0) deflated in one data
/// chunk, and the end chunk, each chunk with its CRC-32.
fn png(width: usize, height: usize, pixels: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend((data.len() as u32).to_be_bytes());
        out.extend(kind);
        out.extend(data);
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        out.extend(crc.finalize().to_be_bytes());
    };
    let mut header = Vec::new();
    header.extend((width as u32).to_be_bytes());
    header.extend((height as u32).to_be_bytes());
    header.extend([8, 2, 0, 0, 0]); // 8 bits, RGB, deflate, no filter, no interlace
    chunk(b"IHDR", &header);
    let rows: Vec<u8> = pixels
        .chunks(3 * width)
        .flat_map(|row| std::iter::once(0).chain(row.iter().copied()))
        .collect();
    chunk(
        b"IDAT",
        &miniz_oxide::deflate::compress_to_vec_zlib(&rows, 6),
    );
    chunk(b"IEND", &[]);
    out
}
