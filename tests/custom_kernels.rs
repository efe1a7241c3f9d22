//! The user's WGSL kernels on every GPU device (native and packed f16):
//! against the CPU path on views of every layout and broadcast inputs, a
//! stencil reading neighbours through `NAME_at`, in place through a view,
//! inside fused chains, past the first grid row, and WGSL errors and bad
//! calls as errors naming the op and, for WGSL, the line of the body.

mod common;

use webtensor::{CustomKernel, DType, Device, GpuOptions, Tensor, s};

fn gpus() -> Vec<Device> {
    common::gpu()
        .into_iter()
        .chain(common::gpu_packed_f16())
        .collect()
}

fn lerp(dtype: DType) -> CustomKernel {
    CustomKernel::new(
        "lerp",
        &[("a", dtype), ("b", dtype)],
        &[("t", DType::F32)],
        ("out", dtype),
        "out = a + t * (b - a);",
    )
    .unwrap()
}

#[test]
fn elementwise_bodies_on_views_of_every_layout() {
    let cpu = Device::cpu();
    for dev in gpus() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let k = lerp(dtype);
            let views = common::views_of(&dev, dtype);
            for (va, a) in &views {
                for (vb, b) in &views {
                    let got = common::read_f32(&k.call(&[a, b], &[0.25.into()]).unwrap());
                    let (ca, cb) = (a.to_device(&cpu).unwrap(), b.to_device(&cpu).unwrap());
                    let want = common::read_f32(
                        &ca.add(&cb.sub(&ca).unwrap().mul_scalar(0.25).unwrap())
                            .unwrap(),
                    );
                    let tol = common::half_tol(dtype, 2e-3, 1e-6);
                    common::assert_close(&got, &want, tol, &format!("{dev} {dtype} {va} {vb}"));
                }
            }
        }
        // Integers, bool and broadcasting a row against a column.
        let k = CustomKernel::new(
            "mix",
            &[("i", DType::I32), ("u", DType::U8), ("m", DType::Bool)],
            &[("bias", DType::I32)],
            ("out", DType::I32),
            "if (m) {\n    out = i * i32(u) + bias;\n} else {\n    out = -1;\n}",
        )
        .unwrap();
        let i = Tensor::arange(0i32, 4, 1, &dev)
            .unwrap()
            .reshape([4, 1])
            .unwrap();
        let u = Tensor::from_slice(&[2u8, 3, 5], [3], &dev).unwrap();
        let m = Tensor::from_slice(&[true, false, true], [3], &dev).unwrap();
        let y = k.call(&[&i, &u, &m], &[10.into()]).unwrap();
        assert_eq!(y.dims(), &[4, 3]);
        assert_eq!(
            y.to_vec::<i32>().unwrap(),
            [10, -1, 10, 12, -1, 15, 14, -1, 20, 16, -1, 25],
            "{dev}"
        );
    }
}

#[test]
fn a_stencil_reads_neighbours_and_updates_in_place() {
    let blur = CustomKernel::new(
        "blur",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "let r = out_coord(0u);
let c = out_coord(1u);
let w = x_dim(1u);
var sum = x;
var n = 1.0;
if (r > 0u) { sum += x_at(index - w); n += 1.0; }
if (r + 1u < x_dim(0u)) { sum += x_at(index + w); n += 1.0; }
if (c > 0u) { sum += x_at(index - 1u); n += 1.0; }
if (c + 1u < w) { sum += x_at(index + 1u); n += 1.0; }
y = sum / n;",
    )
    .unwrap();
    for dev in gpus() {
        let (rows, cols) = (9, 13);
        let data = common::noise(rows * cols, 5);
        let t = Tensor::from_slice(&data, [rows, cols], &dev).unwrap();
        let want: Vec<f32> = (0..rows * cols)
            .map(|k| {
                let (r, c) = (k / cols, k % cols);
                let mut v = vec![data[k]];
                if r > 0 {
                    v.push(data[k - cols]);
                }
                if r + 1 < rows {
                    v.push(data[k + cols]);
                }
                if c > 0 {
                    v.push(data[k - 1]);
                }
                if c + 1 < cols {
                    v.push(data[k + 1]);
                }
                v.iter().sum::<f32>() / v.len() as f32
            })
            .collect();
        // In place: the input is the output's own storage, read whole.
        blur.call_into(&t, &[&t], &[]).unwrap();
        common::assert_close(
            &t.to_vec::<f32>().unwrap(),
            &want,
            1e-6,
            &format!("{dev} in place"),
        );
        // Into a stepped view of a larger tensor: only the view changes.
        let big = Tensor::zeros([rows, 2 * cols], DType::F32, &dev).unwrap();
        let x = Tensor::from_slice(&data, [rows, cols], &dev).unwrap();
        blur.call_into(&big.slice(s![.., 1..;2]).unwrap(), &[&x], &[])
            .unwrap();
        let host = big.to_vec::<f32>().unwrap();
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(host[r * 2 * cols + 2 * c], 0.0);
                assert!((host[r * 2 * cols + 2 * c + 1] - want[r * cols + c]).abs() < 1e-6);
            }
        }
    }
}

