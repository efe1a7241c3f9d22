//! Files and interop on every device: `.npy`, `.npz` and safetensors round
//! trips of every dtype and view layout; files NumPy wrote (tests/data,
//! made by make_numpy_files.py: C and Fortran order, int64, big-endian,
//! f16, c64, compressed archives) read exactly; files written here read
//! back by NumPy itself (python3 with numpy; `WEBTENSOR_REQUIRE_NUMPY=1`,
//! as CI sets, makes a missing NumPy a failure); ndarray conversions;
//! malformed and unrepresentable input as errors naming the op.

mod common;

use common::{devices, read_f32, views_of};
use webtensor::{Complex32, DType, Device, Error, Tensor, bf16, f16, io, s};

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A fresh directory for one test's files, removed with what it holds
/// when dropped (also when the test fails).
struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh directory for this test's files.
fn scratch(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("webtensor-io-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// One tensor of each dtype, each a strided view.
fn every_dtype(dev: &Device) -> Vec<(&'static str, Tensor)> {
    let base = Tensor::arange(-6.0f32, 6.0, 1.0, dev)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let view = base
        .slice(s![..;-1, 1..;2])
        .unwrap()
        .mul_scalar(1.25)
        .unwrap();
    let mut v = vec![
        ("f32", base.t().div_scalar(3.0).unwrap()),
        ("f16", view.to_dtype(DType::F16).unwrap().t()),
        (
            "i32",
            base.to_dtype(DType::I32)
                .unwrap()
                .slice(s![.., ..;-3])
                .unwrap(),
        ),
        ("u32", base.abs().unwrap().to_dtype(DType::U32).unwrap().t()),
        ("u8", base.abs().unwrap().to_dtype(DType::U8).unwrap()),
        ("bool", base.gt_scalar(0.0).unwrap().t()),
        (
            "c64",
            Tensor::complex(&base, &base.neg().unwrap()).unwrap().t(),
        ),
    ];
    if dev.is_cpu() {
        v.push(("f64", base.to_dtype(DType::F64).unwrap().t()));
    }
    v
}

/// The elements of `t` as text, exactly (bits for floats).
fn exact(t: &Tensor) -> Vec<String> {
    match t.dtype() {
        DType::C64 => t
            .to_complex_vec()
            .unwrap()
            .iter()
            .map(|c| format!("{:x}/{:x}", c.re.to_bits(), c.im.to_bits()))
            .collect(),
        DType::F64 => t
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|v| format!("{:x}", v.to_bits()))
            .collect(),
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect(),
        _ => read_f32(&t.to_dtype(DType::F32).unwrap())
            .iter()
            .map(|v| format!("{:x}", v.to_bits()))
            .collect(),
    }
}

fn same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!((a.dims(), a.dtype()), (b.dims(), b.dtype()), "{what}");
    assert_eq!(exact(a), exact(b), "{what}");
}

#[test]
fn every_format_round_trips_every_dtype_and_view() {
    for dev in devices() {
        let tensors = every_dtype(&dev);
        let named: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
        for (name, t) in &tensors {
            let back = io::from_npy_bytes(&io::to_npy_bytes(t).unwrap(), &dev).unwrap();
            same(&back, t, &format!("{dev} npy {name}"));
        }
        let npz = io::from_npz_bytes(&io::to_npz_bytes(&named).unwrap(), &dev).unwrap();
        let st =
            io::from_safetensors_bytes(&io::to_safetensors_bytes(&named).unwrap(), &dev).unwrap();
        // npz keeps the order written; safetensors comes back by name.
        let names: Vec<&str> = npz.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, tensors.iter().map(|(n, _)| *n).collect::<Vec<_>>());
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(st.keys().map(|n| n.as_str()).collect::<Vec<_>>(), sorted);
        assert_eq!((npz.len(), st.len()), (tensors.len(), tensors.len()));
        for (name, t) in &tensors {
            let got = &npz.iter().find(|(n, _)| n == name).unwrap().1;
            same(got, t, &format!("{dev} npz {name}"));
            same(&st[*name], t, &format!("{dev} safetensors {name}"));
        }
        // Files, and a 0-d and an empty tensor.
        let dir = scratch(&format!("files-{}", dev.info().id));
        let scalar = Tensor::full([], 2.5, DType::F32, &dev).unwrap();
        let empty = Tensor::zeros([0, 4], DType::I32, &dev).unwrap();
        io::save_npy(dir.join("s.npy"), &scalar).unwrap();
        same(
            &io::load_npy(dir.join("s.npy"), &dev).unwrap(),
            &scalar,
            "0-d npy",
        );
        io::save_npz(dir.join("a.npz"), &[("s", &scalar), ("e", &empty)]).unwrap();
        let back = io::load_npz(dir.join("a.npz"), &dev).unwrap();
        same(&back[1].1, &empty, "empty npz");
        io::save_safetensors(dir.join("a.safetensors"), &[("e", &empty), ("s", &scalar)]).unwrap();
        let back = io::load_safetensors(dir.join("a.safetensors"), &dev).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["e", "s"]);
        same(&back["s"], &scalar, "0-d safetensors");
        drop(dir);
        // Views of every layout in f16, through npy.
        for (view, t) in views_of(&dev, DType::F16) {
            let back = io::from_npy_bytes(&io::to_npy_bytes(&t).unwrap(), &dev).unwrap();
            same(&back, &t, &format!("{dev} f16 {view}"));
        }
    }
}

