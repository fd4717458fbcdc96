//! A parsed file: its regions, their states, and the problems found, all as spans into the
//! original bytes. No I/O.

use crate::hash;
use crate::lex::{Keep, KeyPolicy, Lexed, Lexer, Scan, Span};
use crate::lines::{LineCounter, bom_len};
pub(crate) use crate::lines::{eol_of, line_end, line_start};
use crate::marker::{self, Identity, Kind, Marker};
use crate::problem::{Problem, ProblemKind, Problems};

/// One marker line as found in the file: where it is, not what it says (the region holds
/// its identity; [`MarkerLine::marker`] parses the rest again when it is needed), so that a
/// file of many regions costs a few words per marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerLine {
    /// The whole line, from its first byte to after its line ending (or end of input).
    pub line: Span,
    /// The marker comment itself, from its opener to its end.
    pub text: Span,
    /// 1-based line number.
    pub line_no: usize,
    /// Structural context reported by the lexer.
    pub context: u32,
}

impl MarkerLine {
    /// 1-based column of the comment opener.
    #[must_use]
    pub const fn column(&self) -> usize {
        self.text.start - self.line.start + 1
    }

    /// The marker written on this line, parsed again from `src` (the bytes it was found in).
    /// `None` when the line is no demarcate marker (a foreign block's literal line, such as
    /// conda's `# >>> conda initialize >>>`).
    #[must_use]
    pub fn marker(&self, src: &[u8]) -> Option<Marker> {
        src.get(self.text.start..self.text.end)
            .and_then(marker::parse)
    }
}

/// The state of a region's body against its recorded hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The body hashes to the recorded hash.
    Pristine,
    /// The body was edited since the tool wrote it.
    Drifted,
    /// No hash recorded (hand-written or foreign markers).
    Unhashed,
}

impl State {
    /// The name used in reports.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pristine => "pristine",
            Self::Drifted => "drifted",
            Self::Unhashed => "unhashed",
        }
    }
}

/// A well-formed region: a BEGIN line, a body, an END line with the same identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Owner and name.
    pub id: Identity,
    /// The BEGIN marker line.
    pub begin: MarkerLine,
    /// The END marker line.
    pub end: MarkerLine,
    /// The bytes between the BEGIN line and the END line.
    pub body: Span,
    /// Pristine, drifted or unhashed.
    pub state: State,
}

impl Region {
    /// The whole region, BEGIN line to END line inclusive.
    #[must_use]
    pub const fn span(&self) -> Span {
        Span::new(self.begin.line.start, self.end.line.end)
    }

    /// The `hash=` recorded on the BEGIN line (read again from `src`, the bytes the region
    /// was found in); `None` for an unhashed region.
    #[must_use]
    pub fn hash(&self, src: &[u8]) -> Option<String> {
        if self.state == State::Unhashed {
            return None;
        }
        self.begin
            .marker(src)
            .and_then(|m| m.hash().map(str::to_owned))
    }
}

/// A parsed file.
pub struct Document<'a> {
    /// The original bytes.
    pub src: &'a [u8],
    /// What the lexer found.
    pub lexed: Lexed,
    /// Well-formed regions, in file order.
    pub regions: Vec<Region>,
    /// Everything wrong, in file order.
    pub problems: Vec<Problem>,
    /// The file's line ending: `\r\n` when most of its lines end so (a tie goes to the
    /// first line's ending), else `\n`.
    pub eol: &'static str,
    /// Every standalone marker line, paired or not, in file order.
    pub marker_lines: Vec<Span>,
    /// Comments that are almost markers, with the marker each was likely meant to be.
    pub near_misses: Vec<(Span, marker::NearMiss)>,
    /// The format's own record of the file, made by the pass that lexed it.
    pub scan: Option<Scan>,
}

impl std::fmt::Debug for Document<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Document")
            .field("lexed", &self.lexed)
            .field("regions", &self.regions)
            .field("problems", &self.problems)
            .field("eol", &self.eol)
            .finish_non_exhaustive()
    }
}

/// One desired region: what a template or a command says a region should hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    /// Owner and name.
    pub id: Identity,
    /// The body as given (any line endings; a final line break is added if missing).
    pub body: Vec<u8>,
}

/// Literal marker lines for blocks that do not fit the grammar, such as conda's
/// `# >>> conda initialize >>>` / `# <<< conda initialize <<<`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Foreign {
    /// The BEGIN line's text, as written for a new block (leading indentation kept);
    /// compared whitespace-trimmed.
    pub begin: String,
    /// The END line's text, as [`Foreign::begin`].
    pub end: String,
}

impl Foreign {
    /// The identity of a foreign block: no owner; the name is the words the BEGIN and END
    /// lines share, in place (both lines when they differ in more than one word), without
    /// the comment opener and surrounding punctuation: `conda initialize` for conda's lines,
    /// `ANSIBLE MANAGED BLOCK` for `# BEGIN ANSIBLE MANAGED BLOCK`.
    #[must_use]
    pub fn identity(&self) -> Identity {
        let (b, e): (Vec<&str>, Vec<&str>) = (
            self.begin.split_whitespace().collect(),
            self.end.split_whitespace().collect(),
        );
        let shared = if b.len() == e.len() && b.iter().zip(&e).filter(|(x, y)| x != y).count() == 1
        {
            b.iter()
                .zip(&e)
                .filter(|(x, y)| x == y)
                .map(|(x, _)| *x)
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            self.begin.clone()
        };
        let name = shared
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches(|c: char| !c.is_alphanumeric());
        Identity::new("", if name.is_empty() { &self.begin } else { name })
    }

