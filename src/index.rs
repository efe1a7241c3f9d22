//! NumPy-style basic indexing: the [`s!`](crate::s) macro and its items.
//!
//! Every item selects without copying, so `t.slice(s![...])` is always a view.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// Inserts a new axis of extent 1 (NumPy's `np.newaxis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAxis;

/// One item of a slicing expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceItem {
    /// Selects one position and removes the axis; negative counts from the end.
    Index(isize),
    /// Selects `start..end` every `step` elements, NumPy semantics: missing
    /// bounds default by the sign of `step`, negative bounds count from the
    /// end, out-of-range bounds are clamped, a negative step walks backwards.
    Range {
        /// First position (inclusive), or the default for the step's sign.
        start: Option<isize>,
        /// Last position (exclusive), or the default for the step's sign.
        end: Option<isize>,
        /// Distance between selected positions; must not be zero.
        step: isize,
    },
    /// Inserts an axis of extent 1.
    NewAxis,
}

impl SliceItem {
    /// Sets the step of a range item (`s![a..b; step]` calls this).
    /// Applied to an index or a new axis it has no meaning and is kept as a
    /// zero-step range so that slicing reports the mistake.
    pub fn with_step(self, step: isize) -> SliceItem {
        match self {
            SliceItem::Range { start, end, .. } => SliceItem::Range { start, end, step },
            _ => SliceItem::Range {
                start: None,
                end: None,
                step: 0,
            },
        }
    }
}

impl From<NewAxis> for SliceItem {
    fn from(_: NewAxis) -> Self {
        SliceItem::NewAxis
    }
}

impl From<RangeFull> for SliceItem {
    fn from(_: RangeFull) -> Self {
        SliceItem::Range {
            start: None,
            end: None,
            step: 1,
        }
    }
}

/// `i` as an `isize`, saturating: a bound past `isize`'s range (a `usize`
/// above `isize::MAX`, an `i64` on a 32-bit target) is still past every
/// axis, as NumPy clamps it, not wrapped to a position counted from the end.
fn bound<T: TryInto<isize> + PartialOrd + Default>(i: T) -> isize {
    let negative = i < T::default();
    i.try_into()
        .unwrap_or(if negative { isize::MIN } else { isize::MAX })
}

/// The exclusive end of a range through `end` (inclusive) walked by
/// `step`: the next position past it that way, or none where that would be
/// past the axis's end (`a..=-1` walking up, `a..=0` walking down).
fn through(end: isize, step: isize) -> Option<isize> {
    match step < 0 {
        false => (end != -1).then(|| end.saturating_add(1)),
        true => (end != 0).then(|| end.saturating_sub(1)),
    }
}

/// An item of `s!` with a step (`s![a..b; k]`): an inclusive range's end
/// stays inclusive whichever way the step walks (`5..=2; -1` is positions
/// 5, 4, 3, 2). Not meant to be called directly.
#[doc(hidden)]
pub trait Stepped {
    fn stepped(self, step: isize) -> SliceItem;

    /// `stepped` with the step of any integer type, saturated to `isize`
    /// as the bounds are (`s!`'s form): a step past `isize`'s range still
    /// walks past the axis after its first position, as NumPy's does, not
    /// wrapped to another step (`usize::MAX as isize` is `-1`).
    fn stepped_by<S: TryInto<isize> + PartialOrd + Default>(self, step: S) -> SliceItem
    where
        Self: Sized,
    {
        self.stepped(bound(step))
    }
}

/// `Stepped` for items whose step only sets the range's (their
/// `SliceItem` then `with_step`).
macro_rules! stepped_by_with_step {
    ($($t:ty),*) => {$(
        impl Stepped for $t {
            fn stepped(self, step: isize) -> SliceItem {
                SliceItem::from(self).with_step(step)
            }
        }
    )*};
}
stepped_by_with_step!(RangeFull, SliceItem, NewAxis);

macro_rules! slice_item_from_ints {
    ($($t:ty),*) => {$(
        impl From<$t> for SliceItem {
            fn from(i: $t) -> Self {
                SliceItem::Index(bound(i))
            }
        }
        impl From<Range<$t>> for SliceItem {
            fn from(r: Range<$t>) -> Self {
                SliceItem::Range { start: Some(bound(r.start)), end: Some(bound(r.end)), step: 1 }
            }
        }
        impl From<RangeFrom<$t>> for SliceItem {
            fn from(r: RangeFrom<$t>) -> Self {
                SliceItem::Range { start: Some(bound(r.start)), end: None, step: 1 }
            }
        }
        impl From<RangeTo<$t>> for SliceItem {
            fn from(r: RangeTo<$t>) -> Self {
                SliceItem::Range { start: None, end: Some(bound(r.end)), step: 1 }
            }
        }
        impl From<RangeInclusive<$t>> for SliceItem {
            fn from(r: RangeInclusive<$t>) -> Self {
                r.stepped(1)
            }
        }
        impl From<RangeToInclusive<$t>> for SliceItem {
            fn from(r: RangeToInclusive<$t>) -> Self {
                r.stepped(1)
            }
        }
        stepped_by_with_step!($t, Range<$t>, RangeFrom<$t>, RangeTo<$t>);
        impl Stepped for RangeInclusive<$t> {
            fn stepped(self, step: isize) -> SliceItem {
                let start = Some(bound(*self.start()));
                SliceItem::Range { start, end: through(bound(*self.end()), step), step }
            }
        }
        impl Stepped for RangeToInclusive<$t> {
            fn stepped(self, step: isize) -> SliceItem {
                SliceItem::Range { start: None, end: through(bound(self.end), step), step }
            }
        }
    )*};
}
slice_item_from_ints!(i32, i64, isize, usize, u32);