/// An archive with members that are not arrays (a JSON file, a folder)
/// loads its arrays: `np.load` hands the others back as bytes, and every
/// member was read as a `.npy` file, which failed the whole archive.
#[test]
fn npz_members_that_are_not_arrays_are_skipped() {
    for dev in devices() {
        let arrays = io::load_npz(data("numpy_with_extras.npz"), &dev).unwrap();
        assert_eq!(arrays.len(), 1, "{dev}");
        assert_eq!(arrays[0].0, "w");
        assert_eq!(arrays[0].1.to_vec::<f32>().unwrap(), [1.5, -2.0]);
    }
}

#[test]
fn npz_names_given_twice_are_the_tensor_np_load_gives() {
    // Appended to (make_numpy_files.py): "w.npy" twice, "v" and "v.npy",
    // and a bzip2 member beside them. np.load's f["w"] is [9] (the last),
    // f["v"] [7] (the exact name) and f["v.npy"] [8] (the key that reaches
    // that member), and the bzip2 member does not stop it.
    for dev in devices() {
        let arrays = io::load_npz(data("numpy_duplicates.npz"), &dev).unwrap();
        let got: Vec<(&str, Vec<f32>)> = arrays
            .iter()
            .map(|(n, t)| (n.as_str(), t.to_vec::<f32>().unwrap()))
            .collect();
        let want = [("w", vec![9.0]), ("v", vec![7.0]), ("v.npy", vec![8.0])];
        assert_eq!(got, want, "{dev}");
    }
}

/// An archive NumPy wrote with arrays webtensor cannot hold beside ones it
/// can (make_mixed_files.py): loading it whole is an error naming the
/// first such array and the file; `io::Npz` reads the others by name, as
/// `np.load` does, and each of the rest is an error naming it.
#[test]
fn npz_arrays_webtensor_lacks_leave_the_others_readable() {
    let path = data("numpy_mixed.npz");
    let e = io::load_npz(&path, &Device::cpu()).unwrap_err().to_string();
    assert!(
        e.starts_with("load_npz:") && e.contains("numpy_mixed.npz") && e.contains("\"labels\""),
        "{e}"
    );
    let npz = io::Npz::open(&path).unwrap();
    let names = [
        "weights", "labels", "spectrum", "stamps", "steps", "means", "deep",
    ];
    assert_eq!(npz.names(), names);
    let bytes = std::fs::read(&path).unwrap();
    let borrowed = io::Npz::from_bytes(&bytes).unwrap();
    assert_eq!(borrowed.names(), names);
    for dev in devices() {
        let w = npz.load("weights", &dev).unwrap();
        assert_eq!(w.dims(), &[2, 2]);
        assert_eq!(w.to_vec::<f32>().unwrap(), [0.5, -1.0, 2.0, 4.25], "{dev}");
        let steps = borrowed.load("steps", &dev).unwrap();
        assert_eq!(steps.to_vec::<i64>().unwrap(), [3, -7], "{dev}");
        // Each array it cannot hold names itself and what it holds.
        for (name, says) in [
            ("labels", "<U3"),
            ("spectrum", "<c16"),
            ("stamps", "<M8[D]"),
            ("deep", "9"),
        ] {
            let e = npz.load(name, &dev).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{name:?}")) && e.contains(says),
                "{dev} {name}: {e}"
            );
        }
        // f64 loads on the CPU; a GPU holds no f64, and says how to load it.
        match npz.load("means", &dev) {
            Ok(m) => {
                assert!(dev.is_cpu());
                assert_eq!(m.to_vec::<f64>().unwrap(), [0.25, -8.5]);
            }
            Err(e) => {
                let text = e.to_string();
                assert!(
                    dev.is_gpu()
                        && matches!(e, Error::DType { .. })
                        && text.contains("\"means\"")
                        && text.contains("f64")
                        && text.contains("CPU"),
                    "{dev}: {text}"
                );
            }
        }
        let e = npz.load("weight", &dev).unwrap_err().to_string();
        assert!(e.contains("\"weight\"") && e.contains("\"weights\""), "{e}");
    }
}

