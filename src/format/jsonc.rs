//! JSONC: managed regions of members or elements inside one object or array.

use super::{KeyPolicy, Syntax};
use crate::lex::Lexed;

/// The JSONC format.
pub struct Jsonc;

impl Syntax for Jsonc {
    fn name(&self) -> &'static str {
        "jsonc"
    }
    fn lex(&self, _src: &[u8]) -> Lexed {
        Lexed::default()
    }
    fn opener(&self) -> &'static str {
        "//"
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AnyDuplicate
    }
    fn requires_utf8(&self) -> bool {
        true
    }
}

/// True when `src` holds at least one real comment (outside strings): a `*.json` file with
/// comments is JSONC already.
#[must_use]
pub fn has_comments(_src: &[u8]) -> bool {
    false
}
