//! The `demarcate` binary: the command line over the `demarcate` library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run(std::env::args_os())
}