#[test]
fn custom_kernels_sit_inside_fused_chains() {
    let Some(dev) = common::own_batching_gpu() else {
        return;
    };
    let double = CustomKernel::new(
        "double",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = 2.0 * x;",
    )
    .unwrap();
    let cpu = Device::cpu();
    let a = Tensor::rand([64, 48], DType::F32, 3, &cpu).unwrap();
    let g = a.to_device(&dev).unwrap();
    // Dropped intermediates on both sides of the custom kernel.
    let got = double
        .call(&[&g.exp().unwrap().add_scalar(1.0).unwrap().t()], &[])
        .unwrap()
        .sqrt()
        .unwrap()
        .neg()
        .unwrap();
    let want = a
        .exp()
        .unwrap()
        .add_scalar(1.0)
        .unwrap()
        .t()
        .mul_scalar(2.0)
        .unwrap()
        .sqrt()
        .unwrap()
        .neg()
        .unwrap();
    common::assert_close(
        &got.to_vec::<f32>().unwrap(),
        &want.to_vec::<f32>().unwrap(),
        1e-5,
        "chain",
    );
    let before = dev.stats().submits;
    let _ = double.call(&[&g], &[]).unwrap();
    assert_eq!(
        dev.stats().submits,
        before,
        "a custom kernel is recorded, not submitted at once"
    );
}

#[test]
fn more_elements_than_one_grid_row_holds() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let n = 65_535 * 256 + 3;
    let k = CustomKernel::new(
        "mark",
        &[("x", DType::U8)],
        &[],
        ("y", DType::U8),
        "y = x + u32(index % 7u);",
    )
    .unwrap();
    let x = Tensor::zeros([n], DType::U8, &dev).unwrap();
    let y = k.call(&[&x], &[]).unwrap().to_vec::<u8>().unwrap();
    assert!(y.iter().enumerate().all(|(i, &v)| v as usize == i % 7));
}

