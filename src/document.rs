//! A parsed file: its regions, their states, and the problems found, all as spans into the
//! original bytes. No I/O.

use crate::hash;
use crate::lex::{Comment, Keep, KeyPolicy, Lexed, Lexer, Scan, Span};
use crate::lines::{LineCounter, bom_len};
pub(crate) use crate::lines::{eol_of, line_end, line_start};
use crate::marker::{self, Identity, Kind, Marker};
use crate::problem::{Problem, ProblemKind, Problems};

/// The largest input a [`Document`] holds: offsets are kept in 32 bits, so that a file of
/// many regions costs a few words per marker. The command line refuses larger files
/// before parsing them; a larger input given to the library has its offsets clamped here
/// (wrong, never a panic).
pub(crate) const MAX_LEN: usize = u32::MAX as usize;

/// True when an input of `len` bytes fits a [`Document`] (see [`MAX_LEN`]).
#[must_use]
pub(crate) const fn fits(len: usize) -> bool {
    len <= MAX_LEN
}

/// An offset or count as kept in a [`MarkerLine`]: clamped to [`MAX_LEN`] (inputs that
/// large are refused before they are parsed).
fn narrow(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// One marker line as found in the file: where it is, not what it says ([`Region::id`] and
/// [`MarkerLine::marker`] read it again from the bytes when it is needed), so that a file of
/// many regions costs a few words per marker: 24 bytes, offsets and numbers in 32 bits
/// (a parsed input is at most 4 GiB; the command line refuses larger files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerLine {
    line_start: u32,
    line_end: u32,
    text_start: u32,
    text_end: u32,
    line_no: u32,
    context: u32,
}

impl MarkerLine {
    /// A marker line: the whole `line` (first byte to after its line ending), the marker
    /// comment's `text` (opener to end), its 1-based `line_no` and the lexer's `context`.
    #[must_use]
    pub fn new(line: Span, text: Span, line_no: usize, context: u32) -> Self {
        Self {
            line_start: narrow(line.start),
            line_end: narrow(line.end),
            text_start: narrow(text.start),
            text_end: narrow(text.end),
            line_no: narrow(line_no),
            context,
        }
    }

    /// The whole line, from its first byte to after its line ending (or end of input).
    #[must_use]
    pub const fn line(&self) -> Span {
        Span::new(self.line_start as usize, self.line_end as usize)
    }

    /// The marker comment itself, from its opener to its end.
    #[must_use]
    pub const fn text(&self) -> Span {
        Span::new(self.text_start as usize, self.text_end as usize)
    }

    /// 1-based line number.
    #[must_use]
    pub const fn line_no(&self) -> usize {
        self.line_no as usize
    }

    /// Structural context reported by the lexer.
    #[must_use]
    pub const fn context(&self) -> u32 {
        self.context
    }

    /// 1-based column of the comment opener.
    #[must_use]
    pub const fn column(&self) -> usize {
        self.text_start.saturating_sub(self.line_start) as usize + 1
    }

    /// The marker written on this line, parsed again from `src` (the bytes it was found in).
    /// `None` when the line is no demarcate marker (a foreign block's literal line, such as
    /// conda's `# >>> conda initialize >>>`).
    #[must_use]
    pub fn marker(&self, src: &[u8]) -> Option<Marker> {
        src.get(self.text().start..self.text().end)
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
///
/// A region records where its lines are, not what they say: its identity is read again
/// from the BEGIN line ([`Region::id`]), and its body is what lies between the two lines
/// ([`Region::body`]). A file of hundreds of thousands of regions then costs 52 bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The BEGIN marker line.
    pub begin: MarkerLine,
    /// The END marker line.
    pub end: MarkerLine,
    /// A hash of the identity (to pass over other regions without reading their lines) in
    /// the high 28 bits, the [`State`] in the next two and the [`IdFrom`] in the low two.
    tag: u32,
}

/// Where a region's identity is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdFrom {
    /// The BEGIN marker.
    Begin,
    /// The END marker (the BEGIN is a foreign block's literal line).
    End,
    /// Both lines are a foreign block's literal lines: the words they share.
    Literal,
}

/// A 28-bit hash of an identity, for [`Region::is`], in the high bits of a region's tag.
fn key_of(id: &Identity) -> u32 {
    use std::hash::BuildHasher as _;
    // Truncation intended: the high bits of the hash (FxHash mixes into the high bits).
    #[allow(clippy::cast_possible_truncation)]
    let k = (rustc_hash::FxBuildHasher.hash_one(id) >> 32) as u32;
    k & !0xf
}

impl State {
    /// The state's two bits in a region's tag.
    const fn bits(self) -> u32 {
        match self {
            Self::Pristine => 0,
            Self::Drifted => 1,
            Self::Unhashed => 2,
        }
    }
}

impl IdFrom {
    /// The two bits in a region's tag.
    const fn bits(self) -> u32 {
        match self {
            Self::Begin => 0,
            Self::End => 1,
            Self::Literal => 2,
        }
    }
}

impl Region {
    /// Pristine, drifted or unhashed.
    #[must_use]
    pub const fn state(&self) -> State {
        match (self.tag >> 2) & 3 {
            0 => State::Pristine,
            1 => State::Drifted,
            _ => State::Unhashed,
        }
    }

    /// Which line the identity is read from.
    const fn id_from(&self) -> IdFrom {
        match self.tag & 3 {
            0 => IdFrom::Begin,
            1 => IdFrom::End,
            _ => IdFrom::Literal,
        }
    }

    /// The hash of the identity.
    const fn key(&self) -> u32 {
        self.tag & !0xf
    }

    /// The whole region, BEGIN line to END line inclusive.
    #[must_use]
    pub const fn span(&self) -> Span {
        Span::new(self.begin.line().start, self.end.line().end)
    }

    /// The bytes between the BEGIN line and the END line.
    #[must_use]
    pub const fn body(&self) -> Span {
        Span::new(self.begin.line().end, self.end.line().start)
    }

