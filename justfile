# demarcate's recipes. `just --list` shows them.

# Format check, lint and the whole test suite, as CI runs them.
ci: lint test

# The test suite.
test:
    cargo test

# Formatting and lints.
lint:
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings

# Rewrite the fixture expectations in tests/cases from the current behaviour (review the diff!).
bless:
    DEMARCATE_BLESS=1 cargo test fixture_cases

# Benchmarks against cat and grep, side by side; writes nothing, prints ratios.
bench:
    cargo build --release
    python3 tests/bench/bench.py

# The shell-profile upgrade sample, as a dry run.
demo:
    cargo run --release -- sync samples/shell-hook/bashrc --template samples/shell-hook/template-v2.sh --owner ZYLOS --dry-run

# The black-box acceptance run.
accept:
    cargo build --release
    python3 ../shared/acceptance/accept.py --bin target/release/demarcate

# Throughput of the strict-JSON entries engine on 10 MB settings files (library, no I/O).
bench-entries:
    cargo run --release --example entries_bench

# Fuzz every target for SECS seconds each (nightly and cargo-fuzz: `cargo install cargo-fuzz`).
# New inputs go to fuzz/work/ (not committed); fuzz/corpus/ holds the small committed seeds
# that `cargo test` replays on stable.
fuzz SECS="60":
    #!/usr/bin/env sh
    set -e
    cd fuzz
    for t in lex_shell lex_env lex_toml lex_jsonc plan repair; do
        mkdir -p work/$t
        cargo +nightly fuzz run $t work/$t corpus/$t -- -max_total_time={{SECS}} -max_len=4096
    done