    /// The marker a comment's text is, if it is one of the two literal lines.
    #[must_use]
    pub fn marker(&self, text: &[u8]) -> Option<Marker> {
        let t = String::from_utf8_lossy(text);
        let t = t.trim();
        let kind = if t == self.begin.trim() {
            Kind::Begin
        } else if t == self.end.trim() {
            Kind::End
        } else {
            return None;
        };
        let id = self.identity();
        Some(Marker {
            kind,
            owner: id.owner,
            name: id.name,
            attrs: Vec::new(),
            note: None,
            note_dash: None,
        })
    }
}

/// Start of the line holding `offset`, after a BOM: a marker line on the first line of a
/// file with a BOM starts after it, so that rewriting or removing the region keeps the BOM.
fn marker_line_start(src: &[u8], offset: usize) -> usize {
    let ls = line_start(src, offset);
    if ls == 0 { bom_len(src) } else { ls }
}

impl<'a> Document<'a> {
    /// Lexes `src` with `syntax` and finds its regions and problems.
    #[must_use]
    pub fn parse(src: &'a [u8], syntax: &dyn Lexer) -> Self {
        Self::parse_with(src, syntax, None)
    }

    /// As [`Document::parse`], also recognizing a foreign block's literal marker lines.
    #[must_use]
    pub fn parse_with(src: &'a [u8], syntax: &dyn Lexer, foreign: Option<&Foreign>) -> Self {
        // Comments that cannot be markers are not needed, unless a foreign block's literal
        // lines (any text) are looked for.
        let keep = if foreign.is_some() {
            Keep::All
        } else {
            Keep::MarkerLike
        };
        let (lexed, scan) = syntax.scan_keeping(src, keep);
        let mut doc = Self::from_lexed_with(src, syntax, lexed, foreign);
        doc.scan = scan;
        doc
    }

    /// Finds regions and problems in an already lexed file.
    #[must_use]
    pub fn from_lexed(src: &'a [u8], syntax: &dyn Lexer, lexed: Lexed) -> Self {
        Self::from_lexed_with(src, syntax, lexed, None)
    }

    /// As [`Document::from_lexed`], also recognizing a foreign block's marker lines.
    #[must_use]
    pub fn from_lexed_with(
        src: &'a [u8],
        syntax: &dyn Lexer,
        lexed: Lexed,
        foreign: Option<&Foreign>,
    ) -> Self {
        let mut problems = Problems::default();
        let mut lines = LineCounter::new(src);
        let mut pairing = Pairing {
            src,
            syntax,
            foreign,
            regions: Vec::new(),
            stack: Vec::new(),
        };
        let mut marker_lines = Vec::new();
        let mut near_misses = Vec::new();
        for c in &lexed.comments {
            let text = c.text.of(src);
            if foreign.is_none() && !marker::may_be_marker(text) {
                continue;
            }
            let parsed = foreign
                .filter(|_| c.alone)
                .and_then(|f| f.marker(text))
                .or_else(|| marker::parse(text));
            let Some(m) = parsed else {
                if c.alone
                    && let Some(nm) = marker::near_miss(text)
                {
                    let ls = marker_line_start(src, c.text.start);
                    if problems.has_room(ProblemKind::NearMissMarker) {
                        near_misses.push((Span::new(ls, line_end(src, c.text.start)), nm.clone()));
                    }
                    {
                        let (line, column) = (lines.line_of(c.text.start), c.text.start - ls + 1);
                        problems.add(ProblemKind::NearMissMarker, line, column, || {
                            Problem::new(
                                ProblemKind::NearMissMarker,
                                line,
                                column,
                                format!("this comment is almost a marker ({})", nm.what),
                            )
                            .help(format!(
                                "if it is one, write `{}`",
                                syntax.render_marker(&nm.fixed)
                            ))
                        })
                    };
                }
                continue;
            };
            let ls = marker_line_start(src, c.text.start);
            let line_no = lines.line_of(c.text.start);
            let column = c.text.start - ls + 1;
            if !c.alone {
                problems.add(ProblemKind::MarkerNotAlone, line_no, column, || {
                    Problem::new(
                    ProblemKind::MarkerNotAlone,
                    line_no,
                    column,
                    format!(
                        "{} marker for \"{}\" is not alone on its line (or not at the top level), \
                         so it is ignored",
                        m.kind.keyword(),
                        m.identity()
                    ),
                )
                .help("put it on a line of its own")
                });
                continue;
            }
            let line = MarkerLine {
                line: Span::new(ls, line_end(src, c.text.start)),
                text: c.text,
                line_no,
                context: c.context,
            };
            marker_lines.push(line.line);
            pairing.push(line, m, &mut problems);
        }
        wrong_openers(src, syntax, &lexed, &mut problems);
        let regions = pairing.finish(&mut problems);
        duplicate_keys(src, &lexed, &regions, syntax, &mut problems);
        Self {
            src,
            lexed,
            regions,
            problems: problems.finish(),
            eol: eol_of(src),
            marker_lines,
            near_misses,
            scan: None,
        }
    }

