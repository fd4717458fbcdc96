//! Repeated names among one container's keys (a JSONC object, a YAML mapping), for the
//! lexers that look for `duplicate-key` container by container, when the container closes.
//!
//! Memory grows with the distinct names, not with the keys: a table of 8-byte slots whose
//! pages are touched only where names land. And past the first
//! [`MAX_PROBLEMS_PER_KIND`](crate::problem::MAX_PROBLEMS_PER_KIND) + 1 repeats of a container
//! the rest are only counted: none of them can be among the problems reported in file order,
//! so a crafted object assigning one key a million times records a thousand keys, not a
//! million. Across containers likewise ([`Recorded`]): the repeated keys are held until the
//! end of the input, and a container whose repeats all come after 1,001 repeats held is only
//! counted, whether it closes after them (a million small objects each assigning a key twice
//! record a thousand pairs) or before them (nested containers close innermost first).

use std::borrow::Cow;

use crate::lex::{Key, Keys, Span};

/// What [`find`] found among `n` keys.
pub(crate) struct Found {
    /// For each of the first `kept` keys, a bit: whether its name occurs more than once.
    dup: Vec<u64>,
    kept: usize,
    /// Those of the first `kept` keys whose names occurred before them, in order.
    repeats: Vec<u32>,
    /// Repeats (keys whose name occurred before) after the first `kept` keys.
    left_out: usize,
}

/// The repeated keys of the containers closed so far, held until the file's end
/// ([`Recorded::flush`]): containers close innermost first, so a nested container's repeats are
/// found before the earlier ones of the containers around it. Once more than [`KEEP`]
/// repeats are held, a container whose first repeat comes after the [`KEEP`]th earliest of
/// them is only counted (none of its repeats can be among the first reported), and the ones
/// held so are let go.
#[derive(Default)]
pub(crate) struct Recorded {
    /// Per container held: its context, where its first repeat starts, its keys in
    /// [`Recorded::spans`] and its repeats' starts in [`Recorded::starts`].
    groups: Vec<(u32, usize, std::ops::Range<usize>, std::ops::Range<usize>)>,
    spans: Vec<Span>,
    starts: Vec<usize>,
    /// Containers whose first repeat starts after this are only counted.
    after: Option<usize>,
    /// Repeats counted instead of held.
    left_out: usize,
    /// Held repeats beyond which the held ones are sorted out again.
    limit: usize,
}

impl Recorded {
    /// Hands the held keys to `out`.
    pub(crate) fn flush(&mut self, out: &mut Keys) {
        for (context, _, keys, _) in std::mem::take(&mut self.groups) {
            for &name in self.spans.get(keys).unwrap_or_default() {
                out.push(Key { name, context });
            }
        }
        out.leave_out(std::mem::take(&mut self.left_out));
        self.spans.clear();
        self.starts.clear();
    }

    /// Keeps the containers whose first repeat starts at or before the [`KEEP`]th earliest
    /// repeat held; counts the others.
    fn sort_out(&mut self) {
        if self.starts.len() < KEEP {
            return;
        }
        let mut starts = self.starts.clone();
        let t = *starts.select_nth_unstable(KEEP - 1).1;
        drop(starts);
        self.after = Some(self.after.map_or(t, |a| a.min(t)));
        let (mut spans, mut kept_starts) = (Vec::new(), Vec::new());
        let mut groups = Vec::new();
        for (context, first, keys, reps) in std::mem::take(&mut self.groups) {
            if first > t {
                self.left_out += reps.len();
                continue;
            }
            let k = spans.len();
            spans.extend_from_slice(self.spans.get(keys).unwrap_or_default());
            let r = kept_starts.len();
            kept_starts.extend_from_slice(self.starts.get(reps).unwrap_or_default());
            groups.push((context, first, k..spans.len(), r..kept_starts.len()));
        }
        (self.groups, self.spans, self.starts) = (groups, spans, kept_starts);
        self.limit = (self.starts.len() * 2).max(2 * KEEP);
    }
}

impl Found {
    /// The repeats among `n` <= 64 keys given as bits: `dup`, whose names occur more than once,
    /// and `repeat`, whose names occurred before them.
    pub(crate) fn of_bits(n: usize, dup: u64, repeat: u64) -> Self {
        Self {
            dup: vec![dup],
            kept: n.min(64),
            repeats: (0..64).filter(|i| repeat >> i & 1 == 1).collect(),
            left_out: 0,
        }
    }

