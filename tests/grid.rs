//! Fixed-size grids: indexing, checked access, iteration, map/zip, and
//! conversion to and from tensors on every device (strided views included).

mod common;

use common::devices;
use webtensor::{DType, Error, Grid1, Grid2, Grid3, Grid4, f16, s};

#[test]
fn points_index_row_major() {
    let g = Grid3::<i32, 2, 3, 4>::from_fn(|[a, b, c]| (100 * a + 10 * b + c) as i32);
    assert_eq!(g[[1, 2, 3]], 123);
    assert_eq!(g.as_slice()[..5], [0, 1, 2, 3, 10]);
    assert_eq!(g.as_slice()[12], 100);
    assert_eq!(Grid3::<i32, 2, 3, 4>::SHAPE, [2, 3, 4]);
    assert_eq!(g.shape(), [2, 3, 4]);
    let points: Vec<[usize; 3]> = g.indexed_iter().map(|(p, _)| p).take(5).collect();
    assert_eq!(
        points,
        [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3], [0, 1, 0]]
    );
    assert!(
        g.indexed_iter()
            .all(|([a, b, c], &x)| x == (100 * a + 10 * b + c) as i32)
    );
}

#[test]
fn checked_access_and_panicking_index() {
    let mut g = Grid2::<f32, 2, 3>::default();
    assert_eq!(g.get([1, 2]), Some(&0.0));
    assert_eq!(g.get([2, 0]), None);
    assert_eq!(g.get([0, 3]), None);
    g.set([1, 1], 4.5).unwrap();
    *g.get_mut([0, 2]).unwrap() = -1.0;
    assert_eq!(g.as_slice(), &[0.0, 0.0, -1.0, 0.0, 4.5, 0.0]);
    assert_eq!(
        g.set([1, 7], 1.0),
        Err(Error::Index {
            op: "Grid::set",
            index: 7,
            axis: 1,
            size: 3
        })
    );
    assert!(Grid2::<f32, 2, 3>::contains([1, 2]) && !Grid2::<f32, 2, 3>::contains([2, 2]));
    let caught = std::panic::catch_unwind(|| Grid1::<u8, 3>::default()[[3]]);
    assert!(caught.is_err(), "indexing outside panics like a slice");
}

#[test]
fn fill_map_zip_and_copy_semantics() {
    let mut a = Grid4::<u32, 2, 2, 2, 2>::filled(3);
    let b = a; // Copy: no heap, no sharing
    a.fill(1);
    assert!(b.iter().all(|&x| x == 3) && a.iter().all(|&x| x == 1));
    for (i, x) in a.iter_mut().enumerate() {
        *x = i as u32;
    }
    let halves = a.map(|x| x as f64 / 2.0);
    assert_eq!(halves[[1, 1, 1, 1]], 7.5);
    let both = a.zip(&b, |x, y| (x * y) as i32);
    assert_eq!(both.iter().sum::<i32>(), 3 * (0..16).sum::<i32>());
    // Any Copy + Default element.
    let flags = Grid1::<(bool, char), 2>::filled((true, 'x'));
    assert_eq!(flags[[1]], (true, 'x'));
    assert_eq!(std::mem::size_of::<Grid2<f32, 4, 4>>(), 64);
}

#[test]
fn from_slice_checks_the_length() {
    let g = Grid2::<i32, 2, 2>::from_slice(&[1, 2, 3, 4]).unwrap();
    assert_eq!(g[[1, 0]], 3);
    let e = Grid2::<i32, 2, 2>::from_slice(&[1, 2, 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Shape {
                op: "Grid::from_slice",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn grids_round_trip_through_tensors_on_every_device() {
    for dev in devices() {
        let g = Grid2::<f32, 3, 4>::from_fn(|[i, j]| (i * 4 + j) as f32);
        let t = g.to_tensor(&dev).unwrap();
        assert_eq!(t.dims(), &[3, 4]);
        assert_eq!(t.device(), &dev);
        assert_eq!(Grid2::<f32, 3, 4>::from_tensor(&t).unwrap(), g);
        // A strided view reads back in its own row-major order.
        let tv = t.slice(s![..;-1, 1..;2]).unwrap();
        let v = Grid2::<f32, 3, 2>::from_tensor(&tv).unwrap();
        assert_eq!(v.as_slice(), &[9.0, 11.0, 5.0, 7.0, 1.0, 3.0]);
        // GPU work on the tensor, then back into a grid.
        let doubled = Grid2::<f32, 3, 4>::from_tensor(&t.mul_scalar(2.0).unwrap()).unwrap();
        assert_eq!(doubled, g.map(|x| 2.0 * x));
        let h = Grid1::<f16, 3>::from_fn(|[i]| f16::from_f32(i as f32 + 0.5));
        assert_eq!(
            Grid1::<f16, 3>::from_tensor(&h.to_tensor(&dev).unwrap()).unwrap(),
            h
        );
        let b = Grid3::<bool, 1, 2, 3>::from_fn(|[_, j, k]| (j + k) % 2 == 0);
        assert_eq!(
            Grid3::<bool, 1, 2, 3>::from_tensor(&b.to_tensor(&dev).unwrap()).unwrap(),
            b
        );
        // Mismatches are errors.
        let e = Grid2::<f32, 4, 3>::from_tensor(&t).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Shape {
                    op: "Grid::from_tensor",
                    ..
                }
            ),
            "{e}"
        );
        let e = Grid2::<i32, 3, 4>::from_tensor(&t).unwrap_err();
        assert!(
            matches!(
                e,
                Error::DType {
                    op: "Grid::from_tensor",
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(t.dtype(), DType::F32);
    }
    let f64_grid = Grid1::<f64, 2>::filled(1.0);
    assert!(f64_grid.to_tensor(&webtensor::Device::cpu()).is_ok());
    if let Some(gpu) = common::gpu() {
        assert!(matches!(
            f64_grid.to_tensor(&gpu),
            Err(Error::UnsupportedDType { .. })
        ));
    }
}