#[test]
fn wgsl_errors_and_bad_calls_are_errors() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    let broken = CustomKernel::new(
        "broken",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = x;\ny = x +;",
    )
    .unwrap();
    let e = broken.call(&[&x], &[]).unwrap_err().to_string();
    assert!(
        e.contains("CustomKernel::call")
            && e.contains("\"broken\"")
            && e.contains("line 2 of the body"),
        "{e}"
    );
    let undefined = CustomKernel::new(
        "undefined",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = z;",
    )
    .unwrap();
    let e = undefined.call(&[&x], &[]).unwrap_err().to_string();
    assert!(e.contains("line 1 of the body"), "{e}");
    // The device still works.
    assert_eq!(
        lerp(DType::F32)
            .call(&[&x, &x], &[0.5.into()])
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [1.0; 4]
    );

    let new_err = |inputs: &[(&str, DType)], out: (&str, DType)| {
        CustomKernel::new("k", inputs, &[], out, "y = 1.0;")
            .unwrap_err()
            .to_string()
    };
    assert!(new_err(&[("fn", DType::F32)], ("y", DType::F32)).contains("\"fn\""));
    assert!(new_err(&[("x", DType::F32)], ("x", DType::F32)).contains("twice"));
    assert!(
        new_err(
            &[("x_at", DType::F32), ("x", DType::F32)],
            ("y", DType::F32)
        )
        .contains("twice")
    );
    assert!(
        new_err(
            &[("x", DType::F32), ("x_dim", DType::F32)],
            ("y", DType::F32)
        )
        .contains("twice")
    );
    assert!(new_err(&[("x y", DType::F32)], ("y", DType::F32)).contains("CustomKernel::new"));
    assert!(new_err(&[("x", DType::C64)], ("y", DType::F32)).contains("c64"));
    assert!(CustomKernel::new("k", &[], &[], ("y", DType::F32), "  ").is_err());

    let k = lerp(DType::F32);
    let e = k.call(&[&x], &[0.5.into()]).unwrap_err().to_string();
    assert!(e.contains("takes 2 tensors"), "{e}");
    let i = Tensor::ones([4], DType::I32, &dev).unwrap();
    let e = k.call(&[&x, &i], &[0.5.into()]).unwrap_err().to_string();
    assert!(e.contains("\"b\"") && e.contains("i32"), "{e}");
    let e = k
        .call(
            &[&x, &Tensor::ones([3], DType::F32, &dev).unwrap()],
            &[0.5.into()],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("broadcast"), "{e}");
    let cpu = Tensor::ones([4], DType::F32, &Device::cpu()).unwrap();
    let e = k
        .call(&[&cpu, &cpu], &[0.5.into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("GPU"), "{e}");
    let other = common::own_gpu(GpuOptions::default()).unwrap();
    let far = Tensor::ones([4], DType::F32, &other).unwrap();
    let e = k.call(&[&x, &far], &[0.5.into()]).unwrap_err();
    assert!(matches!(e, webtensor::Error::DeviceMismatch { .. }), "{e}");
    let ik = CustomKernel::new(
        "ik",
        &[("a", DType::I32)],
        &[("s", DType::I32)],
        ("y", DType::I32),
        "y = a + s;",
    )
    .unwrap();
    let e = ik.call(&[&i], &[2.5.into()]).unwrap_err().to_string();
    assert!(e.contains("2.5"), "{e}");
    let e = k
        .call_into(&x.broadcast_to([2, 4]).unwrap(), &[&x, &x], &[0.5.into()])
        .unwrap_err();
    assert!(
        matches!(e, webtensor::Error::OverlappingWrite { .. }),
        "{e}"
    );
}

/// A call is checked whole before its output is made: a wrong call over
/// inputs whose broadcast shape is huge is its own error (it was the
/// output's 256 GiB OutOfMemory on the CPU, or a TooLarge on a GPU, and
/// broadcasts that fit were allocated first).
#[test]
fn a_bad_call_is_refused_before_its_output_is_made() {
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    let k = lerp(DType::F32);
    let (cpu, n) = (Device::cpu(), 1usize << 18);
    let column = Tensor::ones([n, 1], DType::F32, &cpu).unwrap();
    let row = Tensor::ones([1, n], DType::F32, &cpu).unwrap();
    let e = k.call(&[&column, &row], &[0.5.into()]).unwrap_err();
    assert!(e.to_string().contains("run on GPU devices"), "{e}");
    common::assert_op_err(
        k.call(&[&column, &row], &[0.5.into()]),
        "CustomKernel::call",
    );
    // A 64 MiB output, never made.
    let column = Tensor::ones([4096, 1], DType::F32, &dev).unwrap();
    let row = Tensor::ones([1, 4096], DType::F32, &dev).unwrap();
    let ints = Tensor::ones([1, 4096], DType::I32, &dev).unwrap();
    let e = k.call(&[&column, &row], &[]).unwrap_err();
    assert!(
        e.to_string()
            .contains("takes 2 tensors and 1 scalars, given 2 and 0"),
        "{e}"
    );
    let e = k.call(&[&column, &ints], &[0.5.into()]).unwrap_err();
    assert!(
        e.to_string().contains("\"b\" is declared f32, given i32"),
        "{e}"
    );
    let peak = dev.stats().peak_bytes_live;
    assert!(peak < 1 << 20, "{peak} bytes were live at once");
}

