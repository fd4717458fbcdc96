//! The checks the fuzz targets run, shared with the corpus replay in the main crate's tests.
pub mod checks;
