//! Counting and searching, as NumPy names them: `searchsorted` and
//! `digitize` (one binary-search kernel), `bincount` and `histogram` (one
//! count kernel), and the selections whose length is the data's:
//! `nonzero`, `argwhere`, `masked_select`, `unique`.

mod bins;
mod search;
mod select;
mod unique;

pub use search::Side;
pub use unique::Unique;
