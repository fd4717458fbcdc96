//! The env lexer.

use crate::lex::Lexed;

/// Lexes a env file.
#[must_use]
pub fn lex(_src: &[u8]) -> Lexed {
    Lexed::default()
}
