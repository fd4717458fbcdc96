//! The `demarcate` binary: a thin wrapper over [`demarcate::cli::run`].

fn main() -> std::process::ExitCode {
    demarcate::cli::run(std::env::args_os())
}
