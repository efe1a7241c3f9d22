//! Counting and searching, as NumPy names them: `searchsorted` and
//! `digitize` (one binary-search kernel), `bincount` and `histogram` (one
//! count kernel).

mod bins;
mod search;

pub use search::Side;
