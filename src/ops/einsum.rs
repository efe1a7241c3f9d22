//! `einsum`, NumPy's Einstein summation: subscripts parsed (letters, one
//! `...` an operand, an explicit `->` output or NumPy's implicit one), each
//! operand's repeated labels taken as diagonals (views) and its own labels
//! summed out, then operands contracted two at a time, the pair whose
//! result is smallest first (NumPy's `optimize='greedy'` in spirit): each
//! contraction is a batched product over permuted, reshaped views, so no
//! outer product of more than two operands is ever made.

use crate::DType;
use crate::error::{Error, Result};
use crate::shape::MAX_RANK;
use crate::tensor::Tensor;
use std::collections::BTreeSet;

const OP: &str = "einsum";

/// A label: a letter's byte, or `128 + k` for the `k`-th axis from the
/// right of the broadcast `...`.
type Label = u16;

const ELLIPSIS: Label = 128;

/// The subscripts of one operand or of the output: labels, and where the
/// `...` stands (an index into the labels), if it does.
#[derive(Debug, Clone)]
struct Term {
    labels: Vec<Label>,
    ellipsis: Option<usize>,
}

fn bad(msg: String) -> Error {
    Error::argument(OP, msg)
}

fn parse_term(text: &str) -> Result<Term> {
    let mut labels = Vec::new();
    let mut ellipsis = None;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if ellipsis.replace(labels.len()).is_some() {
                return Err(bad(format!("{text:?} has two '...'")));
            }
            rest = after;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(bad(format!(
                "{c:?} in {text:?} is not a subscript (letters and '...')"
            )));
        }
        labels.push(c as Label);
        rest = &rest[1..];
    }
    Ok(Term { labels, ellipsis })
}

/// The operands' terms and the output's, `...` expanded to labels of
/// their own (`dims` are the operands' extents).
fn parse(subscripts: &str, dims: &[&[usize]]) -> Result<(Vec<Vec<Label>>, Vec<Label>)> {
    let text: String = subscripts.chars().filter(|c| !c.is_whitespace()).collect();
    let (inputs, output) = match text.split_once("->") {
        Some((i, o)) => (i, Some(o)),
        None => (text.as_str(), None),
    };
    let terms = inputs
        .split(',')
        .map(parse_term)
        .collect::<Result<Vec<_>>>()?;
    if terms.len() != dims.len() {
        return Err(bad(format!(
            "{subscripts:?} names {} operands, {} were given",
            terms.len(),
            dims.len()
        )));
    }
    // Each operand's labels with its `...` as the axes it covers, counted
    // from the right (so that they broadcast as NumPy's do).
    let mut broadcast = 0;
    let mut operands = Vec::with_capacity(terms.len());
    for (k, (t, d)) in terms.iter().zip(dims).enumerate() {
        let covered = match t.ellipsis {
            Some(_) => d.len().checked_sub(t.labels.len()),
            None => (t.labels.len() == d.len()).then_some(0),
        }
        .ok_or_else(|| {
            Error::shape(
                OP,
                format!(
                    "operand {k} has {} axes, its subscripts {} labels{}",
                    d.len(),
                    t.labels.len(),
                    if t.ellipsis.is_some() {
                        " and '...'"
                    } else {
                        ""
                    }
                ),
            )
        })?;
        broadcast = broadcast.max(covered);
        let at = t.ellipsis.unwrap_or(t.labels.len());
        let mut labels = t.labels[..at].to_vec();
        labels.extend((0..covered).rev().map(|j| ELLIPSIS + j as Label));
        labels.extend_from_slice(&t.labels[at..]);
        operands.push(labels);
    }
    let dots: Vec<Label> = (0..broadcast)
        .rev()
        .map(|j| ELLIPSIS + j as Label)
        .collect();
    let output = match output {
        Some(o) => {
            let t = parse_term(o)?;
            let mut seen = BTreeSet::new();
            for &l in &t.labels {
                if !seen.insert(l) {
                    return Err(bad(format!("the output repeats {:?}", l as u8 as char)));
                }
                if !operands.iter().any(|op| op.contains(&l)) {
                    return Err(bad(format!(
                        "the output's {:?} is in no operand",
                        l as u8 as char
                    )));
                }
            }
            if t.ellipsis.is_none() && broadcast > 0 {
                return Err(bad(format!(
                    "the operands' '...' covers {broadcast} axes; the output needs a '...' for them"
                )));
            }
            let at = t.ellipsis.unwrap_or(t.labels.len());
            let mut labels = t.labels[..at].to_vec();
            labels.extend_from_slice(&dots);
            labels.extend_from_slice(&t.labels[at..]);
            labels
        }
        None => {
            // NumPy's implicit output: `...`, then the labels used once, in
            // ASCII order.
            let mut once: Vec<Label> = (b'A' as Label..=b'z' as Label)
                .filter(|l| operands.iter().flatten().filter(|x| *x == l).count() == 1)
                .collect();
            once.retain(|l| *l < ELLIPSIS);
            dots.iter().copied().chain(once).collect()
        }
    };
    Ok((operands, output))
}