/// What browsers refuse and naga does not is an error natively too,
/// naming the body's line: WGSL caps a function's variables at 8192 bytes
/// a thread, and lavapipe reserved such memory for every thread (a body's
/// `array<f32, 16777216>` took 22 GB and the process; one of 256 KiB ran
/// for minutes); and a barrier in a body runs outside uniform control
/// flow (threads past the output's end have returned). A body at the cap
/// (the output's variable counted) runs.
#[test]
fn a_body_browsers_refuse_is_an_error_natively_too() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], [3], &dev).unwrap();
    let kernel = |body: &str| {
        CustomKernel::new("memory", &[("x", DType::F32)], &[], ("y", DType::F32), body).unwrap()
    };
    let (memory, barrier) = ("WGSL allows 8192", "uniform control flow");
    let cases = [
        (
            "var a: array<f32, 16777216>;\na[index] = x;\ny = a[index];",
            1,
            memory,
        ),
        (
            "var a: array<f32, 1024>;\nvar b: array<vec4<f32>, 257>;\ny = x;",
            2,
            memory,
        ),
        (
            "y = x;\nlet a = array<f32, 2049>();\ny = a[index];",
            2,
            memory,
        ),
        ("var a: array<array<f32, 4096>, 4096>;\ny = x;", 1, memory),
        ("workgroupBarrier();\ny = x;", 1, barrier),
        ("y = subgroupAdd(x);", 1, barrier),
        (
            "y = x;\nif (x > 0.0) {\n    y = f32(subgroupBallot(x > 1.0).x);\n}",
            3,
            barrier,
        ),
        (
            "y = x;\nif (x > 0.0) {\n    loop {\n        storageBarrier();\n        break;\n    }\n}",
            4,
            barrier,
        ),
    ];
    for (body, line, what) in cases {
        let e = kernel(body).call(&[&x], &[]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("CustomKernel::call")
                && text.contains("\"memory\"")
                && text.contains(what)
                && text.contains(&format!("at line {line} of the body")),
            "{body}: {text}"
        );
    }
    // The output's variable (4 bytes) is one of the function's.
    let at_the_cap = kernel("var a: array<f32, 2047>;\na[index] = x * 2.0;\ny = a[index];");
    let y = at_the_cap
        .call(&[&x], &[])
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(y, [2.0, 4.0, 6.0]);
}

/// A compile error's line of the body counts every WGSL line break (`\r`,
/// U+2028 ...; CR LF one), as the compiler's own message does not.
#[test]
fn compile_errors_count_every_wgsl_line_break() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    for brk in ["\n", "\r", "\r\n", "\u{2028}", "\u{85}", "\u{c}"] {
        // Characters of several bytes before the error on its `\n` line
        // (the compiler counts columns in characters).
        let body = format!("// ééééééééééééééé{brk}y = x * 2.0;{brk}  y = x +;{brk}y = x;");
        let k = CustomKernel::new("lines", &[("x", DType::F32)], &[], ("y", DType::F32), &body)
            .unwrap();
        let e = k.call(&[&x], &[]).unwrap_err().to_string();
        assert!(e.contains("at line 3 of the body"), "{brk:?}: {e}");
    }
}