/// Members written by hand (make_mixed_files.py), each read as `np.load`
/// reads it: an array shadowed by a non-array member of its short name is
/// reached by its whole name, a deflate stream without a final block is
/// read, a member deflated to nothing is bytes, a name is cut at a NUL.
/// Errors of an archive opened from a file name the file.
#[test]
fn npz_members_are_reached_by_the_keys_np_load_takes() {
    let path = data("numpy_hand_made.npz");
    let npz = io::Npz::open(&path).unwrap();
    assert_eq!(npz.names(), ["a.npy", "s", "n", "k"]);
    for dev in devices() {
        let a = npz.load("a.npy", &dev).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0, 3.0], "{dev}");
        let s = npz.load("s", &dev).unwrap();
        assert_eq!(s.to_vec::<i32>().unwrap(), [1, -2, 3, 4], "{dev}");
        assert_eq!(npz.load("s.npy", &dev).unwrap().dims(), &[2, 2]);
        let n = npz.load("n", &dev).unwrap();
        assert_eq!(n.to_vec::<f32>().unwrap(), [0.0, 2.0, 4.0, 6.0], "{dev}");
        assert_eq!(
            npz.load("k", &dev).unwrap().to_vec::<bool>().unwrap(),
            [true, false]
        );
        // np.load hands these back as bytes.
        for key in ["a", "e"] {
            let e = npz.load(key, &dev).unwrap_err().to_string();
            assert!(
                e.contains("not an .npy array")
                    && e.contains(&format!("{key:?}"))
                    && e.contains("numpy_hand_made.npz"),
                "{key}: {e}"
            );
        }
        let whole = io::load_npz(&path, &dev).unwrap();
        let names: Vec<&str> = whole.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.npy", "s", "n", "k"], "{dev}");
    }
    // An archive read from a file names it in a member's error; one read
    // from bytes cannot.
    let mixed = io::Npz::open(data("numpy_mixed.npz")).unwrap();
    let e = mixed
        .load("labels", &Device::cpu())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("Npz::load:") && e.contains("numpy_mixed.npz"),
        "{e}"
    );
    let st = io::Safetensors::open(data("mixed_f8.safetensors")).unwrap();
    let e = st.load("scales", &Device::cpu()).unwrap_err().to_string();
    assert!(
        e.starts_with("Safetensors::load:") && e.contains("mixed_f8.safetensors"),
        "{e}"
    );
}

/// A safetensors file with one float8 tensor (make_mixed_files.py): whole,
/// an error naming it and the file; `io::Safetensors` reads the others.
/// A tensor of 2^62 x 0 elements (which PyTorch loads, empty) and an f64
/// tensor onto a GPU are errors naming their tensors.
#[test]
fn safetensors_tensors_webtensor_lacks_leave_the_others_readable() {
    let path = data("mixed_f8.safetensors");
    let e = io::load_safetensors(&path, &Device::cpu())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mixed_f8.safetensors") && e.contains("\"scales\"") && e.contains("F8_E4M3"),
        "{e}"
    );
    let file = io::Safetensors::open(&path).unwrap();
    assert_eq!(file.names(), ["bias", "scales", "table"]);
    for dev in devices() {
        let bias = file.load("bias", &dev).unwrap();
        assert_eq!(bias.to_vec::<f32>().unwrap(), [1.5, -2.0], "{dev}");
        let table = file.load("table", &dev).unwrap();
        assert_eq!(table.dims(), &[2, 3]);
        assert_eq!(table.to_vec::<i32>().unwrap(), [0, 1, 2, 3, 4, 5], "{dev}");
        let e = file.load("scales", &dev).unwrap_err().to_string();
        assert!(e.contains("\"scales\"") && e.contains("F8_E4M3"), "{e}");
        let e = file.load("nothing", &dev).unwrap_err().to_string();
        assert!(e.contains("\"nothing\"") && e.contains("\"bias\""), "{e}");
    }
    let header = "{\"huge\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 0], \"data_offsets\": [0, 0]}, \"x\": {\"dtype\": \"F64\", \"shape\": [1], \"data_offsets\": [0, 8]}}";
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&2.5f64.to_le_bytes());
    let file = io::Safetensors::from_bytes(&bytes).unwrap();
    for dev in devices() {
        let e = file.load("huge", &dev).unwrap_err().to_string();
        assert!(e.contains("\"huge\""), "{dev}: {e}");
        match file.load("x", &dev) {
            Ok(x) => assert_eq!(x.to_vec::<f64>().unwrap(), [2.5]),
            Err(e) => assert!(
                dev.is_gpu() && e.to_string().contains("\"x\"") && e.to_string().contains("f64"),
                "{dev}: {e}"
            ),
        }
    }
}

