#![no_main]
use demarcate::Format;
use demarcate_fuzz::checks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::lex(Format::Jsonc, data));