/// An operand on its way: the tensor and the label of each axis.
struct Part {
    t: Tensor,
    labels: Vec<Label>,
}

impl Part {
    fn size(&self, l: Label) -> usize {
        self.labels
            .iter()
            .position(|x| *x == l)
            .map_or(1, |a| self.t.dims()[a])
    }

    /// Takes the diagonal of each repeated label, then sums the labels
    /// that no other operand and not the output has.
    fn reduce(mut self, keep: &BTreeSet<Label>) -> Result<Part> {
        while let Some((a, b)) = repeated(&self.labels) {
            let l = self.labels[a];
            let (da, db) = (self.t.dims()[a], self.t.dims()[b]);
            if da != db {
                return Err(Error::shape(
                    OP,
                    format!(
                        "the repeated label {:?} spans {da} and {db}",
                        l as u8 as char
                    ),
                ));
            }
            // The two axes last, then their diagonal as the last axis.
            let mut order: Vec<isize> = (0..self.labels.len() as isize)
                .filter(|&x| x != a as isize && x != b as isize)
                .collect();
            order.extend([a as isize, b as isize]);
            self.t = self.t.permute(&order)?.diagonal(0)?;
            let mut labels: Vec<Label> = order[..order.len() - 2]
                .iter()
                .map(|&x| self.labels[x as usize])
                .collect();
            labels.push(l);
            self.labels = labels;
        }
        let summed: Vec<isize> = (0..self.labels.len())
            .filter(|&a| !keep.contains(&self.labels[a]))
            .map(|a| a as isize)
            .collect();
        if !summed.is_empty() {
            // In the operand's dtype, as NumPy's (`sum` widens u8 and bool:
            // a sum of u8 wraps, one of bool is their `or`).
            let dtype = self.t.dtype();
            self.t = self.t.sum(summed.as_slice())?.to_dtype(dtype)?;
            self.labels.retain(|l| keep.contains(l));
        }
        Ok(self)
    }
}

/// The first two axes with one label.
fn repeated(labels: &[Label]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|a| {
        (a + 1..labels.len())
            .find(|&b| labels[b] == labels[a])
            .map(|b| (a, b))
    })
}

/// `a` and `b` contracted over the labels they share that `keep` lacks,
/// batched over those it has: a product of `(batch, a's, shared)` by
/// `(batch, shared, b's)` views.
fn contract(a: Part, b: Part, keep: &BTreeSet<Label>) -> Result<Part> {
    let shared: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| b.labels.contains(l))
        .collect();
    let batch: Vec<Label> = shared
        .iter()
        .copied()
        .filter(|l| keep.contains(l))
        .collect();
    let summed: Vec<Label> = shared
        .iter()
        .copied()
        .filter(|l| !keep.contains(l))
        .collect();
    let only = |p: &Part, q: &Part| -> Vec<Label> {
        p.labels
            .iter()
            .copied()
            .filter(|l| !q.labels.contains(l))
            .collect()
    };
    let (a_only, b_only) = (only(&a, &b), only(&b, &a));
    // A shared label's extent: the one that is not 1 (0 included).
    let size = |l: Label| match (a.size(l), b.size(l)) {
        (1, other) | (other, 1) => other,
        (same, _) => same,
    };
    let arrange = |p: &Part, order: &[&[Label]]| -> Result<Tensor> {
        let labels: Vec<Label> = order.iter().flat_map(|o| o.iter().copied()).collect();
        let axes: Vec<isize> = labels
            .iter()
            .map(|l| p.labels.iter().position(|x| x == l).unwrap_or(0) as isize)
            .collect();
        // Shared axes broadcast (a size of 1 against another).
        let full: Vec<usize> = labels
            .iter()
            .map(|&l| {
                if shared.contains(&l) {
                    size(l)
                } else {
                    p.size(l)
                }
            })
            .collect();
        p.t.permute(&axes)?.broadcast_to(full)
    };
    // Checked: labels of broadcast views can multiply past usize.
    let product = |ls: &[Label]| {
        ls.iter()
            .try_fold(1usize, |n, &l| n.checked_mul(size(l)))
            .ok_or_else(|| {
                let sizes: Vec<usize> = ls.iter().map(|&l| size(l)).collect();
                Error::shape(
                    OP,
                    format!("axes of sizes {sizes:?} hold more than usize counts"),
                )
            })
    };
    let (nb, na, ns, nbo) = (
        product(&batch)?,
        product(&a_only)?,
        product(&summed)?,
        product(&b_only)?,
    );
    let x = arrange(&a, &[&batch, &a_only, &summed])?.reshape([nb, na, ns])?;
    let y = arrange(&b, &[&batch, &summed, &b_only])?.reshape([nb, ns, nbo])?;
    let dims: Vec<usize> = batch
        .iter()
        .chain(&a_only)
        .chain(&b_only)
        .map(|&l| size(l))
        .collect();
    let t = product_of(&x, &y)?.reshape(dims)?;
    let labels = batch.into_iter().chain(a_only).chain(b_only).collect();
    Ok(Part { t, labels })
}