    /// Records the keys worth recording (held in `recorded` until [`Recorded::flush`]),
    /// `span(i)` being the `i`th key's name, and counts the rest in `out`: the one place a
    /// lexer hands its repeats over.
    pub(crate) fn record(
        self,
        out: &mut Keys,
        recorded: &mut Recorded,
        context: u32,
        span: impl Fn(usize) -> Span,
    ) {
        out.leave_out(self.left_out);
        let Some(&first) = self.repeats.first() else {
            return;
        };
        let at = span(first as usize).start;
        if recorded.after.is_some_and(|t| at > t) {
            recorded.left_out += self.repeats.len();
            return;
        }
        let k = recorded.spans.len();
        recorded
            .spans
            .extend((0..self.kept).filter(|&i| self.is_dup(i)).map(&span));
        let r = recorded.starts.len();
        recorded
            .starts
            .extend(self.repeats.iter().map(|&i| span(i as usize).start));
        recorded.groups.push((
            context,
            at,
            k..recorded.spans.len(),
            r..recorded.starts.len(),
        ));
        if recorded.starts.len() > recorded.limit.max(2 * KEEP) {
            recorded.sort_out();
        }
    }

    fn is_dup(&self, i: usize) -> bool {
        self.dup.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    #[cfg(test)]
    fn flags(&self) -> Vec<bool> {
        (0..self.kept).map(|i| self.is_dup(i)).collect()
    }
}

/// Repeats recorded in one container before the rest are only counted.
const KEEP: usize = crate::problem::MAX_PROBLEMS_PER_KIND + 1;

/// Keys a batch: the slots of a batch are read first, all at once, so that their cache misses
/// overlap instead of coming one after the other.
const BATCH: usize = 32;

/// The repeated names among `n` keys in file order, `name(i)` being the `i`th key's name as
/// readers compare it: every key whose name occurs more than once among the first keys up to
/// and including the [`KEEP`]th repeat, and a count of the repeats after it.
pub(crate) fn find<'a>(n: usize, name: impl Fn(usize) -> Cow<'a, [u8]>) -> Found {
    let mut dup = vec![0u64; n.div_ceil(64)];
    let mut mark = |i: usize| {
        if let Some(w) = dup.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    };
    let mut table = Table::new(n);
    let mut hashes = [0u64; BATCH];
    let (mut repeats, mut cut) = (Vec::new(), n);
    let mut left_out = 0usize;
    let mut first = 0;
    while first < n {
        let m = (n - first).min(BATCH);
        for (b, h) in hashes.iter_mut().enumerate().take(m) {
            *h = hash(&name(first + b));
        }
        table.touch(&hashes[..m]);
        for (b, &h) in hashes.iter().enumerate().take(m) {
            let i = first + b;
            let k = name(i);
            let Some(j) = table.insert(h, i, |j| name(j) == k) else {
                continue;
            };
            if i < cut {
                mark(i);
                mark(j);
                repeats.push(u32::try_from(i).unwrap_or(u32::MAX));
                if repeats.len() == KEEP {
                    cut = i + 1;
                }
            } else {
                left_out += 1;
            }
        }
        first += m;
    }
    Found {
        dup,
        kept: cut,
        repeats,
        left_out,
    }
}

/// Open addressing of key indices (plus one: 0 is an empty slot) with the top half of their
/// hashes, at most three quarters full (under 11 bytes a distinct name; the slot is that half scaled to
/// the table, which is then no power of two: half full and rounded up it took 16 to 32). The
/// slots are allocated zeroed, so the pages no name lands in
/// are never touched: a container of one name repeated costs a page, not the whole table.
struct Table {
    slots: Vec<u64>,
}

impl Table {
    fn new(n: usize) -> Self {
        Self {
            slots: vec![0; (n + n / 3).max(64)],
        }
    }

    fn slot(&self, high: u64) -> usize {
        // `high` < 2^32: the product's top half is below the length.
        usize::try_from((u128::from(high) * self.slots.len() as u128) >> 32).unwrap_or(0)
    }

    /// Reads the slots of `hashes`, so that their cache misses overlap.
    fn touch(&self, hashes: &[u64]) {
        let mut x = 0u64;
        for &h in hashes {
            x ^= self.slots[self.slot(h >> 32)];
        }
        std::hint::black_box(x);
    }

    /// Adds key `i` with hash `h`, unless an earlier key `j` with `same(j)` is there: then
    /// `Some(j)`.
    fn insert(&mut self, h: u64, i: usize, same: impl Fn(usize) -> bool) -> Option<usize> {
        let high = h >> 32;
        let mut s = self.slot(high);
        loop {
            let e = self.slots[s];
            if e == 0 {
                self.slots[s] = (high << 32) | ((i as u64 + 1) & 0xffff_ffff);
                return None;
            }
            if e >> 32 == high {
                let j = usize::try_from(e & 0xffff_ffff)
                    .unwrap_or(0)
                    .wrapping_sub(1);
                if same(j) {
                    return Some(j);
                }
            }
            s += 1;
            if s == self.slots.len() {
                s = 0;
            }
        }
    }
}