#[test]
fn saves_to_one_path_at_once_each_write_a_whole_file() {
    // Two threads saving over one path: each save writes a temporary file
    // of its own (they shared one, and a save could report Ok over a file
    // mixing both, or fail its rename), and the file is one of the two.
    let dir = scratch("one_path_at_once");
    let path = dir.join("latest.npy");
    let cpu = Device::cpu();
    let long = Tensor::full([50_000], 1.0, DType::F32, &cpu).unwrap();
    let short = Tensor::full([10], 2.0, DType::F32, &cpu).unwrap();
    std::thread::scope(|scope| {
        for t in [&long, &short] {
            let path = &path;
            scope.spawn(move || {
                for _ in 0..40 {
                    io::save_npy(path, t).unwrap();
                }
            });
        }
    });
    let back = io::load_npy(&path, &cpu).unwrap().to_vec::<f32>().unwrap();
    assert!(
        back == [1.0; 50_000] || back == [2.0; 10],
        "{} values",
        back.len()
    );
    let left: Vec<_> = std::fs::read_dir(&*dir).unwrap().collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}

#[test]
fn files_numpy_wrote_read_exactly() {
    for dev in devices() {
        for file in ["numpy_arrays.npz", "numpy_compressed.npz"] {
            let arrays = io::load_npz(data(file), &Device::cpu()).unwrap();
            let get = |name: &str| -> Tensor {
                let t = &arrays.iter().find(|(n, _)| n == name).unwrap().1;
                // f64 stays on the CPU (no GPU holds it).
                if t.dtype() == DType::F64 && dev.is_gpu() {
                    t.clone()
                } else {
                    t.to_device(&dev).unwrap()
                }
            };
            assert_eq!(
                get("c_f32").to_vec::<f32>().unwrap(),
                [0.0, 0.25, 0.5, 0.75, 1.0, 1.25],
                "{file}"
            );
            let f = get("fortran_f64");
            assert_eq!(f.dims(), &[3, 4]);
            assert_eq!(f.strides(), &[1, 3], "a Fortran file is a view, not a copy");
            let want: Vec<f64> = (0..12).map(|k| k as f64 - 5.5).collect();
            assert_eq!(f.to_vec::<f64>().unwrap(), want);
            // NumPy's default int64 loads as i64, without narrowing.
            let i = get("default_int");
            assert_eq!(i.dtype(), DType::I64);
            assert_eq!(
                i.to_vec::<i64>().unwrap(),
                [-3, 0, 7, i32::MAX as i64, i32::MIN as i64, 1]
            );
            assert_eq!(get("flags").to_vec::<bool>().unwrap(), [true, false, true]);
            assert_eq!(
                get("waves").to_complex_vec().unwrap(),
                [
                    Complex32::new(1.0, 2.0),
                    Complex32::new(-0.5, -1.25),
                    Complex32::new(0.0, 3.0)
                ]
            );
            assert_eq!(
                get("big_endian").to_vec::<f32>().unwrap(),
                [-1.5, -0.5, 0.5, 1.5]
            );
            assert_eq!(
                get("halves").to_vec::<f16>().unwrap(),
                [f16::from_f64(0.1), f16::from_f32(-2.5), f16::MAX]
            );
            let u = get("scalar_u8");
            assert_eq!((u.rank(), u.item::<u8>().unwrap()), (0, 200));
            assert_eq!(get("small_ints").to_vec::<i32>().unwrap(), [-128, 5, 127]);
            assert_eq!(get("shorts").to_vec::<u32>().unwrap(), [0, 65535]);
            assert_eq!(get("empty").dims(), &[0, 3]);
        }
    }
    let f = io::load_npy(data("numpy_fortran.npy"), &Device::cpu()).unwrap();
    assert_eq!(
        (f.dims(), f.strides()),
        (&[3usize, 4][..], &[1isize, 3][..])
    );
}

