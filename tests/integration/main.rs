//! The integration tests: one binary running the real `demarcate` executable.

mod apply;
mod cases;
mod cli;
mod clients;
mod corrupt;
mod jsonc;
mod matrix;
mod placement_props;
mod props;
mod regression;
mod samples;
mod toml;
mod toml_plan;
mod upgrade;
mod util;
mod zylos;