/// Builds a slicing expression for [`Tensor::slice`](crate::Tensor::slice),
/// with NumPy's semantics.
///
/// Items, separated by commas:
/// - an integer `i`: select position `i` and drop the axis (`-1` is the last);
/// - a range `a..b`, `a..`, `..b`, `a..=b`, `..`: select a sub-range;
/// - a range with a step `a..b; k`: every `k`-th element; a negative `k` walks
///   backwards (`..; -1` reverses the axis, like NumPy's `::-1`);
/// - `NewAxis`: insert an axis of extent 1.
///
/// Negative steps follow NumPy, not ndarray's `s!`: `a..b; -1` starts at `a`
/// and walks down to just above `b`, as NumPy's `x[a:b:-1]` does, so `3..0;
/// -1` is positions 3, 2, 1 and `1..4; -1` is empty (ndarray would reverse
/// the range `1..4` and give 3, 2, 1); `a..=b; -1` walks down through `b`
/// (`3..=0; -1` is 3, 2, 1, 0). Bounds past `isize` are clamped, as
/// NumPy's past the axis are.
///
/// Axes not mentioned at the end are kept whole.
///
/// ```
/// use webtensor::{s, Device, NewAxis, Tensor};
/// let t = Tensor::arange(0.0f32, 12.0, 1.0, &Device::cpu())?.reshape([3, 4])?;
/// let v = t.slice(s![1.., ..;-2])?;            // rows 1..3, columns 3 and 1
/// assert_eq!(v.to_vec::<f32>()?, vec![7.0, 5.0, 11.0, 9.0]);
/// assert_eq!(t.slice(s![0, 3..0;-1])?.to_vec::<f32>()?, vec![3.0, 2.0, 1.0]);
/// assert_eq!(t.slice(s![0, 1..4;-1])?.numel(), 0); // NumPy's x[0, 1:4:-1]
/// assert_eq!(t.slice(s![0, 3..=0;-1])?.to_vec::<f32>()?, vec![3.0, 2.0, 1.0, 0.0]);
/// assert_eq!(t.slice(s![0, 3..=1;-2])?.to_vec::<f32>()?, vec![3.0, 1.0]);
/// assert_eq!(t.slice(s![-1, NewAxis])?.shape().dims(), &[1, 4]);
/// # Ok::<(), webtensor::Error>(())
/// ```
#[macro_export]
macro_rules! s {
    // NumPy-style `1..-1` is a backwards range to clippy; the statement
    // attribute keeps its lint out of the caller's code.
    (@item $item:expr ; $step:expr) => {{
        #[allow(clippy::reversed_empty_ranges)]
        let item = $crate::Stepped::stepped_by($item, $step);
        item
    }};
    (@item $item:expr) => {{
        #[allow(clippy::reversed_empty_ranges)]
        let item = $crate::SliceItem::from($item);
        item
    }};
    ($($item:expr $(; $step:expr)?),* $(,)?) => {
        [$($crate::s!(@item $item $(; $step)?)),*]
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_builds_items() {
        let items = s![1, 2..5, ..;-1, NewAxis, -3.., ..=2; 2];
        assert_eq!(items[0], SliceItem::Index(1));
        assert_eq!(
            items[1],
            SliceItem::Range {
                start: Some(2),
                end: Some(5),
                step: 1
            }
        );
        assert_eq!(
            items[2],
            SliceItem::Range {
                start: None,
                end: None,
                step: -1
            }
        );
        assert_eq!(items[3], SliceItem::NewAxis);
        assert_eq!(
            items[4],
            SliceItem::Range {
                start: Some(-3),
                end: None,
                step: 1
            }
        );
        assert_eq!(
            items[5],
            SliceItem::Range {
                start: None,
                end: Some(3),
                step: 2
            }
        );
    }

    /// Inclusive ends walked down stay inclusive; bounds past `isize`
    /// saturate.
    #[test]
    fn inclusive_ends_and_wide_bounds() {
        let range = |start, end, step| SliceItem::Range { start, end, step };
        let items = s![5..=2; -1, -1..=0; -1, ..=-2; -2, 1..=-1; 1, ..=-1, 2..=-1; -1];
        assert_eq!(items[0], range(Some(5), Some(1), -1));
        assert_eq!(items[1], range(Some(-1), None, -1));
        assert_eq!(items[2], range(None, Some(-3), -2));
        assert_eq!(items[3], range(Some(1), None, 1));
        assert_eq!(items[4], range(None, None, 1));
        assert_eq!(items[5], range(Some(2), Some(-2), -1));
        let wide = s![..usize::MAX, (u32::MAX as usize)..];
        assert_eq!(wide[0], range(None, Some(isize::MAX), 1));
        assert_eq!(
            SliceItem::from(i64::MIN),
            SliceItem::Index(i64::MIN as isize)
        );
    }
}
