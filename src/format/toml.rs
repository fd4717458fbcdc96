//! TOML: managed regions among a table's keys.

use super::{KeyPolicy, Syntax};
use crate::lex::Lexed;

/// The TOML format.
pub struct Toml;

impl Syntax for Toml {
    fn name(&self) -> &'static str {
        "toml"
    }
    fn lex(&self, _src: &[u8]) -> Lexed {
        Lexed::default()
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }
    fn requires_utf8(&self) -> bool {
        true
    }
}
