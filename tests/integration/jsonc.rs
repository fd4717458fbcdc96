//! JSONC integration tests.