    /// Owner and name, read again from the region's lines in `src` (the bytes the region was
    /// found in): the BEGIN marker's, or for a foreign block the words its two literal lines
    /// share (as [`Foreign::identity`]).
    #[must_use]
    pub fn id(&self, src: &[u8]) -> Identity {
        if self.id_from() == IdFrom::Literal {
            let text = |m: &MarkerLine| {
                String::from_utf8_lossy(src.get(m.text().start..m.text().end).unwrap_or_default())
                    .into_owned()
            };
            return Foreign {
                begin: text(&self.begin),
                end: text(&self.end),
            }
            .identity();
        }
        let line = if self.id_from() == IdFrom::End {
            &self.end
        } else {
            &self.begin
        };
        line.marker(src).map_or_else(
            || Identity::new("", ""),
            |m| Identity {
                owner: m.owner,
                name: m.name,
            },
        )
    }

    /// True when the region's identity is `id` (its lines read again from `src` only when
    /// a hash of the identities matches).
    #[must_use]
    pub fn is(&self, src: &[u8], id: &Identity) -> bool {
        self.key() == key_of(id) && &self.id(src) == id
    }

    /// The `hash=` recorded on the BEGIN line (read again from `src`, the bytes the region
    /// was found in); `None` for an unhashed region.
    #[must_use]
    pub fn hash(&self, src: &[u8]) -> Option<String> {
        if self.state() == State::Unhashed {
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
    /// Comments that are almost markers, with the marker each was likely meant to be.
    pub near_misses: Vec<(Span, marker::NearMiss)>,
    /// The format's own record of the file, made by the pass that lexed it.
    pub scan: Option<Scan>,
    /// The foreign block's literal marker lines looked for, if any.
    foreign: Option<Foreign>,
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
        Self::lex_and_build(src, syntax, foreign, true)
    }

    /// Lexes `src` keeping only what the document needs, then finds its regions and
    /// problems. Comments that cannot be markers are not needed, unless a foreign block's
    /// literal lines (any text) are looked for; keys that only matter across owners are not
    /// needed outside regions.
    fn lex_and_build(
        src: &'a [u8],
        syntax: &dyn Lexer,
        foreign: Option<&Foreign>,
        keep_comments: bool,
    ) -> Self {
        // Every key is kept: across owners, a region's key against the user's outside every
        // region counts too (one shadows the other).
        let keep = if foreign.is_some() {
            Keep::All
        } else {
            Keep::MarkerLike
        };
        // A document only read needs less of the format's scan than one to be edited.
        let scan_with = |keep| {
            if keep_comments {
                syntax.scan_keeping(src, keep)
            } else {
                syntax.scan_to_read(src, keep)
            }
        };
        let (lexed, scan) = scan_with(keep);
        let mut doc = Self::build(src, syntax, lexed, foreign, keep_comments);
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
        Self::build(src, syntax, lexed, foreign, true)
    }

    /// As [`Document::parse_with`], for a file that is only read (`list`, `check`): the
    /// lexer's comments are let go as they are paired, a quarter at a time, so that a file
    /// of many markers does not hold its comment records and its regions at once. The
    /// document holds no comments: not for edits, repairs or [`Document::marker_lines`].
    #[must_use]
    pub(crate) fn parse_to_read(
        src: &'a [u8],
        syntax: &dyn Lexer,
        foreign: Option<&Foreign>,
    ) -> Self {
        Self::lex_and_build(src, syntax, foreign, false)
    }

    /// Finds regions and problems; `keep_comments` false lets the lexer's comments go as
    /// they are paired (see [`Document::parse_to_read`]).
    fn build(
        src: &'a [u8],
        syntax: &dyn Lexer,
        mut lexed: Lexed,
        foreign: Option<&Foreign>,
        keep_comments: bool,
    ) -> Self {
        let mut problems = Problems::default();
        let mut lines = LineCounter::new(src);
        let mut pairing = Pairing::new(src, syntax, foreign);
        let mut near_misses = Vec::new();
        let mut visit = |c: &Comment| {
            let text = c.text.of(src);
            if foreign.is_none() && !marker::may_be_marker(text) {
                return;
            }
            let literal = foreign.filter(|_| c.alone).and_then(|f| f.marker(text));
            let is_literal = literal.is_some();
            let parsed = literal.or_else(|| marker::parse(text));
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
                return;
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
                return;
            }
            let line = MarkerLine::new(
                Span::new(ls, line_end(src, c.text.start)),
                c.text,
                line_no,
                c.context,
            );
            pairing.push(line, m, is_literal, &mut problems);
        };
        let mut comments = std::mem::take(&mut lexed.comments);
        // Where comments written with another format's opener start, for the wrong-opener
        // check below once the comments are gone (a few, if any, in a `#` format).
        let other_openers: Vec<usize> = if keep_comments {
            Vec::new()
        } else {
            comments
                .iter()
                .filter(|c| WRONG_OPENERS.iter().any(|o| c.text.of(src).starts_with(o)))
                .map(|c| c.text.start)
                .collect()
        };
        if keep_comments {
            comments.iter().for_each(&mut visit);
            lexed.comments = comments;
        } else {
            // The first quarter of what is left (at least 4096) is paired, then dropped and
            // its memory given back: each comment is moved about three times, all told.
            while !comments.is_empty() {
                let n = (comments.len() / 4).max(1 << 12).min(comments.len());
                comments[..n].iter().for_each(&mut visit);
                comments.drain(..n);
                comments.shrink_to_fit();
            }
        }
        let is_comment_at = |at: usize| {
            if keep_comments {
                lexed
                    .comments
                    .binary_search_by_key(&at, |c| c.text.start)
                    .is_ok()
            } else {
                other_openers.binary_search(&at).is_ok()
            }
        };
        wrong_openers(src, syntax, &lexed, &is_comment_at, &mut problems);
        let regions = pairing.finish(&mut problems);
        duplicate_keys(src, &lexed, &regions, syntax, &mut problems);
        Self {
            src,
            lexed,
            regions,
            problems: problems.finish(),
            eol: eol_of(src),
            near_misses,
            scan: None,
            foreign: foreign.cloned(),
        }
    }

    /// Every standalone marker line, paired or not, in file order: found again in the
    /// lexer's comments (a file of many regions does not keep a second list of them).
    #[must_use]
    pub fn marker_lines(&self) -> Vec<Span> {
        let (src, foreign) = (self.src, self.foreign.as_ref());
        self.lexed
            .comments
            .iter()
            .filter(|c| c.alone)
            .filter(|c| {
                let text = c.text.of(src);
                (foreign.is_some() || marker::may_be_marker(text))
                    && (foreign.and_then(|f| f.marker(text)).is_some()
                        || marker::parse(text).is_some())
            })
            .map(|c| {
                Span::new(
                    marker_line_start(src, c.text.start),
                    line_end(src, c.text.start),
                )
            })
            .collect()
    }