    /// The region with this identity, if exactly present.
    #[must_use]
    pub fn region(&self, id: &Identity) -> Option<&Region> {
        self.regions.iter().find(|r| &r.id == id)
    }

    /// True when a problem blocks editing this file.
    #[must_use]
    pub fn blocked(&self) -> bool {
        self.problems.iter().any(|p| p.kind.blocks())
    }

    /// The region whose span contains `offset`, if any.
    #[must_use]
    pub fn region_at(&self, offset: usize) -> Option<&Region> {
        // Regions are in file order and do not overlap: a binary search finds the only one
        // that can hold `offset` (placing after a regex asks this once per line).
        let i = self.regions.partition_point(|r| r.span().end <= offset);
        self.regions
            .get(i)
            .filter(|r| r.span().start <= offset && offset < r.span().end)
    }
}

/// Keys assigned twice, as the format's policy judges them: the first
/// [`MAX_PROBLEMS_PER_KIND`](crate::problem::MAX_PROBLEMS_PER_KIND) in file order reported,
/// the rest counted.
fn duplicate_keys(
    src: &[u8],
    lexed: &Lexed,
    regions: &[Region],
    syntax: &dyn Lexer,
    problems: &mut Problems,
) {
    let policy = syntax.key_policy();
    // A key's name as the format's readers compare it; as written for most formats.
    let spells = syntax.spells_keys();
    let name_of = |k: crate::lex::Key| {
        if spells {
            syntax.key_name(src, k.name)
        } else {
            std::borrow::Cow::Borrowed(k.name.of(src))
        }
    };
    use std::hash::{BuildHasher as _, Hash as _, Hasher as _};
    let keys = &lexed.keys;
    // The region whose body holds `at`, with a cursor: keys come mostly in file order.
    let region_cursor = || {
        let mut cur = 0usize;
        move |at: usize| {
            if cur > 0 && regions.get(cur - 1).is_some_and(|r| r.body.end > at) {
                cur = regions.partition_point(|r| r.body.end <= at);
            }
            while regions.get(cur).is_some_and(|r| r.body.end <= at) {
                cur += 1;
            }
            regions.get(cur).filter(|r| r.body.start <= at).map(|_| cur)
        }
    };
    // Across owners, only keys inside regions of two different owners can be reported.
    if policy == KeyPolicy::AcrossOwners
        && regions
            .split_first()
            .is_none_or(|(first, rest)| rest.iter().all(|r| r.id.owner == first.id.owner))
    {
        return;
    }
    let hash_of = |k: crate::lex::Key| {
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        name_of(k).hash(&mut h);
        k.context.hash(&mut h);
        h.finish()
    };
    let wanted = |in_region: &mut dyn FnMut(usize) -> Option<usize>, k: crate::lex::Key| {
        policy == KeyPolicy::AnyDuplicate || in_region(k.name.start).is_some()
    };
    // Equal hashes are grouped by a counting sort on the hash's top bits (at most 2^10
    // buckets, so the counters and the lines being written to stay in cache: more
    // buckets made the scatter miss the cache on every key), then each bucket (a few
    // thousand keys) is searched for equal hashes with a bitmap: cheaper than sorting
    // millions of pairs, and 4 bytes per key (the low half of the hash). Only the keys
    // whose hash repeats are then found again, with their indexes; a collision of the
    // hashes is resolved by comparing names below.
    let count = {
        let mut in_region = region_cursor();
        keys.iter().filter(|&k| wanted(&mut in_region, k)).count()
    };
    let bits = (count / 4096)
        .clamp(1, 1 << 10)
        .next_power_of_two()
        .trailing_zeros();
    let bucket = |h: u64| {
        if bits == 0 {
            0
        } else {
            usize::try_from(h >> (64 - bits)).unwrap_or(0)
        }
    };
    let mut starts = vec![0u32; (1usize << bits) + 1];
    {
        let mut in_region = region_cursor();
        for k in keys.iter().filter(|&k| wanted(&mut in_region, k)) {
            starts[bucket(hash_of(k)) + 1] += 1;
        }
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    // The bucket and the low half of a hash: equal for equal keys.
    let tag = |h: u64| -> u64 { ((bucket(h) as u64) << 32) | (h & u64::from(u32::MAX)) };
    // Truncation intended: the low half of the hash.
    #[allow(clippy::cast_possible_truncation)]
    let low = |h: u64| h as u32;
    let mut next = starts.clone();
    let mut order = vec![0u32; count];
    {
        let mut in_region = region_cursor();
        for k in keys.iter().filter(|&k| wanted(&mut in_region, k)) {
            let h = hash_of(k);
            let slot = &mut next[bucket(h)];
            if let Some(o) = order.get_mut(*slot as usize) {
                *o = low(h);
            }
            *slot += 1;
        }
    }
    drop(next);
    // Most buckets hold no two equal hashes: a bitmap of a few low bits of each hash (in
    // cache) finds the only ones that can repeat, and only those are sorted. The hashes
    // that do repeat are kept (as bucket and low half); usually there are none, and the
    // keys need no second look.
    let mut seen = Bitmap::default();
    let mut twice = Bitmap::default();
    let mut maybe: Vec<u32> = Vec::new();
    let mut repeated: Vec<u64> = Vec::new();
    for b in 0..starts.len() - 1 {
        let Some(run) = order.get(starts[b] as usize..starts[b + 1] as usize) else {
            continue;
        };
        if run.len() < 2 {
            continue;
        }
        for &l in run {
            if seen.insert(l) {
                twice.insert(l);
            }
        }
        maybe.clear();
        maybe.extend(run.iter().filter(|&&l| twice.has(l)));
        for &l in run {
            seen.remove(l);
            twice.remove(l);
        }
        maybe.sort_unstable();
        for same in maybe.chunk_by(|a, b| a == b).filter(|r| r.len() > 1) {
            repeated.push(((b as u64) << 32) | u64::from(same[0]));
        }
    }
    drop(order);
    if repeated.is_empty() {
        return;
    }
    repeated.sort_unstable();
    // The keys whose hash repeats, in file order: the first of each name is remembered (by
    // hash; names that only share a hash are told apart), and each later one is a duplicate.
    // Found in file order, so the first ones reported are kept and the rest counted: a
    // crafted file can assign one key millions of times.
    let mut first_of: rustc_hash::FxHashMap<u64, Vec<usize>> = rustc_hash::FxHashMap::default();
    let mut in_region = region_cursor();
    let mut region_of = region_cursor();
    let mut found = Vec::new();
    let (mut left_out, mut first_left_out) = (0usize, usize::MAX);
    for (i, k) in keys.iter().enumerate() {
        if !wanted(&mut in_region, k) {
            continue;
        }
        let t = tag(hash_of(k));
        if repeated.binary_search(&t).is_err() {
            continue;
        }
        let names = first_of.entry(t).or_default();
        let Some(first) = names
            .iter()
            .filter_map(|&f| keys.get(f))
            .find(|&f| name_of(f) == name_of(k) && f.context == k.context)
        else {
            names.push(i);
            continue;
        };
        let (first_at, at) = (first.name.start, k.name.start);
        let report = match policy {
            KeyPolicy::AnyDuplicate => true,
            KeyPolicy::AcrossOwners => match (region_of(first_at), region_of(at)) {
                (Some(a), Some(b)) => regions[a].id.owner != regions[b].id.owner,
                _ => false,
            },
        };
        if !report {
            continue;
        }
        if found.len() < crate::problem::MAX_PROBLEMS_PER_KIND {
            found.push((at, first_at, k.name.start, k.name.end));
        } else {
            left_out += 1;
            first_left_out = first_left_out.min(at);
        }
    }
    drop(first_of);
    // Repeats the lexer only counted: each comes after more recorded repeats than can be
    // reported (see `Keys::push_counting_repeats`).
    if keys.left_out() > 0 {
        left_out += keys.left_out();
        if first_left_out == usize::MAX {
            first_left_out = found.last().map_or(src.len(), |f| f.0);
        }
    }
    // Line numbers only for what is reported, each found by one pass in file order
    // (counting from the start for each would be quadratic in the duplicates).
    let mut firsts: Vec<usize> = found.iter().map(|f| f.1).collect();
    firsts.sort_unstable();
    firsts.dedup();
    let mut lines = LineCounter::new(src);
    let first_lines: Vec<usize> = firsts.iter().map(|&f| lines.line_of(f)).collect();
    let mut lines = LineCounter::new(src);
    for (at, first, start, end) in found {
        let name = Span::new(start, end);
        let first_line = firsts
            .binary_search(&first)
            .ok()
            .and_then(|i| first_lines.get(i))
            .copied()
            .unwrap_or(1);
        let (line, col) = lines.line_col(at);
        problems.add(ProblemKind::DuplicateKey, line, col, || {
            Problem::new(
                ProblemKind::DuplicateKey,
                line,
                col,
                format!(
                    "`{}` is also assigned on line {first_line}",
                    String::from_utf8_lossy(name.of(src))
                ),
            )
            .help("readers disagree on which value wins: keep one of them")
        });
    }
    if left_out > 0 {
        let (line, col) = lines.line_col(first_left_out);
        problems.left_out(ProblemKind::DuplicateKey, left_out, line, col);
    }
}

/// A set of the low [`Bitmap::BITS`] bits of 32-bit hashes, small enough to stay in cache.
struct Bitmap(Vec<u64>);

impl Default for Bitmap {
    fn default() -> Self {
        Self(vec![0; (1 << Self::BITS) / 64])
    }
}

impl Bitmap {
    /// How many low bits of a hash are kept.
    const BITS: u32 = 16;

    /// The word and bit of `h`.
    const fn at(h: u32) -> (usize, u64) {
        let b = h & ((1 << Self::BITS) - 1);
        ((b / 64) as usize, 1 << (b % 64))
    }

    /// Adds `h`; true when it was there already.
    fn insert(&mut self, h: u32) -> bool {
        let (w, bit) = Self::at(h);
        self.0.get_mut(w).is_some_and(|word| {
            let had = *word & bit != 0;
            *word |= bit;
            had
        })
    }

    /// Whether `h` is there.
    fn has(&self, h: u32) -> bool {
        let (w, bit) = Self::at(h);
        self.0.get(w).is_some_and(|word| word & bit != 0)
    }

    /// Removes `h`.
    fn remove(&mut self, h: u32) {
        let (w, bit) = Self::at(h);
        if let Some(word) = self.0.get_mut(w) {
            *word &= !bit;
        }
    }
}

/// Lines that would be markers but for their comment opener (`// BEGIN …` in a shell file).
fn wrong_openers(src: &[u8], syntax: &dyn Lexer, lexed: &Lexed, problems: &mut Problems) {
    if syntax.opener() != "#" {
        return;
    }
    // Only lines that hold the word MANAGED (in any case) can be near misses of this kind.
    let mut starts: Vec<usize> = memchr::memmem::find_iter(src, b"ANAGED")
        .chain(memchr::memmem::find_iter(src, b"anaged"))
        .map(|at| line_start(src, at))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    let mut lines = LineCounter::new(src);
    for start in starts {
        let end = line_end(src, start);
        let line = &src[start..end];
        let indent = line
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count();
        let text = &line[indent..];
        let Some(o) = [&b"//"[..], b";", b"--", b"<!--"]
            .into_iter()
            .find(|o| text.starts_with(o))
        else {
            continue;
        };
        // A real comment of the format (`;` in INI) is no wrong opener.
        let at = start + indent;
        if lexed.is_inner(start)
            || lexed
                .comments
                .binary_search_by_key(&at, |c| c.text.start)
                .is_ok()
        {
            continue;
        }
        let as_hash = [b"#".as_slice(), &text[o.len()..]].concat();
        if let Some(m) = marker::parse(&as_hash) {
            {
                let (line, column) = (lines.line_of(start), indent + 1);
                problems.add(ProblemKind::NearMissMarker, line, column, || {
                    Problem::new(
                ProblemKind::NearMissMarker, line, column,
                format!(
                    "this line looks like the {} marker of \"{}\" with the wrong comment opener \
                     `{}`",
                    m.kind.keyword(),
                    m.identity(),
                    String::from_utf8_lossy(o),
                )
            )
            .help(format!("in a {} file markers start with `#`", syntax.name()))
                })
            };
        }
    }
}

/// An open BEGIN on the pairing stack: its line, identity and recorded hash, and whether it
/// was already reported as broken (nested or interleaved).
struct Open {
    line: MarkerLine,
    id: Identity,
    hash: Option<String>,
    broken: bool,
}

/// Pairs BEGIN and END markers into regions as they are found, reporting what does not
/// pair. Only the open BEGINs are held, so markers cost nothing once paired.
struct Pairing<'s> {
    src: &'s [u8],
    syntax: &'s dyn Lexer,
    foreign: Option<&'s Foreign>,
    regions: Vec<Region>,
    stack: Vec<Open>,
}

