//! Records of a few unsigned fields kept in file order as variable-length deltas: a file of
//! millions of one-line statements or headers costs a few bytes for each, not the 24 to 32
//! of a struct of offsets, and a file of any size (over 4 GiB too) is stored the same way.
//!
//! A record whose differences are those of the record before (lines of one length in a
//! row: `a=1`, `[t10]`, `[t11]`, ...) is one byte.
//!
//! Every [`BLOCK`]th record is stored whole (its fields as they are, not as differences from
//! the record before), and its byte offset is kept: a record is found by index after
//! decoding at most `BLOCK - 1` others, and a sorted field is searched block by block.

/// Records between two whole ones.
const BLOCK: usize = 32;

/// Records of `N` fields each, appended in order.
#[derive(Clone, Debug)]
pub(crate) struct Packed<const N: usize> {
    /// Each record as `N` LEB128 numbers: the zigzag of its fields' differences from the
    /// record before (from zero for the first record of a block), the first one doubled;
    /// or, when the differences are the record before's, the one number 1.
    bytes: Vec<u8>,
    /// Byte offset of the first record of each block.
    marks: Vec<usize>,
    /// The last record pushed.
    last: [u64; N],
    /// Its differences from the one before (`None` for the first of a block).
    last_diff: Option<[u64; N]>,
    len: usize,
}

/// Appends `v` as LEB128.
fn put(bytes: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        // Truncation intended: the low seven bits.
        #[allow(clippy::cast_possible_truncation)]
        bytes.push((v as u8) | 0x80);
        v >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    bytes.push(v as u8);
}

/// Reads a LEB128 number at `*pos`.
fn get(bytes: &[u8], pos: &mut usize) -> Option<u128> {
    let mut v: u128 = 0;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        if shift < 128 {
            v |= u128::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
}

impl<const N: usize> Default for Packed<N> {
    fn default() -> Self {
        Self {
            bytes: Vec::new(),
            marks: Vec::new(),
            last: [0; N],
            last_diff: None,
            len: 0,
        }
    }
}

/// The zigzag form of a wrapping difference: small either way round, as one LEB128 byte.
const fn zigzag(d: u64) -> u64 {
    // Bit-for-bit reinterpretation: the difference is taken modulo 2^64.
    #[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)]
    let v = ((d as i64) << 1 ^ ((d as i64) >> 63)) as u64;
    v
}

const fn unzigzag(v: u64) -> u64 {
    (v >> 1) ^ (v & 1).wrapping_neg()
}

impl<const N: usize> Packed<N> {
    /// Appends a record.
    pub(crate) fn push(&mut self, rec: [u64; N]) {
        let first = self.len.is_multiple_of(BLOCK);
        let base = if first {
            self.marks.push(self.bytes.len());
            [0; N]
        } else {
            self.last
        };
        let mut diff = [0; N];
        for ((d, v), b) in diff.iter_mut().zip(rec).zip(base) {
            *d = v.wrapping_sub(b);
        }
        if !first && self.last_diff == Some(diff) {
            self.bytes.push(1);
        } else {
            for (k, d) in diff.iter().enumerate() {
                let z = u128::from(zigzag(*d));
                put(&mut self.bytes, if k == 0 { z << 1 } else { z });
            }
        }
        self.last = rec;
        self.last_diff = (!first).then_some(diff);
        self.len += 1;
    }

    /// How many records there are.
    pub(crate) const fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub(crate) const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records from index `i` on.
    pub(crate) fn iter_from(&self, i: usize) -> Iter<'_, N> {
        let block = i / BLOCK;
        let mut it = Iter {
            packed: self,
            pos: self.marks.get(block).copied().unwrap_or(self.bytes.len()),
            prev: [0; N],
            prev_diff: None,
            at: (block * BLOCK).min(self.len),
        };
        for _ in 0..i % BLOCK {
            if it.next().is_none() {
                break;
            }
        }
        it
    }

    /// The record at index `i`.
    pub(crate) fn get(&self, i: usize) -> Option<[u64; N]> {
        if i >= self.len {
            return None;
        }
        self.iter_from(i).next()
    }

    /// The number of leading records for which `pred` holds, `pred` being true for a prefix
    /// of the records and false for the rest (as for `slice::partition_point`).
    pub(crate) fn partition_point(&self, pred: impl Fn(&[u64; N]) -> bool) -> usize {
        let first_of = |b: usize| self.iter_from(b * BLOCK).next();
        let blocks = self.marks.len();
        let (mut lo, mut hi) = (0, blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if first_of(mid).is_some_and(|r| pred(&r)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        // Blocks before `lo` start with a record `pred` holds for; block `lo` does not.
        let Some(b) = lo.checked_sub(1) else {
            return 0;
        };
        b * BLOCK
            + self
                .iter_from(b * BLOCK)
                .take(BLOCK)
                .take_while(|r| pred(r))
                .count()
    }
}

/// Decodes records in order.
#[derive(Clone, Debug)]
pub(crate) struct Iter<'a, const N: usize> {
    packed: &'a Packed<N>,
    pos: usize,
    prev: [u64; N],
    /// The differences of the record before (`None` for the first of a block).
    prev_diff: Option<[u64; N]>,
    /// Index of the next record.
    at: usize,
}

impl<const N: usize> Iterator for Iter<'_, N> {
    type Item = [u64; N];

    fn next(&mut self) -> Option<[u64; N]> {
        if self.at >= self.packed.len {
            return None;
        }
        let first = self.at.is_multiple_of(BLOCK);
        if first {
            self.prev = [0; N];
            self.prev_diff = None;
        }
        let bytes = &self.packed.bytes;
        let head = get(bytes, &mut self.pos)?;
        let diff = if head & 1 == 1 {
            self.prev_diff?
        } else {
            let mut diff = [0; N];
            for (k, d) in diff.iter_mut().enumerate() {
                let z = if k == 0 {
                    head >> 1
                } else {
                    get(bytes, &mut self.pos)?
                };
                *d = unzigzag(u64::try_from(z).ok()?);
            }
            diff
        };
        let mut rec = [0; N];
        for ((r, p), d) in rec.iter_mut().zip(self.prev).zip(diff) {
            *r = p.wrapping_add(d);
        }
        self.prev = rec;
        self.prev_diff = (!first).then_some(diff);
        self.at += 1;
        Some(rec)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.packed.len.saturating_sub(self.at);
        (n, Some(n))
    }
}

