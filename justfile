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
    cargo run --release -- sync samples/shell-hook/bashrc --template samples/shell-hook/template-v2.sh --dry-run

# The black-box acceptance run.
accept:
    cargo build --release
    python3 ../shared/acceptance/accept.py --bin target/release/demarcate

# Throughput of the strict-JSON entries engine on 10 MB settings files (library, no I/O).
bench-entries:
    cargo run --release --example entries_bench
