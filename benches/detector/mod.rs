//! A MobileNetV3-style text detector of the DBNet family, with seeded
//! random weights, written as a user would write it in webtensor calls:
//! a conv-bn-hardswish stem, inverted residual blocks (1x1 expansion,
//! depthwise 3x3 and 5x5, squeeze-excite, 1x1 projection, residual adds),
//! an FPN over four scales with nearest upsampling, and DBNet's
//! probability head (a 3x3 convolution, two 2x2 stride-2 transposed
//! convolutions, a sigmoid). `benches/reference/onnx_detector.py` builds
//! the same network as an ONNX graph from the weights this one saves; keep
//! the two in step.
//!
//! As an inference engine does when it loads a model (onnxruntime folds
//! them too), each batch norm after a convolution is folded into that
//! convolution's weight and bias once, at load (`fuse_conv_bn_weights`),
//! and the activation after it is the convolution's own
//! (`Conv::activation`): a conv-bn-activation layer is one call (the
//! head's transposed one too, `fuse_conv_transpose_bn_weights`).

use std::collections::HashMap;
use webtensor::{Activation, Conv, DType, Device, Resize, Result, Tensor};

/// A block: input, expanded and output channels, depthwise kernel size and
/// stride, squeeze-excite, hardswish (else relu).
pub struct Block {
    pub cin: usize,
    pub exp: usize,
    pub cout: usize,
    pub k: usize,
    pub stride: usize,
    pub se: bool,
    pub hardswish: bool,
}

const fn block(
    cin: usize,
    exp: usize,
    cout: usize,
    k: usize,
    stride: usize,
    se: bool,
    hardswish: bool,
) -> Block {
    Block {
        cin,
        exp,
        cout,
        k,
        stride,
        se,
        hardswish,
    }
}

/// MobileNetV3-large at half width (PaddleOCR's detector backbone), after
/// a 16-channel stride-2 stem. Blocks 2, 4, 7 and 10 end the scales the
/// FPN reads (strides 4, 8, 16, 32).
pub const BLOCKS: [Block; 11] = [
    block(16, 16, 16, 3, 1, false, false),
    block(16, 32, 24, 3, 2, false, false),
    block(24, 40, 24, 3, 1, false, false),
    block(24, 40, 40, 5, 2, true, false),
    block(40, 64, 40, 5, 1, true, false),
    block(40, 120, 48, 3, 2, false, true),
    block(48, 100, 48, 3, 1, false, true),
    block(48, 240, 56, 3, 1, true, true),
    block(56, 336, 80, 5, 2, true, true),
    block(80, 480, 80, 5, 1, true, true),
    block(80, 480, 96, 5, 1, true, true),
];

/// The blocks whose outputs the FPN reads, smallest stride first.
pub const TAPS: [usize; 4] = [2, 4, 7, 10];

/// The FPN's inner channels and each scale's share of the fused map.
pub const INNER: usize = 96;

/// Squeeze-excite's reduced channels: a quarter, rounded to a multiple of 8.
pub fn squeezed(c: usize) -> usize {
    (c / 4).div_ceil(8).max(1) * 8
}

/// The network's weights by name.
pub struct Detector {
    pub weights: HashMap<String, Tensor>,
    /// Each convolution followed by a batch norm, by the layer's name: the
    /// weight and bias with the batch norm folded in.
    folded: HashMap<String, (Tensor, Tensor)>,
}

/// Makes the weights in a fixed order, each from its own seed.
struct Maker<'a> {
    dev: &'a Device,
    seed: u64,
    weights: HashMap<String, Tensor>,
}

impl Maker<'_> {
    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, name: String, dims: &[usize], lo: f64, hi: f64) -> Result<()> {
        self.seed += 1;
        let t = Tensor::rand(dims, DType::F32, self.seed, self.dev)?
            .mul_scalar(hi - lo)?
            .add_scalar(lo)?;
        self.weights.insert(name, t);
        Ok(())
    }

    /// A convolution weight (He-uniform), and a bias when asked.
    fn conv(&mut self, name: &str, cout: usize, cin: usize, k: usize, bias: bool) -> Result<()> {
        let bound = (6.0 / (cin * k * k) as f64).sqrt();
        self.uniform(format!("{name}.weight"), &[cout, cin, k, k], -bound, bound)?;
        if bias {
            self.uniform(format!("{name}.bias"), &[cout], -0.1, 0.1)?;
        }
        Ok(())
    }

    /// A 2x2-stride-2 transposed convolution's weight, `(in, out, kh, kw)`
    /// (each output takes one input pixel per channel), and its bias.
    fn transposed(&mut self, name: &str, cin: usize, cout: usize) -> Result<()> {
        let bound = (6.0 / cin as f64).sqrt();
        self.uniform(format!("{name}.weight"), &[cin, cout, 2, 2], -bound, bound)?;
        self.uniform(format!("{name}.bias"), &[cout], -0.1, 0.1)
    }

    /// A batch norm's statistics and affine parameters.
    fn bn(&mut self, name: &str, c: usize) -> Result<()> {
        self.uniform(format!("{name}.mean"), &[c], -0.1, 0.1)?;
        self.uniform(format!("{name}.var"), &[c], 0.8, 1.2)?;
        self.uniform(format!("{name}.weight"), &[c], 0.8, 1.2)?;
        self.uniform(format!("{name}.bias"), &[c], -0.1, 0.1)
    }
}