impl Pairing<'_> {
    fn push(&mut self, m: MarkerLine, marker: Marker, problems: &mut Problems) {
        let kind = marker.kind;
        let Marker {
            owner, name, attrs, ..
        } = marker;
        let id = Identity { owner, name };
        if kind == Kind::Begin {
            let hash = attrs.into_iter().find(|(k, _)| k == "hash").map(|(_, v)| v);
            self.stack.push(Open {
                line: m,
                id,
                hash,
                broken: false,
            });
            return;
        }
        let (line_no, column) = (m.line_no, m.column());
        let Some(top) = self.stack.last() else {
            problems.add(ProblemKind::OrphanEnd, line_no, column, || {
                Problem::new(
                    ProblemKind::OrphanEnd,
                    line_no,
                    column,
                    format!("END marker for \"{id}\" has no BEGIN before it"),
                )
                .help("add the BEGIN line above the region's first line, or delete this END line")
            });
            return;
        };
        if top.id == id {
            let Some(b) = self.stack.pop() else {
                return;
            };
            if let Some(outer) = self.stack.last_mut() {
                let (bl, bc) = (b.line.line_no, b.line.column());
                problems.add(ProblemKind::NestedRegion, bl, bc, || {
                    Problem::new(
                        ProblemKind::NestedRegion,
                        bl,
                        bc,
                        format!(
                            "region \"{id}\" is inside region \"{}\" (BEGIN on line {})",
                            outer.id, outer.line.line_no
                        ),
                    )
                    .help("regions cannot nest: move it out")
                });
                outer.broken = true;
            } else if !b.broken {
                self.regions.push(self.region(b, m));
            }
        } else if let Some(pos) = self.stack.iter().rposition(|b| b.id == id) {
            let inner = &self.stack[self.stack.len() - 1];
            problems.add(ProblemKind::InterleavedRegions, line_no, column, || {
                Problem::new(
                    ProblemKind::InterleavedRegions,
                    line_no,
                    column,
                    format!(
                        "END of \"{id}\" comes before the END of \"{}\" (BEGIN on line {}), \
                         which started inside it",
                        inner.id, inner.line.line_no
                    ),
                )
                .help("move one region's lines so they do not overlap")
            });
            self.stack.remove(pos);
            for entry in &mut self.stack[pos..] {
                entry.broken = true;
            }
        } else {
            let Some(b) = self.stack.pop() else { return };
            let case_only = b.id.eq_ignore_case(&id);
            problems.add(ProblemKind::MismatchedEnd, line_no, column, || {
                Problem::new(
                    ProblemKind::MismatchedEnd,
                    line_no,
                    column,
                    format!(
                        "END marker for \"{id}\" does not match the open BEGIN for \"{}\" on \
                         line {}{}",
                        b.id,
                        b.line.line_no,
                        if case_only {
                            " (they differ only in case)"
                        } else {
                            ""
                        }
                    ),
                )
                .help("make both lines name the same region")
            });
        }
    }

    fn region(&self, begin: Open, end: MarkerLine) -> Region {
        let body = Span::new(begin.line.line.end, end.line.start);
        let state = match &begin.hash {
            None => State::Unhashed,
            Some(h) if hash::matches(h, &self.syntax.normalize(body.of(self.src))) => {
                State::Pristine
            }
            Some(_) => State::Drifted,
        };
        Region {
            id: begin.id,
            begin: begin.line,
            end,
            body,
            state,
        }
    }

    /// The regions found; BEGINs left open, duplicates, regions crossing a structure and
    /// drift reported.
    fn finish(self, problems: &mut Problems) -> Vec<Region> {
        let Self {
            syntax,
            foreign,
            regions,
            stack,
            ..
        } = self;
        for b in stack.into_iter().filter(|b| !b.broken) {
            let (bl, bc) = (b.line.line_no, b.line.column());
            problems.add(ProblemKind::UnclosedBegin, bl, bc, || {
                Problem::new(
                    ProblemKind::UnclosedBegin,
                    bl,
                    bc,
                    format!("BEGIN marker for \"{}\" has no END", b.id),
                )
                .help(format!(
                    "add `{}` after the region's last line",
                    // A foreign block ends with its own literal line, not a demarcate marker.
                    match foreign.filter(|f| f.identity() == b.id) {
                        Some(f) => f.end.trim().to_owned(),
                        None => syntax.render_marker(&Marker::end(&b.id)),
                    }
                ))
            });
        }
        // Two complete regions with one identity: the second is a duplicate. The first region
        // of each identity, by a map: comparing each region with all before it was quadratic
        // in the number of regions.
        let mut firsts: std::collections::HashMap<&Identity, usize> =
            std::collections::HashMap::with_capacity(regions.len());
        for (i, r) in regions.iter().enumerate() {
            let (line, column) = (r.begin.line_no, r.begin.column());
            if let Some(first) = firsts.get(&r.id).and_then(|&f| regions.get(f)) {
                problems.add(ProblemKind::DuplicateRegion, line, column, || {
                    Problem::new(
                        ProblemKind::DuplicateRegion,
                        line,
                        column,
                        format!(
                            "region \"{}\" appears twice (first on line {})",
                            r.id, first.begin.line_no
                        ),
                    )
                    .help("delete one copy, markers included")
                });
            } else {
                firsts.insert(&r.id, i);
            }
        }
        drop(firsts);
        for r in regions.iter().filter(|r| r.begin.context != r.end.context) {
            let (line, column) = (r.end.line_no, r.end.column());
            problems.add(ProblemKind::MarkerCrossesStructure, line, column, || {
                Problem::new(
                    ProblemKind::MarkerCrossesStructure,
                    line,
                    column,
                    format!(
                        "END marker for \"{}\" is not in the same object, array or table as \
                         its BEGIN (line {})",
                        r.id, r.begin.line_no
                    ),
                )
                .help("move it so the region holds whole entries")
            });
        }
        for r in regions.iter().filter(|r| r.state == State::Drifted) {
            let (line, column) = (r.begin.line_no, r.begin.column());
            problems.add(ProblemKind::Drift, line, column, || {
                Problem::new(
                    ProblemKind::Drift,
                    line,
                    column,
                    format!(
                        "region \"{}\" was edited by hand since it was written (its hash differs)",
                        r.id
                    ),
                )
                .help("the edit is kept unless the region is overwritten on purpose")
            });
        }
        regions
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Document;
    use crate::format::Format;
    use crate::marker;
    use crate::marker::may_be_marker;
    use crate::problem::ProblemKind;

    const WORDS: &[&str] = &[
        "#",
        "##",
        "//",
        "/*",
        "*/",
        " ",
        "\t",
        "  ",
        "\r",
        "\u{c}",
        "BEGIN",
        "begin",
        "BEGN",
        "BEGGIN",
        "EGIN",
        "Begins",
        "BEGINZYLOS",
        "END",
        "end",
        "ENDD",
        "ND",
        "EN",
        "MANAGED",
        "managed",
        "MANGED",
        "MNAAGED",
        "MANAGE",
        "ZYLOSMANAGED",
        "MANAGEDx",
        "ZYLOS",
        "x",
        "hash=ab",
        "--",
        "note",
        "a",
        "comment",
        "trailing",
        "é",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn gate_never_hides_a_marker_or_near_miss(parts in proptest::collection::vec(
            proptest::sample::select(WORDS), 0..10
        )) {
            let text = parts.concat();
            let t = text.as_bytes();
            if !may_be_marker(t) {
                prop_assert!(marker::parse(t).is_none(), "{text:?}");
                prop_assert!(marker::near_miss(t).is_none(), "{text:?}");
            }
        }

        #[test]
        fn gate_never_hides_on_bytes(t in proptest::collection::vec(any::<u8>(), 0..40)) {
            if !may_be_marker(&t) {
                prop_assert!(marker::parse(&t).is_none());
                prop_assert!(marker::near_miss(&t).is_none());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Lexing only the comments that can be markers finds the same document as lexing
        /// them all, in every format.
        #[test]
        fn keeping_marker_like_comments_finds_the_same_document(parts in proptest::collection::vec(
            proptest::sample::select(&[
                "# BEGIN Z MANAGED a\n", "# END Z MANAGED a\n", "# BEGN Z MANAGED a\n",
                "// BEGIN Z MANAGED a\n", "; END Z MANAGED a\n", "<!-- BEGIN Z MANAGED a -->\n",
                "<!-- END Z MANAGED a -->\n", "# plain comment\n", "#\n", "x=1 # note\n",
                "a = 1\n", "\"q\n", "'", "{", "}", "[t]\n", "key: v\n", "<# b #>\n", "\n",
                "# SIG # Begin signature block\n", "export A=1\n", "A=1\n",
            ][..]), 0..14
        )) {
            let src = parts.concat();
            let src = src.as_bytes();
            for f in Format::ALL.iter().filter(|f| f.name() != "json") {
                let syntax = f.syntax();
                let kept = Document::parse(src, syntax);
                let all = Document::from_lexed(src, syntax, syntax.scan(src).0);
                prop_assert_eq!(&kept.regions, &all.regions, "{}", f.name());
                prop_assert_eq!(&kept.problems, &all.problems, "{}", f.name());
                prop_assert_eq!(&kept.marker_lines, &all.marker_lines, "{}", f.name());
                prop_assert_eq!(kept.near_misses.len(), all.near_misses.len());
            }
        }
    }

    #[test]
    fn gate_passes_markers_and_near_misses_and_stops_plain_comments() {
        assert!(may_be_marker(b"# BEGIN ZYLOS MANAGED x"));
        assert!(may_be_marker(b"/* END MANAGED */"));
        assert!(may_be_marker(b"# BEGN ZYLOS MANGED x"));
        assert!(may_be_marker("#éBEGGIN MANAGED".as_bytes()));
        assert!(!may_be_marker(b"# a comment line with some text"));
        assert!(!may_be_marker(b"# trailing comment"));
        assert!(!may_be_marker(b"#!/bin/sh"));
    }

    #[test]
    fn duplicate_keys_among_many_are_found_with_their_lines() {
        let mut src = String::new();
        for i in 0..10_000 {
            src.push_str(&format!("K{i}=1\n"));
        }
        src.push_str("  K77=2\nK5000=3\nK77=4\n");
        let doc = Document::parse(src.as_bytes(), Format::Env.syntax());
        let dups: Vec<(usize, usize, &str)> = doc
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateKey)
            .map(|p| (p.line, p.column, p.message.as_str()))
            .collect();
        assert_eq!(dups.len(), 3, "{dups:?}");
        assert_eq!((dups[0].0, dups[0].1), (10_001, 3));
        assert!(
            dups[0].2.contains("`K77` is also assigned on line 78"),
            "{}",
            dups[0].2
        );
        assert_eq!((dups[1].0, dups[1].1), (10_002, 1));
        assert!(dups[1].2.contains("on line 5001"), "{}", dups[1].2);
        assert_eq!((dups[2].0, dups[2].1), (10_003, 1));
        assert!(dups[2].2.contains("on line 78"), "{}", dups[2].2);
    }

    #[test]
    fn marker_lines_read_their_marker_and_hash_again_from_the_source() {
        let body = "export A=1\n";
        let h = crate::hash::of_normalized(&Format::Shell.syntax().normalize(body.as_bytes()));
        let src = format!(
            "x=1\n  # BEGIN Z MANAGED a hash={h} -- note\n{body}  # END Z MANAGED a\n\
             # BEGIN Z MANAGED b\n# END Z MANAGED b\n"
        );
        let doc = Document::parse(src.as_bytes(), Format::Shell.syntax());
        let [a, b] = &doc.regions[..] else {
            panic!("{:?}", doc.regions)
        };
        assert_eq!((a.begin.line_no, a.begin.column()), (2, 3));
        assert_eq!(a.hash(doc.src), Some(h.clone()));
        let m = a.begin.marker(doc.src).expect("a marker");
        assert_eq!((m.owner.as_str(), m.name.as_str()), ("Z", "a"));
        assert_eq!(m.note.as_deref(), Some("note"));
        assert_eq!(
            a.end.marker(doc.src).map(|m| m.kind),
            Some(marker::Kind::End)
        );
        assert_eq!(b.hash(doc.src), None);
        assert_eq!(b.state, super::State::Unhashed);
    }

    /// A crafted file with a problem on every line keeps the first of each kind and counts
    /// the rest (it used to keep millions of messages: 83x the file in memory, 10 s).
    #[test]
    fn problems_of_one_kind_are_capped_in_file_order_and_the_rest_counted() {
        use crate::problem::MAX_PROBLEMS_PER_KIND as MAX;
        let n = MAX + 500;
        let mut src = String::new();
        for i in 0..n {
            src.push_str(&format!("A=1\n# BEGN X MANAGED r{i}\n"));
        }
        src.push_str("A=2\n# END X MANAGED orphan\n");
        let doc = Document::parse(src.as_bytes(), Format::Env.syntax());
        let of = |kind| -> Vec<&crate::problem::Problem> {
            doc.problems.iter().filter(|p| p.kind == kind).collect()
        };
        for (kind, found) in [
            (ProblemKind::DuplicateKey, n),
            (ProblemKind::NearMissMarker, n),
        ] {
            let ps = of(kind);
            assert_eq!(ps.len(), MAX + 1, "{kind:?}");
            // The kept ones are the first in the file; the last says how many more there are,
            // at the first one left out.
            let kept_lines: Vec<usize> = ps[..MAX].iter().map(|p| p.line).collect();
            assert!(kept_lines.windows(2).all(|w| w[0] < w[1]));
            let more = ps[MAX];
            assert!(
                more.message
                    .starts_with(&format!("{} more `{}`", found - MAX, kind.as_str())),
                "{}",
                more.message
            );
            assert!(more.line > kept_lines[MAX - 1], "{kind:?} {}", more.line);
        }
        assert_eq!(doc.near_misses.len(), MAX);
        // A blocking problem of another kind is still there, so the file stays blocked.
        assert_eq!(of(ProblemKind::OrphanEnd).len(), 1);
        assert!(doc.blocked());
        // The first duplicate is reported at line 3 (the second `A=1`).
        assert_eq!(of(ProblemKind::DuplicateKey)[0].line, 3);
    }

    /// The duplicate-key report on a file whose keys the lexer only partly recorded: the
    /// same as on one whose keys it recorded every time (env and TOML count a repeat beyond
    /// what can be reported instead of recording it).
    #[test]
    fn repeats_counted_by_the_lexer_are_reported_as_recorded_ones() {
        use crate::lex::Keep;
        let mut env = String::new();
        let mut toml = String::new();
        for i in 0..6000 {
            env.push_str(&format!("K{}=1\n", i % 7));
            if i % 1500 == 0 {
                toml.push_str(&format!("[t{}]\n", i / 1500));
            }
            toml.push_str(&format!("k{} = 1\n", i % 5));
        }
        for (src, format) in [(env, Format::Env), (toml, Format::Toml)] {
            let syntax = format.syntax();
            let report = |keep: Keep| {
                let (lexed, _) = syntax.scan_keeping(src.as_bytes(), keep);
                let left_out = lexed.keys.left_out();
                let doc = Document::from_lexed(src.as_bytes(), syntax, lexed);
                let problems: Vec<(usize, usize, String)> = doc
                    .problems
                    .iter()
                    .filter(|p| p.kind == ProblemKind::DuplicateKey)
                    .map(|p| (p.line, p.column, p.message.clone()))
                    .collect();
                (problems, left_out)
            };
            let (all, none_left_out) = report(Keep::All);
            let (some, left_out) = report(Keep::MarkerLike);
            assert_eq!(none_left_out, 0, "{format:?}");
            assert!(left_out > 3000, "{format:?}: {left_out}");
            assert_eq!(all.len(), crate::problem::MAX_PROBLEMS_PER_KIND + 1);
            assert_eq!(some, all, "{format:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The bucketed search reports what a map of first assignments would: every
        /// assignment of a key after its first, with the first one's line (the first
        /// [`MAX_PROBLEMS_PER_KIND`](crate::problem::MAX_PROBLEMS_PER_KIND), then a count).
        #[test]
        fn duplicate_keys_match_a_map_of_first_lines(
            picks in proptest::collection::vec(0u32..6000, 1..9000)
        ) {
            use crate::problem::MAX_PROBLEMS_PER_KIND as MAX;
            let src: String = picks.iter().map(|k| format!("K{k}=1\n")).collect();
            let doc = Document::parse(src.as_bytes(), Format::Env.syntax());
            let got: Vec<(usize, String)> = doc
                .problems
                .iter()
                .filter(|p| p.kind == ProblemKind::DuplicateKey)
                .map(|p| (p.line, p.message.clone()))
                .collect();
            let mut first = std::collections::HashMap::new();
            let mut want = Vec::new();
            for (i, k) in picks.iter().enumerate() {
                match first.get(k) {
                    Some(line) => {
                        want.push((i + 1, format!("`K{k}` is also assigned on line {line}")));
                    }
                    None => {
                        first.insert(*k, i + 1);
                    }
                }
            }
            if want.len() > MAX {
                let (line, more) = (want[MAX].0, want.len() - MAX);
                want.truncate(MAX);
                prop_assert_eq!(got.len(), MAX + 1);
                prop_assert_eq!(got[MAX].0, line);
                prop_assert!(got[MAX].1.starts_with(&format!("{more} more")), "{}", got[MAX].1);
                prop_assert_eq!(&got[..MAX], &want[..]);
            } else {
                prop_assert_eq!(got, want);
            }
        }
    }
}

#[cfg(test)]
mod foreign_tests {
    use super::*;

    #[test]
    fn a_foreign_block_is_named_by_the_words_its_lines_share() {
        let f = |b: &str, e: &str| {
            Foreign {
                begin: b.to_owned(),
                end: e.to_owned(),
            }
            .identity()
        };
        assert_eq!(
            f(
                "# BEGIN ANSIBLE MANAGED BLOCK",
                "# END ANSIBLE MANAGED BLOCK"
            ),
            Identity::new("", "ANSIBLE MANAGED BLOCK")
        );
        assert_eq!(
            f("<!-- BEGIN X -->", "<!-- END X -->"),
            Identity::new("", "X")
        );
        assert_eq!(
            f("# >>> conda initialize >>>", "# <<< conda initialize <<<"),
            Identity::new("", "conda initialize")
        );
    }
}
