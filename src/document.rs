//! A parsed file: its regions, their states, and the problems found, all as spans into the
//! original bytes. No I/O.

use crate::hash;
use crate::lex::{KeyPolicy, Lexed, Lexer, Scan, Span};
use crate::lines::{LineCounter, bom_len};
pub(crate) use crate::lines::{eol_of, line_end, line_start};
use crate::marker::{self, Identity, Kind, Marker};
use crate::problem::{Problem, ProblemKind};

/// One marker line as found in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerLine {
    /// The parsed marker.
    pub marker: Marker,
    /// The whole line, from its first byte to after its line ending (or end of input).
    pub line: Span,
    /// 1-based line number.
    pub line_no: usize,
    /// 1-based column of the comment opener.
    pub column: usize,
    /// Structural context reported by the lexer.
    pub context: u32,
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

/// A cheap exact gate before [`marker::parse`] and [`marker::near_miss`], which most
/// comments fail: both need a first word (after the opener) that is a keyword or close to
/// one (at most 7 characters, or starting with `BEGIN`/`END` in any case), and a word that is or
/// is close to `MANAGED` (which keeps one of its three-letter pieces). False means neither
/// can match; a property test checks it against both.
fn may_be_marker(text: &[u8]) -> bool {
    let Some(body) = marker::strip_opener(text.trim_ascii()) else {
        return false;
    };
    let body = body.trim_ascii_start();
    let first = body
        .iter()
        .position(|&b| b == b' ' || b == b'\t')
        .map_or(body, |n| &body[..n]);
    let starts = |kw: &[u8]| first.len() >= kw.len() && first[..kw.len()].eq_ignore_ascii_case(kw);
    // Characters, as the edit distance counts them: at least the bytes that do not continue
    // a UTF-8 sequence.
    let chars = first.iter().filter(|&&b| b & 0xc0 != 0x80).count();
    if chars > 7 && !starts(b"begin") && !starts(b"end") {
        return false;
    }
    body.windows(3).any(|w| {
        let w = [w[0] | 0x20, w[1] | 0x20, w[2] | 0x20];
        matches!(&w, b"man" | b"ana" | b"nag" | b"age" | b"ged")
    })
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
        let (lexed, scan) = syntax.scan(src);
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
        let mut problems = Vec::new();
        let mut lines = LineCounter::new(src);
        let mut markers = Vec::new();
        let mut near_misses = Vec::new();
        for c in &lexed.comments {
            let text = c.text.of(src);
            if foreign.is_none() && !may_be_marker(text) {
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
                    problems.push(
                        Problem::new(
                            ProblemKind::NearMissMarker,
                            lines.line_of(c.text.start),
                            c.text.start - ls + 1,
                            format!("this comment is almost a marker ({})", nm.what),
                        )
                        .help(format!(
                            "if it is one, write `{}`",
                            syntax.render_marker(&nm.fixed)
                        )),
                    );
                    near_misses.push((Span::new(ls, line_end(src, c.text.start)), nm));
                }
                continue;
            };
            let ls = marker_line_start(src, c.text.start);
            let line_no = lines.line_of(c.text.start);
            let column = c.text.start - ls + 1;
            if !c.alone {
                problems.push(Problem::new(
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
                .help("put it on a line of its own"));
                continue;
            }
            markers.push(MarkerLine {
                marker: m,
                line: Span::new(ls, line_end(src, c.text.start)),
                line_no,
                column,
                context: c.context,
            });
        }
        wrong_openers(src, syntax, &lexed, &mut problems);
        let marker_lines = markers.iter().map(|m| m.line).collect();
        let regions = pair(src, syntax, markers, foreign, &mut problems);
        let mut doc = Self {
            src,
            lexed,
            regions,
            problems,
            eol: eol_of(src),
            marker_lines,
            near_misses,
            scan: None,
        };
        doc.duplicate_keys(syntax.key_policy());
        doc.problems.sort_by_key(|p| (p.line, p.column));
        doc
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

    fn duplicate_keys(&mut self, policy: KeyPolicy) {
        use std::hash::{BuildHasher as _, Hash as _, Hasher as _};
        let keys = &self.lexed.keys;
        let src = self.src;
        let regions = &self.regions;
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
        // Across owners, only keys inside regions can be reported.
        if policy == KeyPolicy::AcrossOwners && regions.is_empty() {
            return;
        }
        let hash_of = |k: &crate::lex::Key| {
            let mut h = rustc_hash::FxBuildHasher.build_hasher();
            k.name.of(src).hash(&mut h);
            k.context.hash(&mut h);
            h.finish()
        };
        let wanted = |in_region: &mut dyn FnMut(usize) -> Option<usize>, k: &crate::lex::Key| {
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
            keys.iter().filter(|k| wanted(&mut in_region, k)).count()
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
            for k in keys.iter().filter(|k| wanted(&mut in_region, k)) {
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
            for k in keys.iter().filter(|k| wanted(&mut in_region, k)) {
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
        // The keys whose hash repeats, by hash and then index.
        let mut shared: Vec<(u64, u32)> = Vec::new();
        {
            let mut in_region = region_cursor();
            for (i, k) in keys.iter().enumerate() {
                if !wanted(&mut in_region, k) {
                    continue;
                }
                let t = tag(hash_of(k));
                if repeated.binary_search(&t).is_ok() {
                    shared.push((t, u32::try_from(i).unwrap_or(u32::MAX)));
                }
            }
        }
        drop(repeated);
        shared.sort_unstable();
        let mut region_of = region_cursor();
        let mut found = Vec::new();
        for run in shared.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
            // Within one hash, group the keys that really are equal (collisions are not).
            let mut rest: Vec<usize> = run.iter().map(|&(_, i)| i as usize).collect();
            while let Some(&first) = rest.first() {
                let same = |i: &usize| {
                    keys[*i].name.of(src) == keys[first].name.of(src)
                        && keys[*i].context == keys[first].context
                };
                let (group, others): (Vec<usize>, Vec<usize>) = rest.iter().partition(|i| same(i));
                rest = others;
                let first_at = keys[first].name.start;
                let first_region = region_of(first_at);
                for &i in &group[1..] {
                    let at = keys[i].name.start;
                    let report = match policy {
                        KeyPolicy::AnyDuplicate => true,
                        KeyPolicy::AcrossOwners => match (first_region, region_of(at)) {
                            (Some(a), Some(b)) => regions[a].id.owner != regions[b].id.owner,
                            _ => false,
                        },
                    };
                    if report {
                        found.push((at, first_at, keys[i].name));
                    }
                }
            }
        }
        // Line numbers only for what is reported, each found by one pass in file order
        // (counting from the start for each would be quadratic in the duplicates).
        let mut firsts: Vec<usize> = found.iter().map(|f| f.1).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let mut lines = LineCounter::new(src);
        let first_lines: Vec<usize> = firsts.iter().map(|&f| lines.line_of(f)).collect();
        found.sort_unstable_by_key(|f| f.0);
        let mut lines = LineCounter::new(src);
        for (at, first, name) in found {
            let first_line = firsts
                .binary_search(&first)
                .ok()
                .and_then(|i| first_lines.get(i))
                .copied()
                .unwrap_or(1);
            let (line, col) = lines.line_col(at);
            self.problems.push(
                Problem::new(
                    ProblemKind::DuplicateKey,
                    line,
                    col,
                    format!(
                        "`{}` is also assigned on line {first_line}",
                        String::from_utf8_lossy(name.of(src))
                    ),
                )
                .help("readers disagree on which value wins: keep one of them"),
            );
        }
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
fn wrong_openers(src: &[u8], syntax: &dyn Lexer, lexed: &Lexed, problems: &mut Vec<Problem>) {
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
            problems.push(Problem::new(
                ProblemKind::NearMissMarker,
                lines.line_of(start),
                indent + 1,
                format!(
                    "this line looks like the {} marker of \"{}\" with the wrong comment opener \
                     `{}`",
                    m.kind.keyword(),
                    m.identity(),
                    String::from_utf8_lossy(o),
                )
            )
            .help(format!("in a {} file markers start with `#`", syntax.name())));
        }
    }
}

/// Pairs BEGIN and END markers into regions, reporting what does not pair.
fn pair(
    src: &[u8],
    syntax: &dyn Lexer,
    markers: Vec<MarkerLine>,
    foreign: Option<&Foreign>,
    problems: &mut Vec<Problem>,
) -> Vec<Region> {
    let mut regions: Vec<Region> = Vec::new();
    // Open BEGINs; the flag marks one already reported as broken (nested or interleaved).
    let mut stack: Vec<(MarkerLine, bool)> = Vec::new();
    for m in markers {
        let id = m.marker.identity();
        match m.marker.kind {
            Kind::Begin => stack.push((m, false)),
            Kind::End => {
                let Some((top, _)) = stack.last() else {
                    problems.push(Problem::new(
                        ProblemKind::OrphanEnd,
                        m.line_no,
                        m.column,
                        format!("END marker for \"{id}\" has no BEGIN before it"),
                    )
                    .help(
                        "add the BEGIN line above the region's first line, or delete this END line",
                    ));
                    continue;
                };
                if top.marker.identity() == id {
                    let Some((b, broken)) = stack.pop() else {
                        continue;
                    };
                    if let Some((outer, _)) = stack.last() {
                        problems.push(
                            Problem::new(
                                ProblemKind::NestedRegion,
                                b.line_no,
                                b.column,
                                format!(
                                    "region \"{id}\" is inside region \"{}\" (BEGIN on line {})",
                                    outer.marker.identity(),
                                    outer.line_no
                                ),
                            )
                            .help("regions cannot nest: move it out"),
                        );
                        if let Some(o) = stack.last_mut() {
                            o.1 = true;
                        }
                    } else if !broken {
                        regions.push(region(src, syntax, b, m, problems));
                    }
                } else if let Some(pos) = stack.iter().rposition(|(b, _)| b.marker.identity() == id)
                {
                    let inner = &stack[stack.len() - 1].0;
                    problems.push(Problem::new(
                        ProblemKind::InterleavedRegions,
                        m.line_no,
                        m.column,
                        format!(
                            "END of \"{id}\" comes before the END of \"{}\" (BEGIN on line {}), \
                             which started inside it",
                            inner.marker.identity(),
                            inner.line_no
                        ),
                    )
                    .help("move one region's lines so they do not overlap"));
                    stack.remove(pos);
                    for entry in &mut stack[pos..] {
                        entry.1 = true;
                    }
                } else {
                    let Some((b, _)) = stack.pop() else { continue };
                    let case_only = b.marker.identity().eq_ignore_case(&id);
                    problems.push(Problem::new(
                        ProblemKind::MismatchedEnd,
                        m.line_no,
                        m.column,
                        format!(
                            "END marker for \"{id}\" does not match the open BEGIN for \"{}\" on \
                             line {}{}",
                            b.marker.identity(),
                            b.line_no,
                            if case_only {
                                " (they differ only in case)"
                            } else {
                                ""
                            }
                        ),
                    )
                    .help("make both lines name the same region"));
                }
            }
        }
    }
    for (b, broken) in stack {
        if broken {
            continue;
        }
        problems.push(
            Problem::new(
                ProblemKind::UnclosedBegin,
                b.line_no,
                b.column,
                format!("BEGIN marker for \"{}\" has no END", b.marker.identity()),
            )
            .help(format!(
                "add `{}` after the region's last line",
                // A foreign block ends with its own literal line, not a demarcate marker.
                match foreign.filter(|f| f.identity() == b.marker.identity()) {
                    Some(f) => f.end.trim().to_owned(),
                    None => syntax.render_marker(&Marker::end(&b.marker.identity())),
                }
            )),
        );
    }
    // Two complete regions with one identity: the second is a duplicate.
    // The first region of each identity, by a map: comparing each region with all before it
    // was quadratic in the number of regions.
    let mut firsts: std::collections::HashMap<&Identity, usize> =
        std::collections::HashMap::with_capacity(regions.len());
    let mut dup_idx = Vec::new();
    for (i, r) in regions.iter().enumerate() {
        if let Some(first) = firsts.get(&r.id).and_then(|&f| regions.get(f)) {
            problems.push(
                Problem::new(
                    ProblemKind::DuplicateRegion,
                    r.begin.line_no,
                    r.begin.column,
                    format!(
                        "region \"{}\" appears twice (first on line {})",
                        r.id, first.begin.line_no
                    ),
                )
                .help("delete one copy, markers included"),
            );
            dup_idx.push(i);
        } else {
            firsts.insert(&r.id, i);
        }
    }
    let crosses: Vec<usize> = regions
        .iter()
        .enumerate()
        .filter(|(_, r)| r.begin.context != r.end.context)
        .map(|(i, _)| i)
        .collect();
    for &i in &crosses {
        let r = &regions[i];
        problems.push(
            Problem::new(
                ProblemKind::MarkerCrossesStructure,
                r.end.line_no,
                r.end.column,
                format!(
                    "END marker for \"{}\" is not in the same object, array or table as its BEGIN \
                 (line {})",
                    r.id, r.begin.line_no
                ),
            )
            .help("move it so the region holds whole entries"),
        );
    }
    for r in &regions {
        if r.state == State::Drifted {
            problems.push(
                Problem::new(
                    ProblemKind::Drift,
                    r.begin.line_no,
                    r.begin.column,
                    format!(
                        "region \"{}\" was edited by hand since it was written (its hash differs)",
                        r.id
                    ),
                )
                .help("the edit is kept unless the region is overwritten on purpose"),
            );
        }
    }
    regions
}

fn region(
    src: &[u8],
    syntax: &dyn Lexer,
    begin: MarkerLine,
    end: MarkerLine,
    _problems: &mut [Problem],
) -> Region {
    let body = Span::new(begin.line.end, end.line.start);
    let state = match begin.marker.hash() {
        None => State::Unhashed,
        Some(h) if hash::matches(h, &syntax.normalize(body.of(src))) => State::Pristine,
        Some(_) => State::Drifted,
    };
    Region {
        id: begin.marker.identity(),
        begin,
        end,
        body,
        state,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Document, may_be_marker};
    use crate::format::Format;
    use crate::marker;
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The bucketed search reports what a map of first assignments would: every
        /// assignment of a key after its first, with the first one's line.
        #[test]
        fn duplicate_keys_match_a_map_of_first_lines(
            picks in proptest::collection::vec(0u32..6000, 1..9000)
        ) {
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
            prop_assert_eq!(got, want);
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
