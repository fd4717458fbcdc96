//! The integration tests: one binary running the real `demarcate` executable.

mod apply;
mod cases;
mod cli;
mod clients;
mod corrupt;
mod distribution;
mod entries;
mod entries_cli;
mod formats;
mod fuzz_corpus;
mod jsonc;
mod matrix;
mod peers;
mod placement_props;
mod props;
mod regression;
mod safety;
mod samples;
mod toml;
mod toml_plan;
mod upgrade;
mod util;
mod yaml_place;
mod zylos;
