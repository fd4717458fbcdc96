//! Finding the next byte that can change a lexer's state: a lexer's hot loop skips ordinary
//! bytes (letters, digits, spaces) that cannot start a token by looking each one up in a
//! 256-entry table.

/// A set of bytes to stop at.
pub(crate) struct ByteSet {
    /// Membership, one entry per byte value.
    table: [bool; 256],
}

impl ByteSet {
    /// The set of `bytes`.
    pub(crate) const fn new(bytes: &[u8]) -> Self {
        let mut table = [false; 256];
        let mut i = 0;
        while i < bytes.len() {
            table[bytes[i] as usize] = true;
            i += 1;
        }
        ByteSet { table }
    }

    /// Whether `b` is in the set.
    #[inline]
    pub(crate) const fn contains(&self, b: u8) -> bool {
        self.table[b as usize]
    }

    /// The first position at or after `from` in `hay` whose byte is in the set.
    #[inline]
    pub(crate) fn find(&self, hay: &[u8], from: usize) -> Option<usize> {
        hay.get(from..)?
            .iter()
            .position(|&b| self.contains(b))
            .map(|n| from + n)
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSet;

    #[test]
    fn finds_the_first_byte_of_the_set_at_or_after_from() {
        let set = ByteSet::new(b"#\n");
        assert_eq!(set.find(b"ab#c\n", 0), Some(2));
        assert_eq!(set.find(b"ab#c\n", 3), Some(4));
        assert_eq!(set.find(b"ab#c\n", 5), None);
        assert_eq!(set.find(b"ab", 9), None);
        // Bytes above 0x7f are not confused with set bytes of the same low bits.
        assert_eq!(set.find(b"\xa3\x8a#", 0), Some(2));
    }
}