/// Issue 26: a body reaches its arguments only through their views, and
/// names that would break the generated code are refused when the kernel
/// is made.
#[test]
fn a_body_cannot_close_its_function() {
    let escape = "y = x + scribble();\nreturn y;\n}\nfn scribble() -> f32 {\n    wt_out[12u] = -99.0;\n    return 0.0;\n}\nfn unused() -> f32 {\n    var y: f32;";
    let make = |body: &str| {
        CustomKernel::new(
            "scribble",
            &[("x", DType::F32)],
            &[],
            ("y", DType::F32),
            body,
        )
    };
    // A `//` comment ends at any of WGSL's line breaks, as naga ends it:
    // after a `\r` (or form feed, U+0085, U+2028) the escape was live code
    // the brace check took for the comment's.
    let hidden: Vec<String> = ["\r", "\u{c}", "\u{85}", "\u{2028}", "\u{2029}", "\u{b}"]
        .iter()
        .map(|b| {
            format!(
                "y = x + scribble();\nreturn y;\n// {b}}} fn scribble() -> f32 {{ wt_out[12u] = -99.0; var y = 0.0; /*\n{{ }} */\n"
            )
        })
        .collect();
    let bodies = [escape, "y = x; }", "y = x; {", "/* } */ y = x; }"];
    for body in bodies.into_iter().chain(hidden.iter().map(String::as_str)) {
        let e = make(body).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("CustomKernel::new:"), "{body:?}: {e}");
    }
    // A comment ended by CRLF is still a comment.
    make("// } note\r\ny = x;").unwrap();
    for dev in gpus() {
        // Blocks, and braces in (nested) comments, stay allowed.
        let ok = make("// }\n/* { /* } */ } */ if (x > 0.0) { y = x; } else { y = -x; }").unwrap();
        let big = Tensor::zeros([2, 4], DType::F32, &dev).unwrap();
        let x = Tensor::from_slice(&[1.0f32, -2.0, 3.0, -4.0], [4], &dev).unwrap();
        ok.call_into(&big.slice(s![0, ..]).unwrap(), &[&x], &[])
            .unwrap();
        let want = [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(big.to_vec::<f32>().unwrap(), want, "{dev}");
    }
}

/// An empty output still checks the kernel: WGSL that does not compile is
/// an error (it was `Ok` until the output held an element).
#[test]
fn an_empty_output_still_checks_the_kernel() {
    let broken = CustomKernel::new(
        "broken",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = x +;",
    )
    .unwrap();
    for dev in gpus() {
        let x = Tensor::zeros([0, 3], DType::F32, &dev).unwrap();
        let e = broken.call(&[&x], &[]).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("does not compile"), "{dev}: {e}");
    }
    let i64_arg = CustomKernel::new(
        "k",
        &[("x", DType::I64)],
        &[],
        ("y", DType::F32),
        "y = 1.0;",
    );
    assert!(matches!(i64_arg, Err(webtensor::Error::DType { .. })));
}

#[test]
fn bodies_cannot_reach_past_their_views() {
    for dev in gpus() {
        // Data of a dropped tensor stays in the pooled buffer a small
        // tensor is given.
        drop(Tensor::full([64], 1000.0, DType::F32, &dev).unwrap());
        let x = Tensor::full([1], 7.0, DType::F32, &dev).unwrap();
        for body in [
            "y = x_buf[5];",
            "y = wt_buf0[5];",
            "wt_out[7u] = -99.0; y = x;",
            "wt_store(7u, -99.0); y = x;",
            "y = wt_load0(5u);",
            "y = bitcast<f32>(wt_params.numel);",
        ] {
            let k = CustomKernel::new("peek", &[("x", DType::F32)], &[], ("y", DType::F32), body)
                .unwrap();
            let e = k.call(&[&x], &[]);
            assert!(
                e.is_err(),
                "{dev}: {body} ran: {:?}",
                e.map(|t| t.to_vec::<f32>())
            );
        }
        // NAME_at past the argument's end reads zero, not the pool.
        let k = CustomKernel::new(
            "far",
            &[("x", DType::F32)],
            &[],
            ("y", DType::F32),
            "y = x_at(5u) + x_at(0u);",
        )
        .unwrap();
        assert_eq!(k.call(&[&x], &[]).unwrap().to_vec::<f32>().unwrap(), [7.0]);
        // An input named as webtensor's old internals changes nothing.
        let k = CustomKernel::new(
            "named",
            &[("current_index", DType::F32), ("x_buf", DType::F32)],
            &[("params", DType::F32), ("out", DType::F32)],
            ("y", DType::F32),
            "y = f32(index) + 0.0 * current_index * out * params;",
        )
        .unwrap();
        let zeros = Tensor::zeros([5], DType::F32, &dev).unwrap();
        let y = k
            .call(&[&zeros, &zeros], &[1.0.into(), 2.0.into()])
            .unwrap();
        assert_eq!(
            y.to_vec::<f32>().unwrap(),
            [0.0, 1.0, 2.0, 3.0, 4.0],
            "{dev}"
        );
    }
    // Each refused by `new` (they once failed only at `call`).
    for name in ["_", "self", "type", "mod", "wt_x", "index", "out"] {
        assert!(
            CustomKernel::new(
                "k",
                &[(name, DType::F32)],
                &[],
                ("y", DType::F32),
                "y = 1.0;"
            )
            .is_err(),
            "{name}"
        );
    }
}

