//! Fixed-size grids for small low-rank data: [`Grid1`] to [`Grid4`].
//!
//! A [`Tensor`] is a handle with a shape known at run time, shared storage
//! and a device; for a 4 x 4 matrix read and written element by element that
//! is all overhead. A grid's extents are const generics, its elements live
//! inline in nested arrays (no heap, `Copy` when the element is), and
//! `grid[[i, j]]` compiles to a direct array access. Grids convert to tensors
//! on any device and back.
//!
//! Points are plain arrays, one index per axis, outermost first. Indexing
//! with `[]` panics outside the grid as slice indexing does; [`Grid2::get`]
//! and [`Grid2::set`] (and their siblings on the other ranks) check instead.

use crate::device::Device;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;
use std::ops::{Index, IndexMut};

/// A point of a grid of rank `D`: one index per axis, outermost first.
pub type Point<const D: usize> = [usize; D];

macro_rules! grid_type {
    (
        $(#[$meta:meta])*
        $name:ident, $rank:literal, [$($dim:ident),+], [$($k:tt),+],
        $array:ty, $value:ident => $filled:expr, $data:ident => $flat:expr, $flat_mut:expr
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name<T, $(const $dim: usize),+> {
            data: $array,
        }

        impl<T: Copy + Default, $(const $dim: usize),+> Default for $name<T, $($dim),+> {
            fn default() -> Self {
                Self::filled(T::default())
            }
        }

        impl<T: Copy + Default, $(const $dim: usize),+> $name<T, $($dim),+> {
            /// The extents, outermost first.
            pub const SHAPE: Point<$rank> = [$($dim),+];
            /// The number of elements.
            pub const LEN: usize = 1 $(* $dim)+;

            /// A grid with every element `value`.
            pub fn filled($value: T) -> Self {
                Self { data: $filled }
            }

            /// A grid whose element at each point is `f(point)`.
            pub fn from_fn(mut f: impl FnMut(Point<$rank>) -> T) -> Self {
                let mut g = Self::default();
                for (i, x) in g.as_mut_slice().iter_mut().enumerate() {
                    *x = f(Self::point_of(i));
                }
                g
            }

            /// A grid holding `values` in row-major order.
            ///
            /// # Errors
            /// `Error::Shape` when `values` does not hold exactly
            /// [`Self::LEN`] elements.
            pub fn from_slice(values: &[T]) -> Result<Self> {
                if values.len() != Self::LEN {
                    return Err(Error::shape(
                        "Grid::from_slice",
                        format!(
                            "{} values for a grid of shape {:?} ({} elements)",
                            values.len(),
                            Self::SHAPE,
                            Self::LEN
                        ),
                    ));
                }
                let mut g = Self::default();
                g.as_mut_slice().copy_from_slice(values);
                Ok(g)
            }

            /// The extents, outermost first.
            pub fn shape(&self) -> Point<$rank> {
                Self::SHAPE
            }

            /// The element at `p`, or `None` outside the grid.
            #[inline]
            pub fn get(&self, p: Point<$rank>) -> Option<&T> {
                if Self::contains(p) { Some(&self.data$([p[$k]])+) } else { None }
            }

            /// The element at `p` for writing, or `None` outside the grid.
            #[inline]
            pub fn get_mut(&mut self, p: Point<$rank>) -> Option<&mut T> {
                if Self::contains(p) { Some(&mut self.data$([p[$k]])+) } else { None }
            }

            /// Writes `value` at `p`.
            ///
            /// # Errors
            /// `Error::Index` naming the first axis `p` falls outside.
            #[inline]
            pub fn set(&mut self, p: Point<$rank>, value: T) -> Result<()> {
                match self.get_mut(p) {
                    Some(x) => {
                        *x = value;
                        Ok(())
                    }
                    None => Err(Self::outside(p)),
                }
            }

            /// True when `p` lies inside the grid.
            #[inline]
            pub fn contains(p: Point<$rank>) -> bool {
                true $(&& p[$k] < Self::SHAPE[$k])+
            }

            fn outside(p: Point<$rank>) -> Error {
                let axis = (0..$rank).find(|&a| p[a] >= Self::SHAPE[a]).unwrap_or(0);
                Error::Index {
                    op: "Grid::set",
                    index: isize::try_from(p[axis]).unwrap_or(isize::MAX),
                    axis,
                    size: Self::SHAPE[axis],
                }
            }

            /// The point of row-major position `i`.
            fn point_of(mut i: usize) -> Point<$rank> {
                let mut p = [0; $rank];
                for a in (0..$rank).rev() {
                    p[a] = i % Self::SHAPE[a];
                    i /= Self::SHAPE[a];
                }
                p
            }

            /// The elements in row-major order.
            pub fn as_slice(&self) -> &[T] {
                let $data = &self.data;
                $flat
            }

            /// The elements in row-major order, for writing.
            pub fn as_mut_slice(&mut self) -> &mut [T] {
                let $data = &mut self.data;
                $flat_mut
            }

            /// The elements in row-major order.
            pub fn iter(&self) -> std::slice::Iter<'_, T> {
                self.as_slice().iter()
            }

            /// The elements in row-major order, for writing.
            pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
                self.as_mut_slice().iter_mut()
            }

            /// Every point with its element, in row-major order.
            pub fn indexed_iter(&self) -> impl Iterator<Item = (Point<$rank>, &T)> {
                self.iter().enumerate().map(|(i, x)| (Self::point_of(i), x))
            }

            /// Sets every element to `value`.
            pub fn fill(&mut self, value: T) {
                self.as_mut_slice().fill(value);
            }

            /// A grid of `f(x)` for every element `x`.
            pub fn map<U: Copy + Default>(&self, mut f: impl FnMut(T) -> U) -> $name<U, $($dim),+> {
                let mut out = $name::<U, $($dim),+>::default();
                for (o, &x) in out.as_mut_slice().iter_mut().zip(self.as_slice()) {
                    *o = f(x);
                }
                out
            }

            /// A grid of `f(x, y)` for the elements at each point of this
            /// grid and `other`.
            pub fn zip<U: Copy + Default, V: Copy + Default>(
                &self,
                other: &$name<U, $($dim),+>,
                mut f: impl FnMut(T, U) -> V,
            ) -> $name<V, $($dim),+> {
                let mut out = $name::<V, $($dim),+>::default();
                let pairs = self.as_slice().iter().zip(other.as_slice());
                for (o, (&x, &y)) in out.as_mut_slice().iter_mut().zip(pairs) {
                    *o = f(x, y);
                }
                out
            }
        }

        impl<T: Element + Default, $(const $dim: usize),+> $name<T, $($dim),+> {
            /// A contiguous tensor of this grid's shape and elements on `device`.
            ///
            /// # Errors
            /// As [`Tensor::from_slice`] (e.g. f64 on the GPU).
            pub fn to_tensor(&self, device: &Device) -> Result<Tensor> {
                Tensor::from_slice(self.as_slice(), Self::SHAPE, device)
            }

            /// The grid holding `t`'s elements (any layout, any device),
            /// blocking (native only; use [`Self::from_tensor_async`] on wasm).
            ///
            /// # Errors
            /// `Error::Shape` when `t`'s shape is not [`Self::SHAPE`];
            /// `Error::DType` when its dtype is not `T`'s; readback failures.
            #[cfg(not(target_arch = "wasm32"))]
            pub fn from_tensor(t: &Tensor) -> Result<Self> {
                pollster::block_on(Self::from_tensor_async(t))
            }

            /// [`Self::from_tensor`] for every target.
            ///
            /// # Errors
            /// As [`Self::from_tensor`].
            pub async fn from_tensor_async(t: &Tensor) -> Result<Self> {
                if t.shape() != &Shape::from(&Self::SHAPE[..]) {
                    return Err(Error::shape(
                        "Grid::from_tensor",
                        format!("tensor of shape {} for a grid of shape {:?}", t.shape(), Self::SHAPE),
                    ));
                }
                let values = t.to_vec_async::<T>().await;
                Self::from_slice(&values.map_err(|e| e.named("Grid::from_tensor"))?)
            }
        }

        impl<T, $(const $dim: usize),+> Index<Point<$rank>> for $name<T, $($dim),+> {
            type Output = T;
            /// # Panics
            /// Outside the grid, as slice indexing does.
            #[inline(always)]
            fn index(&self, p: Point<$rank>) -> &T {
                &self.data$([p[$k]])+
            }
        }

        impl<T, $(const $dim: usize),+> IndexMut<Point<$rank>> for $name<T, $($dim),+> {
            /// # Panics
            /// Outside the grid, as slice indexing does.
            #[inline(always)]
            fn index_mut(&mut self, p: Point<$rank>) -> &mut T {
                &mut self.data$([p[$k]])+
            }
        }

        impl<T: Copy + Default + std::fmt::Debug, $(const $dim: usize),+> std::fmt::Debug
            for $name<T, $($dim),+>
        {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{:?}{:?}", stringify!($name), Self::SHAPE, self.as_slice())
            }
        }
    };
}