    /// The region with this identity, if exactly present.
    #[must_use]
    pub fn region(&self, id: &Identity) -> Option<&Region> {
        let key = key_of(id);
        self.regions
            .iter()
            .find(|r| r.key() == key && &r.id(self.src) == id)
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
            if cur > 0 && regions.get(cur - 1).is_some_and(|r| r.body().end > at) {
                cur = regions.partition_point(|r| r.body().end <= at);
            }
            while regions.get(cur).is_some_and(|r| r.body().end <= at) {
                cur += 1;
            }
            regions
                .get(cur)
                .filter(|r| r.body().start <= at)
                .map(|_| cur)
        }
    };
    // Across owners, only keys with at least one inside a region can be reported.
    if policy == KeyPolicy::AcrossOwners && regions.is_empty() {
        return;
    }
    let hash_of = |k: crate::lex::Key| {
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        name_of(k).hash(&mut h);
        k.context.hash(&mut h);
        h.finish()
    };
    // Equal hashes are grouped by a counting sort on the hash's top bits (at most 2^10
    // buckets, so the counters and the lines being written to stay in cache: more
    // buckets made the scatter miss the cache on every key), then each bucket (a few
    // thousand keys) is searched for equal hashes with a bitmap: cheaper than sorting
    // millions of pairs, and 4 bytes per key (the low half of the hash). Only the keys
    // whose hash repeats are then found again, with their indexes; a collision of the
    // hashes is resolved by comparing names below.
    let count = keys.iter().count();
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
    for k in keys.iter() {
        starts[bucket(hash_of(k)) + 1] += 1;
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
        for k in keys.iter() {
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
    let mut region_of = region_cursor();
    let region_holding = |at: usize| {
        let i = regions.partition_point(|r| r.body().end <= at);
        regions.get(i).filter(|r| r.body().start <= at).map(|_| i)
    };
    let mut found = Vec::new();
    let (mut left_out, mut first_left_out) = (0usize, usize::MAX);
    for (i, k) in keys.iter().enumerate() {
        let t = tag(hash_of(k));
        if repeated.binary_search(&t).is_err() {
            continue;
        }
        // `PATH="$HOME/bin:$PATH"` extends the value before it: neither shadowed nor
        // shadowing, so it is no one's duplicate.
        if extends_itself(src, k.name) {
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
            // `at` comes in file order (a cursor); `first_at` jumps about (a search).
            // Two of the user's own assignments are the user's business; one of a region
            // against the user's, or two owners' regions, shadow one another.
            KeyPolicy::AcrossOwners => match (region_holding(first_at), region_of(at)) {
                (Some(a), Some(b)) => regions[a].id(src).owner != regions[b].id(src).owner,
                (None, None) => false,
                _ => true,
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
            .also(
                String::from_utf8_lossy(name.of(src)).into_owned(),
                first_line,
            )
        });
    }
    if left_out > 0 {
        let (line, col) = lines.line_col(first_left_out);
        problems.left_out(ProblemKind::DuplicateKey, left_out, line, col);
    }
}

/// How far past a key's name [`extends_itself`] looks for its own reference: a `PATH` line is
/// short, and a bound keeps a crafted line of a million assignments linear.
const SELF_REFERENCE_REACH: usize = 4096;

/// True when the assignment of the key named at `name` uses the key's own value —
/// `PATH="$HOME/bin:$PATH"`, `PATH=$PATH:/opt/bin`, `PATH="${PATH}:/x"`,
/// `PATH="${PATH:+$PATH:}/x"` — on the rest of its line (up to [`SELF_REFERENCE_REACH`]
/// bytes): it extends the value before it instead of replacing it.
pub(crate) fn extends_itself(src: &[u8], name: Span) -> bool {
    let key = name.of(src);
    if key.is_empty() {
        return false;
    }
    let rest = src.get(name.end..).unwrap_or_default();
    let rest = &rest[..rest.len().min(SELF_REFERENCE_REACH)];
    let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'$', &line[at..]) {
        let after = &line[at + i + 1..];
        let (braced, name_start) = match after.first() {
            Some(b'{') => (true, &after[1..]),
            _ => (false, after),
        };
        if let Some(tail) = name_start.strip_prefix(key) {
            let next = tail.first().copied();
            let ends = if braced {
                matches!(
                    next,
                    Some(b'}' | b':' | b'-' | b'+' | b'=' | b'?' | b'#' | b'%')
                )
            } else {
                !next.is_some_and(word)
            };
            if ends {
                return true;
            }
        }
        at += i + 1;
    }
    false
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

/// Comment openers of other formats that a marker line is sometimes written with.
const WRONG_OPENERS: [&[u8]; 4] = [b"//", b";", b"--", b"<!--"];

/// Lines that would be markers but for their comment opener (`// BEGIN …` in a shell file);
/// `is_comment_at` tells whether a real comment of the format starts at an offset.
fn wrong_openers(
    src: &[u8],
    syntax: &dyn Lexer,
    lexed: &Lexed,
    is_comment_at: &dyn Fn(usize) -> bool,
    problems: &mut Problems,
) {
    if syntax.opener() != "#" {
        return;
    }
    // Only lines that hold the word MANAGED (in any case) can be near misses of this kind:
    // their starts, in file order, each once (the two spellings' matches merged as they
    // come, not collected: a file of many markers has hundreds of thousands).
    let mut upper = memchr::memmem::find_iter(src, b"ANAGED").peekable();
    let mut lower = memchr::memmem::find_iter(src, b"anaged").peekable();
    let mut last = None;
    let starts = std::iter::from_fn(|| {
        loop {
            let at = match (upper.peek(), lower.peek()) {
                (Some(&u), Some(&l)) if l < u => lower.next(),
                (Some(_), _) => upper.next(),
                (None, _) => lower.next(),
            }?;
            let start = line_start(src, at);
            if last != Some(start) {
                last = Some(start);
                return Some(start);
            }
        }
    });
    let mut lines = LineCounter::new(src);
    for start in starts {
        let end = line_end(src, start);
        let line = &src[start..end];
        let indent = line
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count();
        let text = &line[indent..];
        let Some(o) = WRONG_OPENERS.into_iter().find(|o| text.starts_with(o)) else {
            continue;
        };
        // A real comment of the format (`;` in INI) is no wrong opener.
        let at = start + indent;
        if lexed.is_inner(start) || is_comment_at(at) {
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

/// An open BEGIN on the pairing stack: its line (its identity and recorded hash are read
/// again from it when needed), a hash of its identity, and the open BEGIN below it with
/// the same hash. About 40 bytes: a crafted file of half a million BEGIN lines costs twice
/// its size, not ten times.
struct Open {
    line: MarkerLine,
    /// [`id_key`] of its identity.
    key: u64,
    /// The open BEGIN below it on the stack with the same key, plus one (0: none).
    below_same: u32,
    /// A foreign block's literal line.
    literal: bool,
    /// Taken out of the middle of the stack (its END came while others inside it were open).
    removed: bool,
}

/// A hash of an identity, to find open BEGINs by.
fn id_key(id: &Identity) -> u64 {
    use std::hash::BuildHasher as _;
    rustc_hash::FxBuildHasher.hash_one(id)
}

/// Pairs BEGIN and END markers into regions as they are found, reporting what does not
/// pair. Only the open BEGINs are held, so markers cost nothing once paired. Each END finds
/// its BEGIN through a table of the topmost open BEGIN per identity hash, an END that
/// closes a BEGIN below others takes it out in place, and the BEGINs it leaves broken are
/// kept as ranges: every step costs about the same however deep the stack, so no crafted
/// order of markers is quadratic.
struct Pairing<'s> {
    src: &'s [u8],
    syntax: &'s dyn Lexer,
    foreign: Option<&'s Foreign>,
    regions: Vec<Region>,
    stack: Vec<Open>,
    /// The topmost open BEGIN of each key (its index on the stack, plus one).
    top_of: hashbrown::HashTable<u32>,
    /// Sorted, disjoint ranges of stack indexes whose BEGINs were already reported as
    /// broken (nested or interleaved).
    broken: Vec<(usize, usize)>,
    /// The identity and hash of the BEGIN opened last, while it is open: the END that
    /// usually follows it is paired without parsing its line again.
    recent: Option<Recent>,
}

/// The BEGIN opened last: its stack index, identity and recorded hash.
struct Recent {
    index: usize,
    id: Identity,
    hash: Option<String>,
}

impl Pairing<'_> {
    fn new<'s>(src: &'s [u8], syntax: &'s dyn Lexer, foreign: Option<&'s Foreign>) -> Pairing<'s> {
        Pairing {
            src,
            syntax,
            foreign,
            regions: Vec::new(),
            stack: Vec::new(),
            top_of: hashbrown::HashTable::new(),
            broken: Vec::new(),
            recent: None,
        }
    }

    /// The marker written on an open BEGIN's line, read again.
    fn marker_of(&self, o: &Open) -> Option<Marker> {
        let text = o.line.text().of(self.src);
        if o.literal {
            self.foreign.and_then(|f| f.marker(text))
        } else {
            marker::parse(text)
        }
    }

    /// An open BEGIN's identity, read again.
    fn id_of(&self, o: &Open) -> Identity {
        self.marker_of(o).map_or_else(
            || Identity::new("", ""),
            |m| Identity {
                owner: m.owner,
                name: m.name,
            },
        )
    }

    /// True when the open BEGIN at stack index `i` has identity `id`.
    fn same_id(&self, i: usize, id: &Identity) -> bool {
        match &self.recent {
            Some(r) if r.index == i => r.id == *id,
            _ => self.stack.get(i).is_some_and(|o| self.id_of(o) == *id),
        }
    }

    /// The index of the open BEGIN on top of the stack.
    fn top(&self) -> Option<usize> {
        self.stack.len().checked_sub(1)
    }

    /// True when the BEGIN at stack index `i` was reported as broken.
    fn is_broken(&self, i: usize) -> bool {
        let k = self.broken.partition_point(|&(_, end)| end <= i);
        self.broken.get(k).is_some_and(|&(start, _)| start <= i)
    }

    /// Reports the BEGINs at stack indexes `from..to` as broken.
    fn break_range(&mut self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        let mut start = from;
        let mut end = to;
        while let Some(&(a, b)) = self.broken.last() {
            if b < start {
                break;
            }
            start = start.min(a);
            end = end.max(b);
            self.broken.pop();
        }
        self.broken.push((start, end));
    }

    /// The slot of the table entry for `key`.
    fn find_top(&self, key: u64) -> Option<u32> {
        let stack = &self.stack;
        self.top_of
            .find(key, |&i| {
                stack
                    .get((i as usize).wrapping_sub(1))
                    .is_some_and(|o| o.key == key)
            })
            .copied()
    }

    /// Sets the topmost open BEGIN of `key` (`i`: its index plus one; 0 for none).
    fn set_top(&mut self, key: u64, i: u32) {
        let stack = &self.stack;
        let entry = self.top_of.find_entry(key, |&j| {
            stack
                .get((j as usize).wrapping_sub(1))
                .is_some_and(|o| o.key == key)
        });
        match (entry, i) {
            (Ok(e), 0) => {
                e.remove();
            }
            (Ok(mut e), i) => *e.get_mut() = i,
            (Err(_), 0) => {}
            (Err(_), i) => {
                let stack = &self.stack;
                self.top_of.insert_unique(key, i, |&j| {
                    stack.get((j as usize).wrapping_sub(1)).map_or(0, |o| o.key)
                });
            }
        }
    }

    /// Opens a BEGIN.
    fn open(&mut self, line: MarkerLine, key: u64, literal: bool) {
        let below_same = self.find_top(key).unwrap_or(0);
        let Ok(i) = u32::try_from(self.stack.len() + 1) else {
            return;
        };
        self.stack.push(Open {
            line,
            key,
            below_same,
            literal,
            removed: false,
        });
        self.set_top(key, i);
    }

    /// Takes the open BEGIN on top off the stack (and any taken out below it).
    fn pop(&mut self) -> Option<(usize, Open, Option<Recent>)> {
        let i = self.top()?;
        let recent = self.recent.take_if(|r| r.index == i);
        // The table finds its entry through the stack: updated while the BEGIN is on it.
        let (key, below) = self.stack.last().map(|o| (o.key, o.below_same))?;
        self.set_top(key, below);
        let o = self.stack.pop()?;
        while self.stack.last().is_some_and(|o| o.removed) {
            self.stack.pop();
        }
        let len = self.stack.len();
        while let Some(last) = self.broken.last_mut() {
            if last.1 <= len {
                break;
            }
            if last.0 >= len {
                self.broken.pop();
            } else {
                last.1 = len;
            }
        }
        Some((i, o, recent))
    }

    /// The stack index of the topmost open BEGIN of `id` (whose key is `key`), with the
    /// index of the open BEGIN above it in the chain of its key (if any).
    fn find(&self, key: u64, id: &Identity) -> Option<(usize, Option<usize>)> {
        let mut above = None;
        let mut cur = self.find_top(key).unwrap_or(0);
        while let Some(i) = (cur as usize).checked_sub(1) {
            let o = self.stack.get(i)?;
            if self.same_id(i, id) {
                return Some((i, above));
            }
            above = Some(i);
            cur = o.below_same;
        }
        None
    }

    /// Takes the open BEGIN at stack index `i` out of the middle of the stack.
    fn take_out(&mut self, i: usize, above: Option<usize>) {
        let Some(o) = self.stack.get_mut(i) else {
            return;
        };
        o.removed = true;
        if self.recent.as_ref().is_some_and(|r| r.index == i) {
            self.recent = None;
        }
        let (key, below) = (o.key, o.below_same);
        match above.and_then(|a| self.stack.get_mut(a)) {
            Some(a) => a.below_same = below,
            None => self.set_top(key, below),
        }
    }

    /// Adds a marker line; `literal` when it is a foreign block's literal line.
    fn push(&mut self, m: MarkerLine, marker: Marker, literal: bool, problems: &mut Problems) {
        let kind = marker.kind;
        let Marker {
            owner, name, attrs, ..
        } = marker;
        let id = Identity { owner, name };
        let key = id_key(&id);
        if kind == Kind::Begin {
            let index = self.stack.len();
            self.open(m, key, literal);
            if self.stack.len() > index {
                let hash = attrs.into_iter().find(|(k, _)| k == "hash").map(|(_, v)| v);
                self.recent = Some(Recent { index, id, hash });
            }
            return;
        }
        let (line_no, column) = (m.line_no(), m.column());
        let Some(top) = self.top() else {
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
        let top_is_it = self.stack.get(top).is_some_and(|o| o.key == key) && self.same_id(top, &id);
        if top_is_it {
            // Asked before the pop, which forgets the ranges above the new top.
            let broken = self.is_broken(top);
            let Some((_, b, recent)) = self.pop() else {
                return;
            };
            if let Some(oi) = self.top() {
                let Some(outer) = self.stack.get(oi) else {
                    return;
                };
                let (bl, bc) = (b.line.line_no(), b.line.column());
                let (outer_id, outer_line) = (self.id_of(outer), outer.line.line_no());
                problems.add(ProblemKind::NestedRegion, bl, bc, || {
                    Problem::new(
                        ProblemKind::NestedRegion,
                        bl,
                        bc,
                        format!(
                            "region \"{id}\" is inside region \"{outer_id}\" (BEGIN on line \
                             {outer_line})"
                        ),
                    )
                    .help("regions cannot nest: move it out")
                });
                self.break_range(oi, oi + 1);
            } else if !broken {
                let r = self.region(&b, recent, m, literal);
                self.regions.push(r);
            }
        } else if let Some((pos, above)) = self.find(key, &id) {
            let Some(inner) = self.stack.get(top) else {
                return;
            };
            let (inner_id, inner_line) = (self.id_of(inner), inner.line.line_no());
            problems.add(ProblemKind::InterleavedRegions, line_no, column, || {
                Problem::new(
                    ProblemKind::InterleavedRegions,
                    line_no,
                    column,
                    format!(
                        "END of \"{id}\" comes before the END of \"{inner_id}\" (BEGIN on line \
                         {inner_line}), which started inside it"
                    ),
                )
                .help("move one region's lines so they do not overlap")
            });
            self.take_out(pos, above);
            self.break_range(pos + 1, self.stack.len());
        } else {
            let Some((_, b, _)) = self.pop() else { return };
            let b_id = self.id_of(&b);
            let b_line = b.line.line_no();
            let case_only = b_id.eq_ignore_case(&id);
            problems.add(ProblemKind::MismatchedEnd, line_no, column, || {
                Problem::new(
                    ProblemKind::MismatchedEnd,
                    line_no,
                    column,
                    format!(
                        "END marker for \"{id}\" does not match the open BEGIN for \"{b_id}\" on \
                         line {b_line}{}",
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

    /// The region of an open BEGIN and its END (`literal` when the END is a foreign
    /// block's literal line).
    fn region(
        &self,
        begin: &Open,
        recent: Option<Recent>,
        end: MarkerLine,
        literal: bool,
    ) -> Region {
        let body = Span::new(begin.line.line().end, end.line().start);
        // The identity and hash, kept from when the BEGIN was read or read again.
        let (id, hash) = match recent {
            Some(r) => (r.id, r.hash),
            None => {
                let marker = self.marker_of(begin);
                let hash = marker.as_ref().and_then(|m| {
                    m.attrs
                        .iter()
                        .find(|(k, _)| k == "hash")
                        .map(|(_, v)| v.clone())
                });
                (self.id_of(begin), hash)
            }
        };
        let hash = hash.as_deref();
        let state = match hash {
            None => State::Unhashed,
            Some(h) if hash::matches(h, &self.syntax.normalize(body.of(self.src))) => {
                State::Pristine
            }
            Some(_) => State::Drifted,
        };
        let id_from = match (begin.literal, literal) {
            (false, _) => IdFrom::Begin,
            (true, false) => IdFrom::End,
            (true, true) => IdFrom::Literal,
        };
        Region {
            begin: begin.line,
            end,
            tag: key_of(&id) | (state.bits() << 2) | id_from.bits(),
        }
    }

    /// The regions found; BEGINs left open, duplicates, regions crossing a structure and
    /// drift reported.
    fn finish(self, problems: &mut Problems) -> Vec<Region> {
        for (i, b) in self.stack.iter().enumerate() {
            if b.removed || self.is_broken(i) {
                continue;
            }
            let (bl, bc) = (b.line.line_no(), b.line.column());
            let (syntax, foreign) = (self.syntax, self.foreign);
            problems.add(ProblemKind::UnclosedBegin, bl, bc, || {
                let id = self.id_of(b);
                Problem::new(
                    ProblemKind::UnclosedBegin,
                    bl,
                    bc,
                    format!("BEGIN marker for \"{id}\" has no END"),
                )
                .help(format!(
                    "add `{}` after the region's last line",
                    // A foreign block ends with its own literal line, not a demarcate marker.
                    match foreign.filter(|f| f.identity() == id) {
                        Some(f) => f.end.trim().to_owned(),
                        None => syntax.render_marker(&Marker::end(&id)),
                    }
                ))
            });
        }
        let Self { regions, .. } = self;
        // Two complete regions with one identity: the second is a duplicate. Regions are
        // sorted by the hash of their identity (4 bytes each, not a map of identities), and
        // only those whose hash repeats have their identity read again.
        let src = self.src;
        let mut by_key: Vec<u32> = (0..narrow(regions.len())).collect();
        by_key.sort_unstable_by_key(|&i| (regions[i as usize].key(), i));
        let mut dups: Vec<(usize, usize)> = Vec::new();
        for run in by_key.chunk_by(|&a, &b| regions[a as usize].key() == regions[b as usize].key())
        {
            if run.len() < 2 {
                continue;
            }
            // In file order within the run: the first of each identity, then its copies.
            let mut firsts: Vec<(Identity, usize)> = Vec::new();
            for &i in run {
                let i = i as usize;
                let id = regions[i].id(src);
                match firsts.iter().find(|(f, _)| *f == id) {
                    Some(&(_, first)) => dups.push((i, first)),
                    None => firsts.push((id, i)),
                }
            }
        }
        drop(by_key);
        dups.sort_unstable();
        for (i, first) in dups {
            let (r, first) = (&regions[i], &regions[first]);
            let (line, column) = (r.begin.line_no(), r.begin.column());
            problems.add(ProblemKind::DuplicateRegion, line, column, || {
                Problem::new(
                    ProblemKind::DuplicateRegion,
                    line,
                    column,
                    format!(
                        "region \"{}\" appears twice (first on line {})",
                        r.id(src),
                        first.begin.line_no()
                    ),
                )
                .help("delete one copy, markers included")
            });
        }
        for r in regions
            .iter()
            .filter(|r| r.begin.context() != r.end.context())
        {
            let (line, column) = (r.end.line_no(), r.end.column());
            problems.add(ProblemKind::MarkerCrossesStructure, line, column, || {
                Problem::new(
                    ProblemKind::MarkerCrossesStructure,
                    line,
                    column,
                    format!(
                        "END marker for \"{}\" is not in the same object, array or table as \
                         its BEGIN (line {})",
                        r.id(src),
                        r.begin.line_no()
                    ),
                )
                .help("move it so the region holds whole entries")
            });
        }
        for r in regions.iter().filter(|r| r.state() == State::Drifted) {
            let (line, column) = (r.begin.line_no(), r.begin.column());
            problems.add(ProblemKind::Drift, line, column, || {
                Problem::new(
                    ProblemKind::Drift,
                    line,
                    column,
                    format!(
                        "region \"{}\" was edited by hand since it was written (its hash differs)",
                        r.id(src)
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

    /// The pairing as first written (a stack of whole entries, an END below the top found
    /// by a scan and taken out by shifting, the entries above it marked one by one): what
    /// the indexed pairing must agree with. Returns regions (BEGIN line, END line) and
    /// problems (kind, line).
    /// Regions (BEGIN line, END line) and problems (kind, line).
    type Paired = (Vec<(usize, usize)>, Vec<(ProblemKind, usize)>);

    fn pairing_by_scan(events: &[(bool, u8)]) -> Paired {
        let mut stack: Vec<(u8, usize, bool)> = Vec::new();
        let (mut regions, mut problems) = (Vec::new(), Vec::new());
        for (i, &(begin, name)) in events.iter().enumerate() {
            let line = i + 1;
            if begin {
                stack.push((name, line, false));
                continue;
            }
            let Some(&(top, _, _)) = stack.last() else {
                problems.push((ProblemKind::OrphanEnd, line));
                continue;
            };
            if top == name {
                let Some((_, bl, broken)) = stack.pop() else {
                    continue;
                };
                if let Some(outer) = stack.last_mut() {
                    problems.push((ProblemKind::NestedRegion, bl));
                    outer.2 = true;
                } else if !broken {
                    regions.push((bl, line));
                }
            } else if let Some(pos) = stack.iter().rposition(|e| e.0 == name) {
                problems.push((ProblemKind::InterleavedRegions, line));
                stack.remove(pos);
                for e in &mut stack[pos..] {
                    e.2 = true;
                }
            } else {
                stack.pop();
                problems.push((ProblemKind::MismatchedEnd, line));
            }
        }
        for (_, bl, broken) in stack {
            if !broken {
                problems.push((ProblemKind::UnclosedBegin, bl));
            }
        }
        (regions, problems)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Shell keys recorded only where regions can be give the same duplicate-key report
        /// as every key recorded, whatever the markers (damaged ones too).
        #[test]
        fn shell_keys_where_regions_can_be_report_as_all_keys(
            picks in proptest::collection::vec(0usize..9, 0..80)
        ) {
            use crate::lex::Keep;
            const LINES: [&str; 9] = [
                "# BEGIN X MANAGED a", "# END X MANAGED a", "# BEGIN Y MANAGED b",
                "# END Y MANAGED b", "# BEGIN Y MANAGED a", "# END Y MANAGED a",
                "A=1", "export A=2", "B=1",
            ];
            let src: String = picks.iter().map(|&i| format!("{}\n", LINES[i])).collect();
            let syntax = Format::Shell.syntax();
            let dups = |doc: &Document<'_>| -> Vec<(usize, String)> {
                doc.problems
                    .iter()
                    .filter(|p| p.kind == ProblemKind::DuplicateKey)
                    .map(|p| (p.line, p.message.clone()))
                    .collect()
            };
            let some = Document::parse(src.as_bytes(), syntax);
            let (lexed, _) = syntax.scan_keeping(src.as_bytes(), Keep::MarkerLike);
            let all = Document::from_lexed(src.as_bytes(), syntax, lexed);
            prop_assert_eq!(dups(&some), dups(&all));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random BEGIN/END sequences pair exactly as the scanning pairing did.
        #[test]
        fn indexed_pairing_matches_pairing_by_scan(
            events in proptest::collection::vec((any::<bool>(), 0u8..5), 0..120)
        ) {
            let src: String = events
                .iter()
                .map(|&(begin, n)| {
                    format!("# {} X MANAGED r{n}\n", if begin { "BEGIN" } else { "END" })
                })
                .collect();
            let doc = Document::parse(src.as_bytes(), Format::Shell.syntax());
            let got_regions: Vec<(usize, usize)> = doc
                .regions
                .iter()
                .map(|r| (r.begin.line_no(), r.end.line_no()))
                .collect();
            let kinds = [
                ProblemKind::OrphanEnd,
                ProblemKind::NestedRegion,
                ProblemKind::InterleavedRegions,
                ProblemKind::MismatchedEnd,
                ProblemKind::UnclosedBegin,
            ];
            let mut got: Vec<(ProblemKind, usize)> = doc
                .problems
                .iter()
                .filter(|p| kinds.contains(&p.kind))
                .map(|p| (p.kind, p.line))
                .collect();
            let (want_regions, mut want) = pairing_by_scan(&events);
            got.sort_by_key(|&(k, l)| (l, k.as_str()));
            want.sort_by_key(|&(k, l)| (l, k.as_str()));
            prop_assert_eq!(got_regions, want_regions);
            prop_assert_eq!(got, want);
        }
    }

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
                prop_assert_eq!(kept.marker_lines(), all.marker_lines(), "{}", f.name());
                let read = Document::parse_to_read(src, syntax, None);
                prop_assert_eq!(&read.regions, &all.regions, "{}", f.name());
                prop_assert_eq!(&read.problems, &all.problems, "{}", f.name());
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
        assert_eq!(b.state(), super::State::Unhashed);
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

    /// A shell key counts twice when a region assigns it and so does the user outside every
    /// region, or two owners' regions do; two of the user's own assignments never count, nor
    /// does one that extends the key's own value (`PATH=$PATH:…`).
    #[test]
    fn shell_keys_count_against_the_users_and_across_owners() {
        let one = "A=1\nA=2\n# BEGIN X MANAGED a\nA=3\n# END X MANAGED a\nA=5\n";
        let doc = Document::parse(one.as_bytes(), Format::Shell.syntax());
        assert_eq!((doc.regions.len(), doc.lexed.keys.len()), (1, 4));
        let lines: Vec<usize> = doc.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [4]);
        let two = format!("{one}# BEGIN Y MANAGED b\nA=4\n# END Y MANAGED b\n");
        let doc = Document::parse(two.as_bytes(), Format::Shell.syntax());
        let lines: Vec<usize> = doc.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [4, 8]);
        assert_eq!(doc.problems[1].also.as_deref(), Some(&("A".to_owned(), 1)));
        let paths = "export PATH=/usr/bin:/bin\n# BEGIN X MANAGED p\nexport PATH=\"$HOME/x/bin:$PATH\"\n\
                     # END X MANAGED p\n# BEGIN Y MANAGED p\nPATH=$PATH:/opt/y\n# END Y MANAGED p\n\
                     # BEGIN Z MANAGED p\nPATH=\"${PATH}:/z\"\n# END Z MANAGED p\n";
        let doc = Document::parse(paths.as_bytes(), Format::Shell.syntax());
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
        let doc = Document::parse(
            b"PATH=/a\nPATH=\"$PATH:/b\"\nPATH=${PATH:+$PATH:}/c\n",
            Format::Env.syntax(),
        );
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
        // A name that only starts like the key is another variable.
        let doc = Document::parse(b"PATH=/a\nPATH=\"$PATHS:/b\"\n", Format::Env.syntax());
        assert_eq!(doc.problems.len(), 1);
    }

    /// Shell keys assigned in many regions of two owners: each assignment in a region whose
    /// owner differs from the first assignment's is reported, in file order, capped.
    #[test]
    fn keys_across_many_regions_of_two_owners_are_judged_by_the_first_ones_owner() {
        use crate::problem::MAX_PROBLEMS_PER_KIND as MAX;
        let mut src = String::new();
        for i in 0..3000 {
            let owner = if i % 2 == 0 { "X" } else { "Y" };
            src.push_str(&format!(
                "# BEGIN {owner} MANAGED r{i}\nexport A=1\n# END {owner} MANAGED r{i}\n"
            ));
        }
        let doc = Document::parse(src.as_bytes(), Format::Shell.syntax());
        let dups: Vec<&crate::problem::Problem> = doc
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateKey)
            .collect();
        assert_eq!(dups.len(), MAX + 1);
        // The first is in the second region (owner Y), line 5; then every other region.
        assert_eq!(dups[0].line, 5);
        assert_eq!(dups[1].line, 11);
        assert!(
            dups[MAX].message.starts_with("500 more"),
            "{}",
            dups[MAX].message
        );
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

#[cfg(test)]
mod compact_tests {
    use super::*;
    use crate::format::Format;

    /// What a file of many regions costs per region: pinned, since `list` holds one record
    /// per region of a file that can hold hundreds of thousands.
    #[test]
    fn region_records_stay_small() {
        assert_eq!(size_of::<MarkerLine>(), 24);
        assert_eq!(size_of::<Region>(), 52);
        assert!(
            size_of::<crate::report::RegionReport>() <= 64,
            "{}",
            size_of::<crate::report::RegionReport>()
        );
    }

    /// Inputs up to 4 GiB fit; larger ones are refused by the command line, and offsets
    /// past 4 GiB given to a marker line are clamped, never a panic.
    #[test]
    fn offsets_past_four_gib_are_refused_or_clamped() {
        assert!(fits(0));
        assert!(fits(u32::MAX as usize));
        assert!(!fits(u32::MAX as usize + 1));
        assert!(!fits(usize::MAX));
        let big = u32::MAX as usize + 10;
        let m = MarkerLine::new(Span::new(big, big + 5), Span::new(big + 2, big + 4), big, 7);
        assert_eq!(m.line(), Span::new(u32::MAX as usize, u32::MAX as usize));
        assert_eq!(m.text(), m.line());
        assert_eq!(m.line_no(), u32::MAX as usize);
        assert_eq!(m.context(), 7);
        assert_eq!(m.column(), 1);
        let small = MarkerLine::new(Span::new(10, 30), Span::new(12, 29), 3, 0);
        assert_eq!(
            (small.line(), small.text(), small.line_no(), small.column()),
            (Span::new(10, 30), Span::new(12, 29), 3, 3)
        );
    }

    /// Identities are read again from the lines: a demarcate marker's, a foreign block's
    /// (the words both literal lines share), and a foreign BEGIN closed by a demarcate END.
    #[test]
    fn identities_are_read_again_from_the_marker_lines() {
        let f = Foreign {
            begin: "# >>> conda initialize >>>".to_owned(),
            end: "# <<< conda initialize <<<".to_owned(),
        };
        let conda = Identity::new("", "conda initialize");
        let src = "# BEGIN Z MANAGED a b\nA=1\n# END Z MANAGED a b\n\
                   # >>> conda initialize >>>\nB=1\n# <<< conda initialize <<<\n\
                   # >>> conda initialize >>>\nC=1\n# END MANAGED conda initialize\n";
        let doc = Document::parse_with(src.as_bytes(), Format::Shell.syntax(), Some(&f));
        let ids: Vec<Identity> = doc.regions.iter().map(|r| r.id(doc.src)).collect();
        assert_eq!(
            ids,
            [Identity::new("Z", "a b"), conda.clone(), conda.clone()]
        );
        assert!(doc.regions[1].is(doc.src, &conda));
        assert!(!doc.regions[0].is(doc.src, &conda));
        assert_eq!(doc.region(&conda).map(|r| r.begin.line_no()), Some(4));
        // The third is the second copy of the foreign block.
        let dup: Vec<usize> = doc
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateRegion)
            .map(|p| p.line)
            .collect();
        assert_eq!(dup, [7]);
        assert_eq!(doc.region(&Identity::new("Z", "a")), None);
        assert_eq!(
            doc.regions[0].body().of(doc.src),
            b"A=1\n",
            "the body lies between the lines"
        );
        let lines = doc.marker_lines();
        assert_eq!(lines.len(), 6);
        assert_eq!(lines[2].of(doc.src), b"# >>> conda initialize >>>\n");
    }

    /// A line with a wrong comment opener is reported once, even when it holds both
    /// spellings of MANAGED that the search looks for.
    #[test]
    fn a_wrong_opener_line_is_reported_once_in_file_order() {
        let src = "x=1\n// BEGIN X MANAGED managed\nA=1\n// END X MANAGED managed\n\
                   ; END X MANAGED b\n";
        let doc = Document::parse(src.as_bytes(), Format::Shell.syntax());
        let lines: Vec<usize> = doc
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::NearMissMarker)
            .map(|p| p.line)
            .collect();
        assert_eq!(lines, [2, 4, 5]);
    }

    /// Reading a file lets its comments go as they are paired, a quarter at a time, and
    /// finds the same regions and problems as a document that keeps them, with a foreign
    /// block's lines or without.
    #[test]
    fn reading_without_the_comments_finds_the_same_document() {
        let mut src = String::new();
        for i in 0..20_000 {
            src.push_str(&match i % 9 {
                0 => format!("# BEGIN X MANAGED r{i}\nexport A{i}=1\n# END X MANAGED r{i}\n"),
                1 => format!("# BEGN X MANAGED n{i}\n"),
                2 => format!("// BEGIN X MANAGED w{i}\n"),
                3 => format!("# END Y MANAGED o{i}\n"),
                4 => "# >>> conda initialize >>>\nC=1\n# <<< conda initialize <<<\n".to_owned(),
                5 => format!("x=1 # BEGIN X MANAGED t{i}\n"),
                6 => format!(
                    "# BEGIN Y MANAGED a{i}\n# BEGIN Y MANAGED b{i}\n# END Y MANAGED a{i}\n\
                     # END Y MANAGED b{i}\n"
                ),
                7 => format!("y=2 # END X MANAGED q{i}\n"),
                _ => format!(
                    "# BEGIN X MANAGED r{}\n# END X MANAGED r{}\n",
                    i % 50,
                    i % 50
                ),
            });
        }
        let f = Foreign {
            begin: "# >>> conda initialize >>>".to_owned(),
            end: "# <<< conda initialize <<<".to_owned(),
        };
        for foreign in [None, Some(&f)] {
            for format in [Format::Shell, Format::Env, Format::Ini] {
                let syntax = format.syntax();
                let kept = Document::parse_with(src.as_bytes(), syntax, foreign);
                let read = Document::parse_to_read(src.as_bytes(), syntax, foreign);
                assert!(kept.regions.len() > 2000, "{}", kept.regions.len());
                assert!(kept.problems.len() > 1000, "{}", kept.problems.len());
                assert_eq!(read.regions, kept.regions, "{}", format.name());
                assert_eq!(read.problems, kept.problems, "{}", format.name());
                assert_eq!(read.near_misses.len(), kept.near_misses.len());
                assert!(read.lexed.comments.is_empty());
            }
        }
    }

    /// Duplicates are found by a hash of the identities, and reported in file order, each
    /// with the line of the first copy.
    #[test]
    fn duplicate_regions_among_many_are_reported_in_file_order() {
        let mut src = String::new();
        for i in 0..3000 {
            src.push_str(&format!("# BEGIN X MANAGED r{i}\n# END X MANAGED r{i}\n"));
        }
        for i in [2999, 5, 5, 1000] {
            src.push_str(&format!("# BEGIN X MANAGED r{i}\n# END X MANAGED r{i}\n"));
        }
        let doc = Document::parse(src.as_bytes(), Format::Shell.syntax());
        let dups: Vec<(usize, String)> = doc
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::DuplicateRegion)
            .map(|p| (p.line, p.message.clone()))
            .collect();
        let want = [
            (6001, 2999, 5999),
            (6003, 5, 11),
            (6005, 5, 11),
            (6007, 1000, 2001),
        ];
        assert_eq!(dups.len(), want.len(), "{dups:?}");
        for ((line, msg), (wline, id, first)) in dups.iter().zip(want) {
            assert_eq!(*line, wline);
            assert!(
                msg.contains(&format!(
                    "\"X MANAGED r{id}\" appears twice (first on line {first})"
                )),
                "{msg}"
            );
        }
    }
}
