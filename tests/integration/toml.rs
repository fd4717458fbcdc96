//! TOML integration tests.