/// A kernel "wide" of input `x` and output `y` of `dtype`, and `n`
/// scalars `s0`, `s1` ... of it.
fn wide(n: usize, dtype: DType, body: &str) -> CustomKernel {
    let names: Vec<String> = (0..n).map(|k| format!("s{k}")).collect();
    let scalars: Vec<(&str, DType)> = names.iter().map(|n| (n.as_str(), dtype)).collect();
    CustomKernel::new("wide", &[("x", dtype)], &scalars, ("y", dtype), body).unwrap()
}

/// 300 scalars, past the 255 parameters a WGSL function may be limited
/// to (Tint's limit), each read back where the body names it.
#[test]
fn a_kernel_of_hundreds_of_scalars_reads_each() {
    let k = wide(
        300,
        DType::I32,
        "y = x * 1000 + s1 * 100 + s150 * 10 + s299;",
    );
    let values: Vec<webtensor::Scalar> = (0..300).map(|k| (k % 7).into()).collect();
    for dev in gpus() {
        let x = Tensor::arange(0i32, 3, 1, &dev).unwrap();
        let got = k.call(&[&x], &values).unwrap().to_vec::<i32>().unwrap();
        // s1 = 1, s150 = 150 % 7 = 3, s299 = 299 % 7 = 5.
        assert_eq!(got, [135, 1135, 2135], "{dev}");
    }
}

#[test]
fn a_parameter_block_over_the_uniform_limit_is_an_error_at_call() {
    let Some(dev) = common::gpu() else {
        return;
    };
    // 16,400 scalars take more than WebGPU's 64 KiB of uniform binding.
    let k = wide(16_400, DType::F32, "y = x + s0;");
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    let values: Vec<webtensor::Scalar> = (0..16_400).map(|_| 1.0.into()).collect();
    let e = k.call(&[&x], &values).unwrap_err().to_string();
    assert!(e.contains("uniform") && e.contains("\"wide\""), "{e}");
    // Nothing was recorded: the device goes on.
    assert_eq!((&x + 1.0).to_vec::<f32>().unwrap(), [2.0; 4]);
}

#[test]
fn equal_kernels_share_a_pipeline_and_dropped_ones_free_theirs() {
    let dev = common::own_gpu(GpuOptions::default()).unwrap();
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    let make = |body: &str| {
        CustomKernel::new("k", &[("x", DType::F32)], &[], ("y", DType::F32), body).unwrap()
    };
    make("y = x;").call(&[&x], &[]).unwrap();
    dev.sync().unwrap();
    let base = dev.stats().pipelines;
    let held = make("y = x;");
    for _ in 0..300 {
        make("y = x;").call(&[&x], &[]).unwrap();
    }
    dev.sync().unwrap();
    assert_eq!(dev.stats().pipelines, base, "300 equal kernels");
    // Distinct kernels, each dropped after its call: their pipelines go.
    for k in 0..50 {
        make(&format!("y = x + {k}.0;")).call(&[&x], &[]).unwrap();
    }
    held.call(&[&x], &[]).unwrap();
    dev.sync().unwrap();
    assert!(
        dev.stats().pipelines <= base + 1,
        "{} pipelines",
        dev.stats().pipelines
    );
}

