//! Guides: documentation only, no items.

pub mod webtensor_for_numpy_users;