/// A hash of a name, eight bytes at a time (no untrusted-input concern: equal hashes only
/// cost a comparison of the names). The multiplication mixes upwards: the table uses the
/// top half.
pub(crate) fn hash(name: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = name.len() as u64;
    let mut words = name.chunks_exact(8);
    for c in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let mut w = [0u8; 8];
    let rest = words.remainder();
    w[..rest.len()].copy_from_slice(rest);
    (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::MAX_PROBLEMS_PER_KIND as MAX;

    fn of(names: &[String]) -> Found {
        find(names.len(), |i| Cow::Borrowed(names[i].as_bytes()))
    }

    /// Against a map of names seen: every key whose name repeats among the keys kept is
    /// flagged, and the repeats after them are counted.
    #[test]
    fn flags_every_key_whose_name_repeats() {
        let truth = |names: &[String]| {
            let mut count = std::collections::HashMap::new();
            for s in names {
                *count.entry(s.clone()).or_insert(0) += 1;
            }
            let dup: Vec<bool> = names.iter().map(|s| count[s] > 1).collect();
            (dup, names.len() - count.len())
        };
        for n in [0, 1, 2, 33, 1000, 2500, 5000] {
            let names: Vec<String> = (0..n).map(|i| format!("k{}", (i * 7) % 1500)).collect();
            let f = of(&names);
            let (all, repeats) = truth(&names);
            let kept = f.kept;
            if repeats <= MAX + 1 {
                assert!(f.flags() == all && f.left_out == 0, "{n}");
            } else {
                let (dup, before) = truth(&names[..kept]);
                assert_eq!(before, MAX + 1, "{n}");
                assert!(f.flags() == dup, "{n}");
                assert_eq!(f.left_out, repeats - before, "{n}");
            }
        }
    }

    /// 5,000 repeats of one name: the first key and the first 1,001 repeats are flagged, the
    /// other 3,999 counted.
    #[test]
    fn repeats_past_the_cap_are_counted() {
        let names: Vec<String> = (0..5001).map(|_| "a".to_owned()).collect();
        let f = of(&names);
        assert_eq!(f.kept, MAX + 2);
        assert!(f.flags().iter().all(|&d| d));
        assert_eq!(f.left_out, 5000 - (MAX + 1));
        // A first occurrence after the cut costs nothing, its repeat is counted.
        let mut names = names;
        names.push("b".to_owned());
        names.push("b".to_owned());
        let f = of(&names);
        assert_eq!(f.left_out, 5001 - (MAX + 1));
    }

    /// Names that only share the top half of their hash, or a slot, are told apart.
    #[test]
    fn distinct_names_are_never_repeats() {
        let names: Vec<String> = (0..200_000).map(|i| format!("{i:x}")).collect();
        let f = of(&names);
        assert!(f.flags().iter().all(|&d| !d));
        assert_eq!(f.left_out, 0);
    }

    /// The `duplicate-key` problems of `src` against a reference: `keys` are its key
    /// occurrences in file order (line, container, name); each one whose container already
    /// had its name is a problem, the first 1,000 listed with their lines and the rest counted
    /// in one more problem at the line of the first left out.
    fn reports_like_a_map(src: &str, format: crate::format::Format, keys: &[(usize, u32, String)]) {
        let doc = crate::document::Document::parse(src.as_bytes(), format.syntax());
        let got: Vec<(usize, String)> = doc
            .problems
            .iter()
            .filter(|p| p.kind == crate::problem::ProblemKind::DuplicateKey)
            .map(|p| (p.line, p.message.clone()))
            .collect();
        let mut seen = std::collections::HashSet::new();
        let want: Vec<usize> = keys
            .iter()
            .filter(|(_, c, name)| !seen.insert((*c, name.clone())))
            .map(|k| k.0)
            .collect();
        assert!(want.len() > MAX + 1, "a case for the cap");
        assert_eq!(got.len(), MAX + 1);
        let lines: Vec<usize> = got.iter().map(|g| g.0).collect();
        assert_eq!(lines[..], want[..=MAX]);
        assert!(got[..MAX].iter().all(|g| g.1.contains("is also assigned")));
        let more = want.len() - MAX;
        assert!(
            got[MAX].1.starts_with(&format!("{more} more")),
            "{}",
            got[MAX].1
        );
        // About only the repeats that can be reported (and the keys they repeat) are
        // recorded: a few thousand keys, not all.
        let lexed = format.syntax().lex(src.as_bytes());
        let n = lexed.keys.len();
        assert!(n <= 5 * (MAX + 1), "{format:?} {n}");
        assert!(lexed.keys.left_out() > 0);
    }

    /// 5,000 assignments of one key in one object report exactly 1,000 problems and a count
    /// of the rest at the right line; and an object's repeats past the cap, only counted,
    /// still come in file order with its parent's, before and after it.
    #[test]
    fn jsonc_repeats_past_the_cap_are_counted_in_file_order() {
        use crate::format::Format;
        let mut src = "{\n".to_owned();
        let mut keys = Vec::new();
        for i in 0..5000 {
            src.push_str("  \"a\": 1,\n");
            keys.push((i + 2, 1, "a".to_owned()));
        }
        src.push_str("  \"z\": 0\n}\n");
        reports_like_a_map(&src, Format::Jsonc, &keys);

        let mut src = "{\n  \"b\": 1,\n  \"b\": 2,\n  \"x\": {\n".to_owned();
        let mut keys = vec![
            (2, 1, "b".to_owned()),
            (3, 1, "b".to_owned()),
            (4, 1, "x".to_owned()),
        ];
        for i in 0..3000 {
            src.push_str(&format!("    \"{}\": 1,\n", ["a", "c", "d"][i % 3]));
            keys.push((i + 5, 2, ["a", "c", "d"][i % 3].to_owned()));
        }
        src.push_str("    \"z\": 0\n  },\n  \"b\": 3\n}\n");
        keys.push((3005, 2, "z".to_owned()));
        keys.push((3007, 1, "b".to_owned()));
        reports_like_a_map(&src, Format::Jsonc, &keys);
    }

    /// The same for YAML mappings, at the top level and nested.
    #[test]
    fn yaml_repeats_past_the_cap_are_counted_in_file_order() {
        use crate::format::Format;
        let src = "a: 1\n".repeat(5000);
        let keys: Vec<(usize, u32, String)> =
            (0..5000).map(|i| (i + 1, 0, "a".to_owned())).collect();
        reports_like_a_map(&src, Format::Yaml, &keys);

        let mut src = "b: 1\nb: 2\nx:\n".to_owned();
        let mut keys = vec![
            (1, 0, "b".to_owned()),
            (2, 0, "b".to_owned()),
            (3, 0, "x".to_owned()),
        ];
        for i in 0..3000 {
            src.push_str(&format!("  {}: 1\n", ["a", "c", "d"][i % 3]));
            keys.push((i + 4, 1, ["a", "c", "d"][i % 3].to_owned()));
        }
        src.push_str("b: 3\n");
        keys.push((3004, 0, "b".to_owned()));
        reports_like_a_map(&src, Format::Yaml, &keys);
    }

    /// Many small containers each assigning a key twice: the first 1,000 repeats of the file
    /// are reported and the rest counted, though each container holds one; and containers
    /// that close in the reverse of file order (nested ones) still report the first ones.
    #[test]
    fn repeats_across_containers_are_capped_in_file_order() {
        use crate::format::Format;
        let mut src = "[\n".to_owned();
        let mut keys = Vec::new();
        for i in 0..3000 {
            src.push_str("  {\"a\": 1, \"a\": 2},\n");
            keys.push((i + 2, i as u32, "a".to_owned()));
            keys.push((i + 2, i as u32, "a".to_owned()));
        }
        src.push_str("  {}\n]\n");
        reports_like_a_map(&src, Format::Jsonc, &keys);

        let mut src = String::new();
        let mut keys = Vec::new();
        for i in 0..3000 {
            src.push_str("- a: 1\n  a: 2\n");
            keys.push((2 * i + 1, i as u32, "a".to_owned()));
            keys.push((2 * i + 2, i as u32, "a".to_owned()));
        }
        reports_like_a_map(&src, Format::Yaml, &keys);

        let mut src = String::new();
        let mut keys = Vec::new();
        for i in 0..1500 {
            src.push_str("{\"a\": 1, \"a\": 2, \"b\": 3, \"b\": 4, \"x\":\n");
            for name in ["a", "a", "b", "b", "x"] {
                keys.push((i + 1, i as u32, name.to_owned()));
            }
        }
        src.push_str(&format!("0{}\n", "}".repeat(1500)));
        // Found innermost first: the later ones are let go as the earlier ones come.
        reports_like_a_map(&src, Format::Jsonc, &keys);
    }
}