/// The batched product `x @ y` in their dtype, as NumPy's einsum: u8 in
/// i32 (wrapping: the same bits mod 256), bool in f32 (sums of products of
/// 0 and 1 are 0 only where every product is) and converted back, so that
/// a u8 result wraps and a bool one is the `or` of the `and`s.
fn product_of(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let wide = match x.dtype() {
        DType::U8 => DType::I32,
        DType::Bool => DType::F32,
        _ => return x.matmul(y),
    };
    x.to_dtype(wide)?
        .matmul(&y.to_dtype(wide)?)?
        .to_dtype(x.dtype())
}

/// `Error::Shape` naming `einsum` unless every label spans one extent in
/// every operand that has it (or 1, which broadcasts).
fn check_extents(parts: &[Part]) -> Result<()> {
    let labels: BTreeSet<Label> = parts
        .iter()
        .flat_map(|p| p.labels.iter().copied())
        .collect();
    for l in labels {
        let sizes: BTreeSet<usize> = parts
            .iter()
            .flat_map(|p| p.labels.iter().zip(p.t.dims()).filter(|(x, _)| **x == l))
            .map(|(_, &d)| d)
            .filter(|&d| d != 1)
            .collect();
        if sizes.len() > 1 {
            let name = if l < ELLIPSIS {
                format!("{:?}", l as u8 as char)
            } else {
                "'...'".into()
            };
            return Err(Error::shape(
                OP,
                format!("the label {name} spans extents {sizes:?}"),
            ));
        }
    }
    Ok(())
}

/// The two operands whose contraction is the smallest tensor (`needed`
/// gives the labels the output and the operands other than a pair have),
/// of those whose contraction has at most [`MAX_RANK`] axes where any has
/// (an outer product of two small operands can be the smallest and still
/// have more axes than a tensor may, where contracting another pair first
/// keeps every step within it).
fn smallest_pair(parts: &[Part], needed: impl Fn(&[usize]) -> BTreeSet<Label>) -> (usize, usize) {
    let mut best = (0, 1, (true, usize::MAX));
    for i in 0..parts.len() {
        for j in i + 1..parts.len() {
            let (a, b) = (&parts[i], &parts[j]);
            let keep = needed(&[i, j]);
            // What the contraction keeps: the labels needed later, and
            // those only one of the two has.
            let kept: BTreeSet<Label> = a
                .labels
                .iter()
                .chain(&b.labels)
                .copied()
                .filter(|l| keep.contains(l) || !(a.labels.contains(l) && b.labels.contains(l)))
                .collect();
            // Broadcast operands hold up to 2^60 elements each: the pair's
            // size saturates (it only orders the pairs).
            let size = kept
                .iter()
                .map(|&l| a.size(l).max(b.size(l)))
                .fold(1usize, usize::saturating_mul);
            let key = (kept.len() > MAX_RANK, size);
            if key < best.2 {
                best = (i, j, key);
            }
        }
    }
    (best.0, best.1)
}

