#![no_main]
use demarcate_fuzz::checks;
use libfuzzer_sys::fuzz_target;

// The first byte picks the format; the rest is the file.
fuzz_target!(|data: &[u8]| checks::plan(data));