/// A record kept in [`Records`]: four unsigned fields.
pub(crate) trait Record: Copy {
    /// The fields to store; records in file order should make their differences small.
    fn fields(&self) -> [u64; 4];
    /// The record back from its fields.
    fn from_fields(f: [u64; 4]) -> Self;
}

/// Records of type `T`, appended in file order, packed as [`Packed`].
#[derive(Clone, Debug)]
pub(crate) struct Records<T> {
    packed: Packed<4>,
    of: std::marker::PhantomData<T>,
}

impl<T> Default for Records<T> {
    fn default() -> Self {
        Self {
            packed: Packed::default(),
            of: std::marker::PhantomData,
        }
    }
}

impl<T: Record> Records<T> {
    /// Appends a record.
    pub(crate) fn push(&mut self, r: T) {
        self.packed.push(r.fields());
    }

    /// How many records there are.
    pub(crate) const fn len(&self) -> usize {
        self.packed.len()
    }

    /// True when there are none.
    pub(crate) const fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// The record at index `i`.
    pub(crate) fn get(&self, i: usize) -> Option<T> {
        self.packed.get(i).map(T::from_fields)
    }

    /// Every record, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = T> + Clone + '_ {
        self.iter_from(0)
    }

    /// The records from index `i` on.
    pub(crate) fn iter_from(&self, i: usize) -> impl Iterator<Item = T> + Clone + '_ {
        self.packed.iter_from(i).map(T::from_fields)
    }

    /// Every record, decoded.
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }

    /// The index of the last record `pred` holds for.
    pub(crate) fn rposition(&self, mut pred: impl FnMut(&T) -> bool) -> Option<usize> {
        self.iter()
            .enumerate()
            .filter(|(_, r)| pred(r))
            .last()
            .map(|(i, _)| i)
    }

    /// The number of leading records `pred` holds for (as `slice::partition_point`).
    pub(crate) fn partition_point(&self, pred: impl Fn(&T) -> bool) -> usize {
        self.packed.partition_point(|f| pred(&T::from_fields(*f)))
    }
}

/// Looks records up by index, cheaply when the indexes mostly grow: each record between two
/// lookups is decoded once (a lookup behind the last one starts again from its block).
pub(crate) struct Cursor<'a, T> {
    records: &'a Records<T>,
    it: Iter<'a, 4>,
    /// Index of the record `it` decodes next.
    at: usize,
    last: Option<(usize, T)>,
}