impl Tensor {
    /// NumPy's `einsum(subscripts, *operands)`: Einstein summation over
    /// the operands' labelled axes (letters; one `...` per operand for
    /// axes that broadcast; `->` and the output's labels, or NumPy's
    /// implicit output: `...` and the labels used once, in ASCII order). A
    /// label repeated in one operand takes its diagonal; a label missing
    /// from the output is summed; axes of size 1 broadcast. The operands
    /// promote to one dtype by [`DType::promote`] (PyTorch's table, as
    /// every op here: i32 with f16 is f16, where NumPy's einsum gives
    /// f64), which the result keeps (as NumPy's: a sum of u8 wraps, one of
    /// bool is `true` where any element is). Contracted two
    /// operands at a time as batched products (any view; no operand is
    /// copied but where a product needs it contiguous).
    ///
    /// ```
    /// use webtensor::{Device, Tensor};
    /// # fn main() -> webtensor::Result<()> {
    /// let dev = Device::cpu();
    /// let a = Tensor::arange(0.0f32, 6.0, 1.0, &dev)?.reshape([2, 3])?;
    /// let b = Tensor::arange(0.0f32, 12.0, 1.0, &dev)?.reshape([3, 4])?;
    /// let c = Tensor::einsum("ij,jk->ik", &[&a, &b])?; // a product
    /// assert_eq!(c.dims(), &[2, 4]);
    /// let t = Tensor::einsum("ii", &[&a.narrow(1, 0, 2)?])?; // a trace
    /// assert_eq!(t.to_vec::<f32>()?, vec![4.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Error::Argument` naming `einsum` for malformed subscripts (other
    /// characters, two `...` in a term, a repeated or unknown output label,
    /// broadcast axes the output has no `...` for) or as many terms as
    /// operands; `Error::Shape` for a term whose labels do not fit its
    /// operand's axes or a label whose extents differ (other than 1), and
    /// where every pair of operands left contracts to more than
    /// [`MAX_RANK`](crate::MAX_RANK) axes (a pair within it goes first,
    /// smaller or not); `Error::DType` for operands with no common dtype; the products' and
    /// sums' errors (f64 on a GPU; devices).
    pub fn einsum(subscripts: &str, operands: &[&Tensor]) -> Result<Tensor> {
        super::as_op(OP, || {
            let dims: Vec<&[usize]> = operands.iter().map(|t| t.dims()).collect();
            let (terms, output) = parse(subscripts, &dims)?;
            // One dtype for all, by the crate's (PyTorch's) promotion;
            // the result keeps it (a sum of u8 wraps and one of bool is
            // their `or`, as NumPy's, where `sum` would widen).
            let mut dtype = operands.first().map_or(crate::DType::F32, |t| t.dtype());
            for t in operands {
                dtype = dtype.promote(t.dtype()).ok_or_else(|| {
                    Error::dtype(OP, format!("no common dtype for {dtype} and {}", t.dtype()))
                })?;
            }
            let parts: Vec<Part> = operands
                .iter()
                .zip(terms)
                .map(|(t, labels)| {
                    Ok(Part {
                        t: t.to_dtype(dtype)?,
                        labels,
                    })
                })
                .collect::<Result<_>>()?;
            check_extents(&parts)?;
            let wanted: BTreeSet<Label> = output.iter().copied().collect();
            // A label summed away over no elements makes every output a
            // sum of nothing, 0, as NumPy's: the operands' NaN and inf
            // must not reach it through a product with that empty sum.
            let empty_sum = parts.iter().any(|p| {
                (p.labels.iter().zip(p.t.dims())).any(|(l, &n)| n == 0 && !wanted.contains(l))
            });
            let parts = if empty_sum {
                let zeros = |p: Part| -> Result<Part> {
                    Ok(Part {
                        t: Tensor::zeros(p.t.shape().clone(), dtype, p.t.device())?,
                        labels: p.labels,
                    })
                };
                parts.into_iter().map(zeros).collect::<Result<Vec<_>>>()?
            } else {
                parts
            };
            // The labels the output and the operands other than `skip` have.
            let needed = |parts: &[Part], skip: &[usize]| -> BTreeSet<Label> {
                parts
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !skip.contains(k))
                    .flat_map(|(_, p)| p.labels.iter().copied())
                    .chain(wanted.iter().copied())
                    .collect()
            };
            let keeps: Vec<BTreeSet<Label>> =
                (0..parts.len()).map(|k| needed(&parts, &[k])).collect();
            let mut parts = parts
                .into_iter()
                .zip(&keeps)
                .map(|(p, keep)| p.reduce(keep))
                .collect::<Result<Vec<Part>>>()?;
            while parts.len() > 1 {
                let (i, j) = smallest_pair(&parts, |skip| needed(&parts, skip));
                let keep = needed(&parts, &[i, j]);
                let b = parts.remove(j);
                let a = parts.remove(i);
                parts.push(contract(a, b, &keep)?);
            }
            let last = parts.pop().ok_or_else(|| bad("no operands".into()))?;
            let last = last.reduce(&wanted)?;
            // Output axes the operands never had (a `...` of size 1) are
            // new axes of 1.
            let mut t = last.t;
            let mut labels = last.labels;
            for &l in &output {
                if !labels.contains(&l) {
                    t = t.unsqueeze(-1)?;
                    labels.push(l);
                }
            }
            let axes: Vec<isize> = output
                .iter()
                .map(|l| labels.iter().position(|x| x == l).unwrap_or(0) as isize)
                .collect();
            t.permute(&axes)?.to_dtype(dtype)
        })
    }
}