grid_type!(
    /// A fixed-size 1-D grid of `A` elements, stored inline.
    ///
    /// ```
    /// use webtensor::Grid1;
    /// let mut g = Grid1::<f32, 4>::from_fn(|[i]| i as f32);
    /// g[[3]] += 10.0;
    /// assert_eq!(g.as_slice(), &[0.0, 1.0, 2.0, 13.0]);
    /// assert!(g.get([4]).is_none());
    /// ```
    Grid1, 1, [A], [0], [T; A], v => [v; A], d => &d[..], &mut d[..]
);

grid_type!(
    /// A fixed-size `R` x `C` grid, stored inline in row-major order.
    ///
    /// ```
    /// use webtensor::{Device, Grid2};
    /// let mut g = Grid2::<i32, 2, 3>::default();
    /// g[[1, 2]] = 7;
    /// g.set([0, 0], 1)?;
    /// assert_eq!(g.as_slice(), &[1, 0, 0, 0, 0, 7]);
    /// let t = g.to_tensor(&Device::cpu())?;            // a [2, 3] tensor
    /// let back = Grid2::<i32, 2, 3>::from_tensor(&t.t().t())?;
    /// assert_eq!(back, g);
    /// assert!(Grid2::<i32, 3, 2>::from_tensor(&t).is_err()); // shape mismatch
    /// # Ok::<(), webtensor::Error>(())
    /// ```
    Grid2, 2, [R, C], [0, 1], [[T; C]; R], v => [[v; C]; R],
    d => d.as_flattened(), d.as_flattened_mut()
);

