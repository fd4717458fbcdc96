//! Finding the next byte that can change a lexer's state.
//!
//! A lexer's hot loop spends most of its time on ordinary bytes (letters, digits, spaces) that
//! cannot start a token. [`ByteSet::find`] skips them 32 bytes at a time where the processor
//! has AVX2, with the nibble-table classification simdjson uses: each byte's low and high
//! halves index two 16-entry tables, and the byte is in the set when the two entries share a
//! bit. That is exact for any set whose bytes have at most 8 distinct high halves (each gets
//! a bit); the constructor refuses other sets. Elsewhere, and for the last bytes of the input,
//! a lookup table is read one byte at a time. Both give the same answer (a property test
//! checks it), so a lexer's tokens do not depend on which ran.

/// A set of bytes to stop at.
pub(crate) struct ByteSet {
    /// Membership, one entry per byte value.
    table: [bool; 256],
    /// For each low half, the bits of the high halves it occurs with (twice: one copy per
    /// 16-byte lane of an AVX2 register).
    low: [u8; 32],
    /// For each high half, its bit (twice, as `low`).
    high: [u8; 32],
}

impl ByteSet {
    /// The set of `bytes`. Panics (at compile time, for a `static`) when they have more than
    /// 8 distinct high halves.
    pub(crate) const fn new(bytes: &[u8]) -> Self {
        let mut table = [false; 256];
        let mut low = [0u8; 32];
        let mut high = [0u8; 32];
        let mut bits = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            table[b as usize] = true;
            let (h, l) = ((b >> 4) as usize, (b & 15) as usize);
            if high[h] == 0 {
                assert!(bits < 8, "a byte set has at most 8 distinct high halves");
                high[h] = 1 << bits;
                high[h + 16] = 1 << bits;
                bits += 1;
            }
            low[l] |= high[h];
            low[l + 16] |= high[h];
            i += 1;
        }
        Self { table, low, high }
    }

    /// Whether `b` is in the set.
    #[inline]
    pub(crate) const fn contains(&self, b: u8) -> bool {
        self.table[b as usize]
    }

    /// The first position at or after `from` whose byte is in the set, if any.
    ///
    /// The first [`ByteSet::SHORT`] bytes are looked at one by one: in dense text (a shell
    /// profile stops every ten bytes or so) the stop is usually that close, and a table loop
    /// inlined in the lexer beats setting up a block comparison. Longer runs go by blocks.
    #[inline]
    pub(crate) fn find(&self, hay: &[u8], from: usize) -> Option<usize> {
        let rest = hay.get(from..)?;
        let short = rest.len().min(Self::SHORT);
        if let Some(n) = rest[..short].iter().position(|&b| self.contains(b)) {
            return Some(from + n);
        }
        self.find_blocks(hay, from + short)
    }

    /// How many bytes [`ByteSet::find`] looks at one by one before it goes by blocks.
    const SHORT: usize = 16;

    /// [`ByteSet::find`] without the short look: by blocks where the processor allows.
    #[inline(never)]
    fn find_blocks(&self, hay: &[u8], from: usize) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { self.find_avx2(hay, from) };
        }
        self.find_bytewise(hay, from)
    }

    /// As [`ByteSet::find`], one byte at a time: the straightforward scan.
    #[inline]
    pub(crate) fn find_bytewise(&self, hay: &[u8], from: usize) -> Option<usize> {
        let rest = hay.get(from..)?;
        rest.iter()
            .position(|&b| self.contains(b))
            .map(|n| from + n)
    }

    /// [`ByteSet::find`] with AVX2, 32 bytes at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn find_avx2(&self, hay: &[u8], from: usize) -> Option<usize> {
        use std::arch::x86_64::{
            __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
            _mm256_set1_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16,
        };
        // SAFETY: both tables are 32 bytes long, so each unaligned 32-byte load reads only
        // bytes of its array.
        let (low, high) = unsafe {
            (
                _mm256_loadu_si256(self.low.as_ptr().cast::<__m256i>()),
                _mm256_loadu_si256(self.high.as_ptr().cast::<__m256i>()),
            )
        };
        let nibble = _mm256_set1_epi8(15);
        let zero = _mm256_setzero_si256();
        let mut i = from;
        while let Some(block) = hay.get(i..i + 32) {
            // SAFETY: `block` is 32 bytes of `hay`, so the unaligned load reads only them.
            let v = unsafe { _mm256_loadu_si256(block.as_ptr().cast::<__m256i>()) };
            let lo = _mm256_shuffle_epi8(low, _mm256_and_si256(v, nibble));
            let hi = _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
            let miss = _mm256_cmpeq_epi8(_mm256_and_si256(lo, hi), zero);
            #[allow(clippy::cast_sign_loss, reason = "the mask's 32 bits, as they are")]
            let hits = !(_mm256_movemask_epi8(miss) as u32);
            if hits != 0 {
                return Some(i + hits.trailing_zeros() as usize);
            }
            i += 32;
        }
        self.find_bytewise(hay, i)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::ByteSet;

    static SET: ByteSet = ByteSet::new(b"\n#'\"\\$`<>(");

    #[test]
    fn finds_in_the_first_block_a_later_block_and_the_tail() {
        let mut s = vec![b'a'; 40];
        assert_eq!(SET.find(&s, 0), None);
        s[3] = b'$';
        assert_eq!(SET.find(&s, 0), Some(3));
        assert_eq!(SET.find(&s, 3), Some(3));
        assert_eq!(SET.find(&s, 4), None);
        s[21] = b'\n';
        assert_eq!(SET.find(&s, 4), Some(21));
        s[39] = b'(';
        assert_eq!(SET.find(&s, 22), Some(39));
        assert_eq!(SET.find(&s, 40), None);
        assert_eq!(SET.find(&s, 41), None);
    }

    #[test]
    fn high_bytes_are_not_confused_with_set_bytes() {
        let s: Vec<u8> = (0..=255u8).filter(|b| !SET.contains(*b)).collect();
        assert_eq!(SET.find(&s, 0), None);
    }

    proptest! {
        #[test]
        fn block_scan_equals_bytewise_scan(
            hay in proptest::collection::vec(
                prop_oneof![Just(b'a'), Just(b'#'), Just(b'\n'), Just(0xa3u8), any::<u8>()],
                0..120,
            ),
            from in 0usize..130,
        ) {
            prop_assert_eq!(SET.find(&hay, from), SET.find_bytewise(&hay, from));
        }
    }
}
