//! The region hash: a 12-hex-digit prefix of SHA-256 over a normalized body.
//!
//! The normalization is part of the file format (docs/markers.md) and never changes.

use sha2::{Digest, Sha256};

/// Number of hex digits written in `hash=`.
pub(crate) const HASH_LEN: usize = 12;

/// The hash of an already normalized body.
#[must_use]
pub fn of_normalized(normalized: &[u8]) -> String {
    let digest = Sha256::digest(normalized);
    let mut out = String::with_capacity(HASH_LEN);
    for b in digest.iter().take(HASH_LEN / 2) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Line-format normalization (shell, env): every `\r\n` becomes `\n`; nothing else changes.
#[must_use]
pub fn normalize_lines(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

/// True when `recorded` (as written in `hash=`, any case, any prefix length of at least 6)
/// matches the hash of `normalized`.
#[must_use]
pub(crate) fn matches(recorded: &str, normalized: &[u8]) -> bool {
    let full = of_normalized(normalized);
    let rec = recorded.to_ascii_lowercase();
    rec.len() >= 6 && full.starts_with(&rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value_is_frozen() {
        // sha256("export A=1\n") — this value is part of the file format.
        assert_eq!(of_normalized(b"export A=1\n"), "8cb53e8a30d5");
    }

    #[test]
    fn crlf_and_lf_bodies_hash_alike() {
        assert_eq!(normalize_lines(b"a\r\nb\r\n"), b"a\nb\n");
        assert_eq!(normalize_lines(b"a\rb"), b"a\rb");
    }

    #[test]
    fn matches_prefix_any_case() {
        let h = of_normalized(b"x\n");
        assert!(matches(&h, b"x\n"));
        assert!(matches(&h.to_uppercase(), b"x\n"));
        assert!(!matches(&h, b"y\n"));
        assert!(!matches("", b"x\n"));
    }
}