grid_type!(
    /// A fixed-size `A` x `B` x `C` grid, stored inline in row-major order.
    ///
    /// ```
    /// use webtensor::Grid3;
    /// let g = Grid3::<u32, 2, 2, 2>::from_fn(|[i, j, k]| (4 * i + 2 * j + k) as u32);
    /// let doubled = g.map(|x| x * 2);
    /// assert_eq!(doubled[[1, 1, 1]], 14);
    /// let sum = g.zip(&doubled, |a, b| a + b);
    /// assert_eq!(sum.iter().sum::<u32>(), 3 * 28);
    /// ```
    Grid3, 3, [A, B, C], [0, 1, 2], [[[T; C]; B]; A], v => [[[v; C]; B]; A],
    d => d.as_flattened().as_flattened(), d.as_flattened_mut().as_flattened_mut()
);

grid_type!(
    /// A fixed-size `A` x `B` x `C` x `D` grid, stored inline in row-major
    /// order.
    ///
    /// ```
    /// use webtensor::Grid4;
    /// let mut g = Grid4::<f64, 2, 3, 4, 5>::filled(0.5);
    /// g.fill(1.0);
    /// g[[1, 2, 3, 4]] = 2.0;
    /// assert_eq!(g.iter().sum::<f64>(), 121.0);
    /// let (p, _) = g.indexed_iter().find(|(_, x)| **x == 2.0).unwrap();
    /// assert_eq!(p, [1, 2, 3, 4]);
    /// assert_eq!(Grid4::<f64, 2, 3, 4, 5>::LEN, 120);
    /// ```
    Grid4, 4, [A, B, C, D], [0, 1, 2, 3], [[[[T; D]; C]; B]; A], v => [[[[v; D]; C]; B]; A],
    d => d.as_flattened().as_flattened().as_flattened(),
    d.as_flattened_mut().as_flattened_mut().as_flattened_mut()
);