#[test]
fn a_slow_compile_does_not_stall_cached_ops_of_another_thread() {
    // A device of its own: on the shared one, another test's long kernel
    // (more_elements_than_one_grid_row_holds runs for about a second on
    // lavapipe) holds the queue the cached ops are submitted to, and
    // their submits wait for it whatever the pipeline cache does.
    let Some(dev) = common::own_gpu(GpuOptions::default()) else {
        return;
    };
    let x = Tensor::ones([4], DType::F32, &dev).unwrap();
    (&x + 1.0).to_vec::<f32>().unwrap();
    // A body long enough to take a while to compile.
    let body: String = (0..1500)
        .map(|k| format!("y = y + sin(x * {k}.0);\n"))
        .collect();
    let slow =
        CustomKernel::new("slow", &[("x", DType::F32)], &[], ("y", DType::F32), &body).unwrap();
    let compiling = std::thread::spawn({
        let x = x.clone();
        move || {
            let start = std::time::Instant::now();
            slow.call(&[&x], &[]).unwrap().to_vec::<f32>().unwrap();
            start.elapsed()
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    // Recorded and submitted, not waited for: readbacks would also wait
    // for the slow kernel's run, which lavapipe may hold up compiling its
    // machine code.
    let start = std::time::Instant::now();
    let before = dev.stats().submits;
    for _ in 0..10 {
        let y = &x + 1.0;
        dev.flush().unwrap();
        drop(y);
    }
    let cached = start.elapsed();
    assert!(dev.stats().submits - before >= 10);
    let slow_took = compiling.join().unwrap();
    // Only meaningful when the compile outlasts the cached ops by far.
    if slow_took > std::time::Duration::from_secs(1) {
        assert!(
            cached < slow_took / 2,
            "cached ops took {cached:?} beside a {slow_took:?} compile"
        );
    }
}

/// An operand whose storage is larger than one storage binding is an
/// `Error::TooLarge`, even where the view passed is small: a kernel binds
/// every operand's storage whole.
#[test]
fn an_operand_past_one_binding_is_too_large() {
    let options = GpuOptions {
        max_binding_bytes: Some(4096),
        ..Default::default()
    };
    let Some(dev) = common::own_gpu(options) else {
        return;
    };
    let double = CustomKernel::new(
        "double",
        &[("x", DType::F32)],
        &[],
        ("y", DType::F32),
        "y = 2.0 * x;",
    )
    .unwrap();
    let big = Tensor::zeros([2048], DType::F32, &dev).unwrap();
    let e = double
        .call(&[&big.narrow(0, 0, 4).unwrap()], &[])
        .unwrap_err();
    assert!(matches!(e, webtensor::Error::TooLarge { .. }), "{e}");
    let small = Tensor::ones([4], DType::F32, &dev).unwrap();
    let e = double
        .call_into(&big.narrow(0, 0, 4).unwrap(), &[&small], &[])
        .unwrap_err();
    assert!(matches!(e, webtensor::Error::TooLarge { .. }), "{e}");
    let y = double.call(&[&small], &[]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [2.0; 4]);
}

#[test]
fn the_longest_body_compiles_on_a_small_stack() {
    // naga lowers `x+x+...+x` by recursing once per operand: a 64 KiB body
    // took some 20 MiB of the caller's stack and aborted the process (a
    // test's thread has 2 MiB). It compiles on a deep stack of its own.
    let terms = (65536 - "y = x;".len()) / 2;
    let body = format!("y = x{};", "+x".repeat(terms));
    assert_eq!(body.len(), 65536);
    let sum =
        CustomKernel::new("deep", &[("x", DType::F32)], &[], ("y", DType::F32), &body).unwrap();
    let not = format!("y = select(0, 1, {}(x > 0));", "!".repeat(65000));
    let not =
        CustomKernel::new("nots", &[("x", DType::I32)], &[], ("y", DType::I32), &not).unwrap();
    for dev in gpus() {
        let x = Tensor::from_slice(&[1.0f32, -2.0], [2], &dev).unwrap();
        let k = sum.clone();
        let y = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || k.call(&[&x], &[]).and_then(|y| y.to_vec::<f32>()))
            .unwrap()
            .join()
            .unwrap();
        let n = terms as f32 + 1.0;
        assert_eq!(y.unwrap(), [n, -2.0 * n]);
        let x = Tensor::from_slice(&[3i32, -3], [2], &dev).unwrap();
        assert_eq!(
            not.call(&[&x], &[]).unwrap().to_vec::<i32>().unwrap(),
            [1, 0]
        );
    }
    // One byte more than a body may have is refused when it is made.
    let body = format!("y = x;{}", " ".repeat(65536 - 5));
    assert_eq!(body.len(), 65537);
    let e =
        CustomKernel::new("long", &[("x", DType::F32)], &[], ("y", DType::F32), &body).unwrap_err();
    assert!(e.to_string().contains("65537 bytes"), "{e}");
}