#[test]
fn bad_files_are_errors_naming_the_op() {
    let cpu = Device::cpu();
    // int64 past i32 loads as i64, on every device.
    for dev in devices() {
        let wide = io::load_npy(data("numpy_too_wide.npy"), &dev).unwrap();
        assert_eq!(wide.to_vec::<i64>().unwrap(), [1, 1 << 40], "{dev}");
    }
    // uint64 past u32 has no dtype here.
    let mut too_wide = io::to_npy_bytes(&Tensor::zeros([2], DType::U32, &cpu).unwrap()).unwrap();
    let at = too_wide.windows(3).position(|w| w == b"<u4").unwrap();
    too_wide[at + 2] = b'8';
    too_wide.truncate(too_wide.len() - 8);
    too_wide.extend_from_slice(&7u64.to_le_bytes());
    too_wide.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let e = io::from_npy_bytes(&too_wide, &cpu).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Format {
                op: "from_npy_bytes",
                ..
            }
        ) && e.to_string().contains("1099511627776"),
        "{e}"
    );
    let e = io::load_npy(data("numpy_complex128.npy"), &cpu).unwrap_err();
    assert!(
        e.to_string().contains("c16") && e.to_string().contains("numpy_complex128.npy"),
        "{e}"
    );
    // A header of 9 axes (np.save of np.zeros([1] * 9)): Format, as the
    // docs say of data no tensor holds (it was Shape).
    let mut nine = io::to_npy_bytes(&Tensor::zeros([1; 8], DType::F32, &cpu).unwrap()).unwrap();
    let at = nine.windows(3).position(|w| w == b"1, ").unwrap();
    nine.splice(at..at, b"1, ".iter().copied());
    // Three of the padding's spaces out: the header keeps its length.
    let end = nine.iter().position(|&b| b == b'\n').unwrap();
    assert_eq!(&nine[end - 3..end], b"   ");
    nine.drain(end - 3..end);
    let e = io::from_npy_bytes(&nine, &cpu).unwrap_err();
    assert!(
        matches!(e, Error::Format { .. }) && e.to_string().contains("9 axes"),
        "{e}"
    );
    // An archive of a bf16 array names itself and the array, before any
    // is read back.
    let half = Tensor::zeros([2], DType::BF16, &cpu).unwrap();
    let e = io::to_npz_bytes(&[("weights", &half)]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DType {
                op: "to_npz_bytes",
                ..
            }
        ) && e.to_string().contains("weights"),
        "{e}"
    );
    // Each loader's format errors name the file, of those a program loads.
    let dir = scratch("malformed");
    let garbage = b"not a tensor file at all, but long enough to be read as one".to_vec();
    type Load = fn(&std::path::Path) -> webtensor::Result<()>;
    let loads: [(&str, Load); 4] = [
        ("x.npy", |p| io::load_npy(p, &Device::cpu()).map(drop)),
        ("x.npz", |p| io::load_npz(p, &Device::cpu()).map(drop)),
        ("x.safetensors", |p| {
            io::load_safetensors(p, &Device::cpu()).map(drop)
        }),
        ("x.gguf", |p| io::Gguf::load(p).map(drop)),
    ];
    for (name, load) in loads {
        let path = dir.join(name);
        std::fs::write(&path, &garbage).unwrap();
        let e = load(&path).unwrap_err();
        assert!(
            matches!(e, Error::Format { .. }) && e.to_string().contains(&*path.to_string_lossy()),
            "{name}: {e}"
        );
    }
    drop(dir);
    let e = io::load_npy(data("no_such_file.npy"), &cpu).unwrap_err();
    assert!(
        matches!(e, Error::Io { op: "load_npy", .. }) && e.to_string().contains("no_such_file.npy"),
        "{e}"
    );
    let good = io::to_npy_bytes(&Tensor::zeros([3], DType::F32, &cpu).unwrap()).unwrap();
    for (what, bytes) in [
        ("empty", vec![]),
        ("truncated data", good[..good.len() - 1].to_vec()),
        ("truncated header", good[..12].to_vec()),
        ("not npy", b"hello world, not a file".to_vec()),
        // np.load reads versions 1.0, 2.0 and 3.0 only ("Invalid version").
        ("version 1.5", [&good[..7], &[5], &good[8..]].concat()),
        ("version 4.0", [&good[..6], &[4], &good[7..]].concat()),
    ] {
        let e = io::from_npy_bytes(&bytes, &cpu).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Format {
                    op: "from_npy_bytes",
                    ..
                }
            ),
            "{what}: {e}"
        );
    }
    // As NumPy: bytes past the array's are left (two arrays saved one after
    // the other); a descr without a byte order is the host's; `(3)` is an
    // integer, not a shape.
    let edit = |from: &str, to: &str| {
        let mut bytes = good.clone();
        let at = (bytes.windows(from.len()))
            .position(|w| w == from.as_bytes())
            .unwrap();
        bytes.splice(at..at + from.len(), to.bytes());
        bytes
    };
    let mut twice = good.clone();
    twice.extend_from_slice(&good);
    assert_eq!(io::from_npy_bytes(&twice, &cpu).unwrap().dims(), &[3]);
    let native = io::from_npy_bytes(&edit("'<f4'", "'f4' "), &cpu).unwrap();
    assert_eq!(native.dtype(), DType::F32);
    let e = io::from_npy_bytes(&edit("(3,)", "(3) "), &cpu).unwrap_err();
    assert!(e.to_string().contains("comma"), "{e}");
    let e = io::from_npz_bytes(&good, &cpu).unwrap_err();
    assert!(e.to_string().contains("from_npz_bytes"), "{e}");
    let e = io::from_safetensors_bytes(&good, &cpu).unwrap_err();
    assert!(e.to_string().contains("from_safetensors_bytes"), "{e}");
    let t = Tensor::zeros([2], DType::F32, &cpu).unwrap();
    let e = io::to_safetensors_bytes(&[("w", &t), ("w", &t)]).unwrap_err();
    assert!(e.to_string().contains("\"w\""), "{e}");
    // f64 cannot go to a GPU: a dtype the loader cannot put there, saying
    // how to load it.
    if let Some(gpu) = common::gpu() {
        let bytes = io::to_npy_bytes(&Tensor::zeros([2], DType::F64, &cpu).unwrap()).unwrap();
        let e = io::from_npy_bytes(&bytes, &gpu).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, Error::DType { .. })
                && text.starts_with("from_npy_bytes:")
                && text.contains("f64")
                && text.contains("CPU"),
            "{text}"
        );
    }
}