impl Detector {
    /// Seeded random weights on `dev`.
    ///
    /// # Errors
    /// As the ops that make them.
    pub fn new(dev: &Device) -> Result<Detector> {
        let mut m = Maker {
            dev,
            seed: 0,
            weights: HashMap::new(),
        };
        m.conv("stem.conv", 16, 3, 3, false)?;
        m.bn("stem.bn", 16)?;
        for (i, b) in BLOCKS.iter().enumerate() {
            let p = format!("blocks.{i}");
            if b.exp != b.cin {
                m.conv(&format!("{p}.expand.conv"), b.exp, b.cin, 1, false)?;
                m.bn(&format!("{p}.expand.bn"), b.exp)?;
            }
            m.conv(&format!("{p}.depthwise.conv"), b.exp, 1, b.k, false)?;
            m.bn(&format!("{p}.depthwise.bn"), b.exp)?;
            if b.se {
                let r = squeezed(b.exp);
                m.conv(&format!("{p}.se.reduce"), r, b.exp, 1, true)?;
                m.conv(&format!("{p}.se.expand"), b.exp, r, 1, true)?;
            }
            m.conv(&format!("{p}.project.conv"), b.cout, b.exp, 1, false)?;
            m.bn(&format!("{p}.project.bn"), b.cout)?;
        }
        for (s, &tap) in TAPS.iter().enumerate() {
            m.conv(&format!("fpn.inner.{s}"), INNER, BLOCKS[tap].cout, 1, false)?;
            m.conv(&format!("fpn.out.{s}"), INNER / 4, INNER, 3, false)?;
        }
        m.conv("head.conv", INNER / 4, INNER, 3, false)?;
        m.bn("head.bn1", INNER / 4)?;
        m.transposed("head.up1", INNER / 4, INNER / 4)?;
        m.bn("head.bn2", INNER / 4)?;
        m.transposed("head.up2", INNER / 4, 1)?;
        let mut net = Detector {
            weights: m.weights,
            folded: HashMap::new(),
        };
        // (layer, its batch norm)
        let mut layers = vec![("stem".to_string(), "stem.bn".to_string())];
        for (i, b) in BLOCKS.iter().enumerate() {
            let mut parts = vec!["depthwise", "project"];
            if b.exp != b.cin {
                parts.insert(0, "expand");
            }
            for part in parts {
                let layer = format!("blocks.{i}.{part}");
                layers.push((layer.clone(), format!("{layer}.bn")));
            }
        }
        layers.push(("head".to_string(), "head.bn1".to_string()));
        for (layer, bn) in layers {
            let fold = net
                .w(&format!("{layer}.conv.weight"))
                .fuse_conv_bn_weights(
                    None,
                    net.w(&format!("{bn}.mean")),
                    net.w(&format!("{bn}.var")),
                    1e-5,
                    Some(net.w(&format!("{bn}.weight"))),
                    Some(net.w(&format!("{bn}.bias"))),
                )?;
            net.folded.insert(layer, fold);
        }
        // The batch norm after the first transposed convolution, whose
        // weight's output channels are its axis 1.
        let up1 = net.w("head.up1.weight").fuse_conv_transpose_bn_weights(
            Some(net.w("head.up1.bias")),
            net.w("head.bn2.mean"),
            net.w("head.bn2.var"),
            1e-5,
            Some(net.w("head.bn2.weight")),
            Some(net.w("head.bn2.bias")),
        )?;
        net.folded.insert("head.up1".to_string(), up1);
        Ok(net)
    }

    fn w(&self, name: &str) -> &Tensor {
        &self.weights[name]
    }

    /// Convolution, batch norm and activation (`None`: none), as one
    /// convolution by the folded weights.
    fn conv_bn(&self, x: &Tensor, name: &str, conv: &Conv, act: Option<bool>) -> Result<Tensor> {
        let (weight, bias) = &self.folded[name];
        let conv = conv.clone().bias(bias);
        let conv = match act {
            Some(true) => conv.activation(Activation::Hardswish),
            Some(false) => conv.activation(Activation::Relu),
            None => conv,
        };
        x.conv2d(weight, &conv)
    }

