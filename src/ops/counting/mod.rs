//! Counting and searching, as NumPy names them: `searchsorted` and
//! `digitize` (one binary-search kernel).

mod search;

pub use search::Side;