/// A safetensors file with one bf16 tensor, written by hand: it loads as
/// bf16, bit for bit (NaN's payload too), and saves back to the same bytes;
/// `.npy` has no bf16 dtype and refuses it.
#[test]
fn bf16_safetensors_load_as_bf16_and_save_back() {
    let bits: [u16; 6] = [0x3f80, 0xc020, 0x4049, 0x7f80, 0x0001, 0x7fc1];
    let header = r#"{"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}}"#;
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    for b in bits {
        file.extend_from_slice(&b.to_le_bytes());
    }
    for dev in devices() {
        let t = io::from_safetensors_bytes(&file, &dev).unwrap();
        assert_eq!(t.len(), 1);
        let w = &t["w"];
        assert_eq!(w.dtype(), DType::BF16);
        let bits_of = |t: &Tensor| -> Vec<u16> {
            t.to_vec::<bf16>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits_of(w), bits, "{dev}");
        let saved = io::to_safetensors_bytes(&[("w", w)]).unwrap();
        assert_eq!(saved[saved.len() - 12..], file[file.len() - 12..]);
        let back = io::from_safetensors_bytes(&saved, &dev).unwrap();
        assert_eq!(back["w"].dtype(), DType::BF16);
        assert_eq!(bits_of(&back["w"]), bits, "{dev}");
        // A view is written in row-major order.
        let col = io::to_safetensors_bytes(&[("c", &w.t())]).unwrap();
        let col = io::from_safetensors_bytes(&col, &dev).unwrap();
        assert_eq!(col["c"].dims(), &[3, 2]);
        assert_eq!(
            col["c"].to_vec::<bf16>().unwrap()[1].to_bits(),
            0x7f80,
            "{dev}"
        );
        let err = io::to_npy_bytes(w).unwrap_err();
        assert!(
            matches!(
                err,
                Error::DType {
                    op: "to_npy_bytes",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("bf16"), "{err}");
    }
}

#[test]
fn files_written_here_load_in_numpy() {
    let has_numpy = std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_numpy {
        assert!(
            std::env::var("WEBTENSOR_REQUIRE_NUMPY").as_deref() != Ok("1"),
            "WEBTENSOR_REQUIRE_NUMPY=1 but python3 cannot import numpy"
        );
        eprintln!(
            "python3 with numpy is not here: files are checked against NumPy's own files only"
        );
        return;
    }
    let dev = common::gpu().unwrap_or_else(Device::cpu);
    let dir = scratch("numpy");
    let base = Tensor::arange(0i32, 24, 1, &dev)
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap();
    let view = base.slice(s![.., ..;-1, 1..;2]).unwrap();
    let h = view.to_dtype(DType::F16).unwrap().div_scalar(8.0).unwrap();
    let z = Tensor::complex(
        &view.to_dtype(DType::F32).unwrap(),
        &Tensor::ones([2, 3, 2], DType::F32, &dev).unwrap(),
    )
    .unwrap();
    io::save_npy(dir.join("view.npy"), &view).unwrap();
    io::save_npz(
        dir.join("all.npz"),
        &[
            ("h", &h),
            ("z", &z),
            ("b", &view.gt_scalar(10).unwrap()),
            ("é", &view),
        ],
    )
    .unwrap();
    let script = r#"
import sys, numpy as np
d = sys.argv[1]
base = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
view = base[:, ::-1, 1::2]
v = np.load(d + "/view.npy")
assert v.dtype == np.int32 and (v == view).all(), v
a = np.load(d + "/all.npz")
assert a["h"].dtype == np.float16 and (a["h"] == view.astype(np.float16) / np.float16(8)).all()
assert a["z"].dtype == np.complex64 and (a["z"] == view + 1j).all()
assert a["b"].dtype == np.bool_ and (a["b"] == (view > 10)).all()
assert (a["\u00e9"] == view).all(), a.files
print("numpy read them")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .unwrap();
    drop(dir);
    assert!(
        out.status.success(),
        "NumPy refused the files: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ndarray_arrays_convert_both_ways() {
    use ndarray::{Array2, Array3, s as nd};
    for dev in devices() {
        let a = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32);
        // Negative strides and an offset, moved onto the device.
        let flipped = a.clone().slice_move(nd![..;-1, 1..;2]);
        let want: Vec<f32> = flipped.iter().copied().collect();
        let t = Tensor::from_ndarray(flipped, &dev).unwrap();
        assert_eq!(t.to_vec::<f32>().unwrap(), want, "{dev}");
        if dev.is_cpu() {
            assert_eq!(t.strides(), &[-4, 2], "the array's own layout, no copy");
        }
        let view = a.slice(nd![1.., ..;-3]);
        let v = Tensor::from_ndarray_view(&view, &dev).unwrap();
        assert_eq!(
            v.to_vec::<f32>().unwrap(),
            view.iter().copied().collect::<Vec<_>>()
        );
        let back = t.t().to_ndarray::<f32>().unwrap();
        assert_eq!(back.shape(), &[2, 3]);
        assert_eq!(back[[1, 0]], want[1]);
        let b = Array3::from_shape_fn((2, 2, 2), |(i, j, k)| i + j + k > 1);
        assert_eq!(
            Tensor::from_ndarray(b.clone(), &dev)
                .unwrap()
                .to_ndarray::<bool>()
                .unwrap(),
            b.into_dyn()
        );
        assert!(
            t.to_ndarray::<i32>()
                .unwrap_err()
                .to_string()
                .contains("dtype")
        );
    }
    let nine = ndarray::ArrayD::<f32>::zeros(ndarray::IxDyn(&[1; 9]));
    let e = Tensor::from_ndarray(nine, &Device::cpu()).unwrap_err();
    assert!(e.to_string().contains("from_ndarray"), "{e}");
}

/// Files PyTorch wrote (tests/data/make_torch_files.py): bf16 loads as
/// bf16, bit for bit; this library's bf16 products, sums and casts from f32
/// are PyTorch's, bit for bit, on every device; saved again, the bf16 bytes
/// are the file's. int64 loads as i64 on the CPU, whole.
#[test]
fn pytorch_bf16_and_int64_safetensors_load_and_compute_as_pytorch() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let file = std::fs::read(data.join("torch_dtypes.safetensors")).unwrap();
    // NaN's payload is the device's; NaN is all that must match.
    let bits_of = |t: &Tensor| -> Vec<u16> {
        let v = t.to_vec::<bf16>().unwrap();
        v.iter()
            .map(|x| if x.is_nan() { 0x7fc0 } else { x.to_bits() })
            .collect()
    };
    // Loaded on the CPU, each tensor then moved.
    let cpu = Device::cpu();
    let loaded = io::from_safetensors_bytes(&file, &cpu).unwrap();
    let on_cpu = |name: &str| loaded[name].clone();
    let ids = on_cpu("ids");
    assert_eq!(ids.dtype(), DType::I64);
    let (max, min) = (i32::MAX as i64, i32::MIN as i64);
    assert_eq!(
        ids.to_vec::<i64>().unwrap(),
        [0, 17, 50256, max, min, 3, 9, 1]
    );
    for dev in devices() {
        let get = |name: &str| on_cpu(name).to_device(&dev).unwrap();
        let (w, v) = (get("w"), get("v"));
        assert_eq!(w.dtype(), DType::BF16);
        let widened = w.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        let want = get("w_f32").to_vec::<f32>().unwrap();
        for (a, b) in widened.iter().zip(&want) {
            assert!(
                a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan(),
                "{dev}"
            );
        }
        assert_eq!(
            bits_of(&w.mul(&v).unwrap()),
            bits_of(&get("w_times_v")),
            "{dev} w * v"
        );
        assert_eq!(
            bits_of(&w.add(&v).unwrap()),
            bits_of(&get("w_plus_v")),
            "{dev} w + v"
        );
        let cast = get("x_f32").to_dtype(DType::BF16).unwrap();
        assert_eq!(
            bits_of(&cast),
            bits_of(&get("x_to_bf16")),
            "{dev} f32 to bf16"
        );
        let saved = io::to_safetensors_bytes(&[("w", &w)]).unwrap();
        let payload = &saved[saved.len() - 128..];
        assert!(
            file.windows(128).any(|x| x == payload),
            "{dev}: w saved as read"
        );
    }
    let file = std::fs::read(data.join("torch_i64_big.safetensors")).unwrap();
    let big = &io::from_safetensors_bytes(&file, &cpu).unwrap()["big"];
    assert_eq!(big.to_vec::<i64>().unwrap(), [1 << 40, -(1 << 33) - 5, 7]);
    let saved = io::to_safetensors_bytes(&[("big", big)]).unwrap();
    assert_eq!(saved[saved.len() - 24..], file[file.len() - 24..]);
}

/// Files are written beside their path and renamed over it: a save over
/// an existing file replaces it whole, and a save that fails leaves no
/// partial file behind (nor the path's old contents truncated: a full
/// disk, which no test here can make, failed `std::fs::write` midway).
#[test]
fn saves_replace_files_whole_and_leave_nothing_when_they_fail() {
    let dev = Device::cpu();
    let dir = scratch("replace");
    let path = dir.join("x.npy");
    for n in [5usize, 2] {
        let t = Tensor::arange(0.0f32, n as f32, 1.0, &dev).unwrap();
        io::save_npy(&path, &t).unwrap();
        assert_eq!(io::load_npy(&path, &dev).unwrap().dims(), &[n]);
    }
    // A directory where the file should go: the rename fails.
    std::fs::create_dir_all(dir.join("taken.npy")).unwrap();
    let t = Tensor::zeros([3], DType::F32, &dev).unwrap();
    let e = io::save_npy(dir.join("taken.npy"), &t).unwrap_err();
    assert!(matches!(e, Error::Io { op: "save_npy", .. }), "{e}");
    let left: Vec<_> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(left.iter().all(|n| !n.contains("partial")), "{left:?}");
}

/// Python's zipfile ends a member's name at a NUL, so `np.load` would find
/// two arrays under one name and reach only one: refused.
#[test]
fn npz_names_holding_a_nul_are_refused() {
    let t = Tensor::zeros([2], DType::F32, &Device::cpu()).unwrap();
    match io::to_npz_bytes(&[("w\0a", &t), ("w\0b", &t)]) {
        Err(Error::Format { op, msg }) => {
            assert_eq!(op, "to_npz_bytes");
            assert!(msg.contains("NUL"), "{msg}");
        }
        other => panic!("{:?}", other.map(|b| b.len())),
    }
}