impl Tensor {
    /// NumPy's `tensordot(a, b, axes=(a_axes, b_axes))`: the sum over the
    /// paired axes of the products, the result's axes this tensor's other
    /// axes, then `other`'s, in order. (`a_axes = [-1]`, `b_axes = [0]` is
    /// a product of matrices; `tensordot(a, b, axes=n)` is the last `n` of
    /// this tensor's axes against the first `n` of `other`'s.)
    ///
    /// # Errors
    /// `Error::Argument` naming `tensordot` for lists of different lengths
    /// or an axis given twice; `Error::Axis` for an axis out of range;
    /// `Error::Shape` for paired axes of different extents; as
    /// [`Tensor::einsum`].
    pub fn tensordot(&self, other: &Tensor, a_axes: &[isize], b_axes: &[isize]) -> Result<Tensor> {
        const OP: &str = "tensordot";
        super::as_op(OP, || {
            if a_axes.len() != b_axes.len() {
                return Err(Error::argument(
                    OP,
                    format!(
                        "{} axes of the first operand paired with {} of the second",
                        a_axes.len(),
                        b_axes.len()
                    ),
                ));
            }
            let resolve = |axes: &[isize], rank: usize| -> Result<Vec<usize>> {
                let mut out = Vec::with_capacity(axes.len());
                for &a in axes {
                    let r = rank as isize;
                    if a < -r || a >= r {
                        return Err(Error::Axis {
                            op: OP,
                            axis: a,
                            rank,
                        });
                    }
                    let a = a.rem_euclid(r) as usize;
                    if out.contains(&a) {
                        return Err(Error::argument(OP, format!("axis {a} is given twice")));
                    }
                    out.push(a);
                }
                Ok(out)
            };
            let (pa, pb) = (
                resolve(a_axes, self.rank())?,
                resolve(b_axes, other.rank())?,
            );
            // Labels: this tensor's axes a, b, c ...; the other's from the
            // end of the alphabet, its paired axes taking their partners'.
            let letter = |k: usize| {
                char::from(if k < 26 {
                    b'a' + k as u8
                } else {
                    b'A' + (k - 26) as u8
                })
            };
            if self.rank() + other.rank() > 52 {
                return Err(Error::argument(OP, "more than 52 axes in all".to_string()));
            }
            let left: String = (0..self.rank()).map(letter).collect();
            let right: String = (0..other.rank())
                .map(|j| match pb.iter().position(|&x| x == j) {
                    Some(k) => letter(pa[k]),
                    None => letter(self.rank() + j),
                })
                .collect();
            let out: String = (0..self.rank())
                .filter(|i| !pa.contains(i))
                .map(letter)
                .chain(
                    (0..other.rank())
                        .filter(|j| !pb.contains(j))
                        .map(|j| letter(self.rank() + j)),
                )
                .collect();
            for (&i, &j) in pa.iter().zip(&pb) {
                let (di, dj) = (self.dims()[i], other.dims()[j]);
                if di != dj {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "axis {i} of the first operand has {di} elements, axis {j} of the second {dj}"
                        ),
                    ));
                }
            }
            Tensor::einsum(&format!("{left},{right}->{out}"), &[self, other])
        })
    }
}
