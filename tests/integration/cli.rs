//! Command-line behaviour: flags and exit codes.
