//! The integration tests: one binary running the real `demarcate` executable.

mod cases;
mod cli;
mod corrupt;
mod jsonc;
mod samples;
mod toml;
mod util;