impl<'a, T: Record> Cursor<'a, T> {
    /// A cursor over `records`.
    pub(crate) fn new(records: &'a Records<T>) -> Self {
        Self {
            records,
            it: records.packed.iter_from(0),
            at: 0,
            last: None,
        }
    }

    /// The record at index `i`.
    pub(crate) fn get(&mut self, i: usize) -> Option<T> {
        if let Some((j, r)) = self.last
            && j == i
        {
            return Some(r);
        }
        if i < self.at {
            self.it = self.records.packed.iter_from(i);
            self.at = i;
        }
        while self.at < i {
            self.it.next()?;
            self.at += 1;
        }
        let r = T::from_fields(self.it.next()?);
        self.at += 1;
        self.last = Some((i, r));
        Some(r)
    }
}

/// A stored field back as an offset (lossless: every field was one).
pub(crate) fn offset(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_differences_take_one_byte_a_field() {
        let mut p = Packed::<3>::default();
        for i in 0..1000u64 {
            p.push([i * 4, i * 4 + 1, i * 4 + 3]);
        }
        // One whole record a block costs more, the second a byte a field; the others
        // repeat the differences before them: a byte each.
        assert!(
            p.bytes.len() < 1000 + 32 * 3 * 3 + 32 * 3,
            "{}",
            p.bytes.len()
        );
        assert_eq!(p.get(999), Some([3996, 3997, 3999]));
        assert_eq!(p.get(1000), None);
    }

    #[test]
    fn extreme_values_round_trip() {
        let mut p = Packed::<2>::default();
        let recs = [
            [u64::MAX, 0],
            [0, u64::MAX],
            [1 << 63, (1 << 63) - 1],
            [5, 5],
        ];
        for r in recs {
            p.push(r);
        }
        assert_eq!(p.iter_from(0).collect::<Vec<_>>(), recs);
    }

    impl Record for [u64; 4] {
        fn fields(&self) -> [u64; 4] {
            *self
        }
        fn from_fields(f: [u64; 4]) -> Self {
            f
        }
    }

    proptest! {
        #[test]
        fn a_cursor_finds_what_get_finds(n in 0u64..200, looks in prop::collection::vec(0usize..210, 0..50)) {
            let mut r = Records::<[u64; 4]>::default();
            for i in 0..n {
                r.push([i, i * 3, i % 7, 1]);
            }
            let mut c = Cursor::new(&r);
            for i in looks {
                prop_assert_eq!(c.get(i), r.get(i));
            }
        }


        #[test]
        fn records_come_back_as_pushed(recs in prop::collection::vec(any::<[u64; 3]>(), 0..200),
                                       i in 0usize..220) {
            let mut p = Packed::<3>::default();
            for r in &recs {
                p.push(*r);
            }
            prop_assert_eq!(p.len(), recs.len());
            prop_assert_eq!(p.iter_from(0).collect::<Vec<_>>(), recs.clone());
            prop_assert_eq!(p.get(i), recs.get(i).copied());
            prop_assert_eq!(p.iter_from(i).collect::<Vec<_>>(), recs.get(i..).unwrap_or_default().to_vec());
        }

        #[test]
        fn records_of_repeated_differences_come_back(steps in prop::collection::vec(
            (0usize..3, 0u64..3), 0..300), i in 0usize..310) {
            // Few distinct steps: most records repeat the differences before them.
            let mut recs = Vec::new();
            let mut r = [0u64; 2];
            for (k, d) in steps {
                r[k % 2] = r[k % 2].wrapping_add(d * 7).wrapping_sub(u64::from(k == 2));
                recs.push(r);
            }
            let mut p = Packed::<2>::default();
            for r in &recs {
                p.push(*r);
            }
            prop_assert_eq!(p.iter_from(0).collect::<Vec<_>>(), recs.clone());
            prop_assert_eq!(p.get(i), recs.get(i).copied());
            prop_assert_eq!(p.iter_from(i).collect::<Vec<_>>(), recs.get(i..).unwrap_or_default().to_vec());
        }

        #[test]
        fn partition_point_agrees_with_slices(mut starts in prop::collection::vec(0u64..5000, 0..300),
                                              x in 0u64..5100) {
            starts.sort_unstable();
            let mut p = Packed::<1>::default();
            for s in &starts {
                p.push([*s]);
            }
            prop_assert_eq!(p.partition_point(|r| r[0] < x), starts.partition_point(|s| *s < x));
        }
    }
}