    /// Squeeze-excite: channel weights from the global mean.
    fn squeeze_excite(&self, x: &Tensor, name: &str) -> Result<Tensor> {
        let conv = |s: &Tensor, part: &str| {
            let w = self.w(&format!("{name}.{part}.weight"));
            let b = self.w(&format!("{name}.{part}.bias"));
            s.conv2d(w, &Conv::new().bias(b))
        };
        let s = x.mean_keepdim([2, 3])?;
        let s = conv(&s, "reduce")?.relu()?;
        let s = conv(&s, "expand")?.hardsigmoid()?;
        x.mul(&s)
    }

    /// Block `i` of `x`, taken by value: its storage becomes the output
    /// of a block with a shortcut (`Tensor::add_conv2d`) where it is the
    /// last handle.
    fn block(&self, x: Tensor, i: usize) -> Result<Tensor> {
        let b = &BLOCKS[i];
        let p = format!("blocks.{i}");
        let act = Some(b.hardswish);
        let mut h = if b.exp != b.cin {
            self.conv_bn(&x, &format!("{p}.expand"), &Conv::new(), act)?
        } else {
            x.clone()
        };
        let depthwise = Conv::new().stride(b.stride).padding(b.k / 2).groups(b.exp);
        h = self.conv_bn(&h, &format!("{p}.depthwise"), &depthwise, act)?;
        if b.se {
            h = self.squeeze_excite(&h, &format!("{p}.se"))?;
        }
        // The shortcut as the projection's residual, added into its memory.
        let project = format!("{p}.project");
        if b.stride == 1 && b.cin == b.cout {
            let (weight, bias) = &self.folded[&project];
            return x.add_conv2d(&h, weight, &Conv::new().bias(bias));
        }
        self.conv_bn(&h, &project, &Conv::new(), None)
    }

    /// The probability map `(N, 1, H, W)` of an image batch `(N, 3, H, W)`
    /// (H and W multiples of 32).
    ///
    /// # Errors
    /// As the ops it runs.
    pub fn forward(&self, image: &Tensor) -> Result<Tensor> {
        let dev = image.device();
        let stem = Conv::new().stride(2).padding(1);
        let mut x =
            dev.profile_region("stem", || self.conv_bn(image, "stem", &stem, Some(true)))?;
        let mut taps = Vec::new();
        for i in 0..BLOCKS.len() {
            x = dev.profile_region(format!("blocks.{i}"), || self.block(x, i))?;
            if TAPS.contains(&i) {
                taps.push(x.clone());
            }
        }
        let fused = dev.profile_region("fpn", || self.fpn(&taps))?;
        dev.profile_region("head", || self.head(&fused))
    }

    /// The FPN: the four scales merged top-down and concatenated at the
    /// finest.
    fn fpn(&self, taps: &[Tensor]) -> Result<Tensor> {
        let up = |t: &Tensor, f: f64| t.resize_by([f, f], Resize::Nearest);
        let inner = |s: usize| self.w(&format!("fpn.inner.{s}.weight"));
        // Top-down: each scale adds the coarser one, upsampled (as the
        // convolution's residual, into whose memory each sum is added).
        let mut merged = vec![taps[3].conv2d(inner(3), &Conv::new())?];
        for s in (0..3).rev() {
            let coarser = up(merged.last().expect("one scale at least"), 2.0)?;
            merged.push(coarser.add_conv2d(&taps[s], inner(s), &Conv::new())?);
        }
        merged.reverse();
        let pad = Conv::new().padding(1);
        let mut fused = Vec::new();
        for (s, m) in merged.iter().enumerate() {
            let p = m.conv2d(self.w(&format!("fpn.out.{s}.weight")), &pad)?;
            fused.push(if s == 0 { p } else { up(&p, (1 << s) as f64)? });
        }
        Tensor::concat(&fused.iter().collect::<Vec<_>>(), 1)
    }

    /// DBNet's probability head.
    fn head(&self, fused: &Tensor) -> Result<Tensor> {
        let pad = Conv::new().padding(1);
        let h = self.conv_bn(fused, "head", &pad, Some(false))?;
        let twice = Conv::new().stride(2);
        let (w1, b1) = &self.folded["head.up1"];
        let up1 = twice.clone().bias(b1).activation(Activation::Relu);
        let h = h.conv_transpose2d(w1, &up1)?;
        let up2 = twice.bias(self.w("head.up2.bias"));
        h.conv_transpose2d(self.w("head.up2.weight"), &up2)?
            .sigmoid()
    }
}
