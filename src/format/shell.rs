//! The shell lexer: POSIX sh, bash and zsh profiles.
//!
//! The grammar is written out in `grammars/shell.ebnf`; every production there has a nom
//! parser here with the same name (`comment`, `single_quoted`, `heredoc_word`, ...), and unit
//! tests are named after the production they exercise.
//!
//! Nesting (`$(`, `${`, `$((`, `"`, `case`) is kept on an explicit stack rather than in
//! recursive parser calls, so that no input, however deeply nested, can overflow the call
//! stack. Runs of bytes that cannot start a token are skipped with a lookup table; the token
//! at the end of each run is recognised by the nom parser of its production. Every byte is
//! visited a bounded number of times, so lexing is linear in the input.

use std::borrow::Cow;

use memchr::{memchr, memchr_iter};
use nom::{
    IResult, Parser,
    branch::alt,
    bytes::complete::{is_not, tag, take, take_while, take_while_m_n, take_while1},
    combinator::{opt, recognize, value},
    multi::many0_count,
    sequence::{delimited, preceded},
};

use super::scan_bytes::ByteSet;
use crate::lex::{Comment, Keep, Key, Lexed, Span, Unclosed};

/// The input of every production: the rest of the file.
type In<'a> = &'a [u8];
/// What a production returns; errors carry nothing (the driver only needs "did not match").
type PResult<'a, O> = IResult<In<'a>, O, ()>;

// ---------------------------------------------------------------------------------------------
// Byte classes
// ---------------------------------------------------------------------------------------------

/// `blank = " " | "\t"`.
const fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `metachar`: the bytes besides blanks and newline that end a word.
const fn is_meta(b: u8) -> bool {
    matches!(b, b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')
}

/// A byte after which a new word starts.
const fn is_break(b: u8) -> bool {
    is_blank(b) || b == b'\n' || is_meta(b)
}

/// `name` start: `letter | "_"`.
const fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// `name` continuation: `letter | digit | "_"`.
fn is_name_char(b: u8) -> bool {
    NAME_CHARS[usize::from(b)]
}

/// A byte of a heredoc delimiter word that needs no quoting.
const fn is_heredoc_plain(b: u8) -> bool {
    !(is_break(b) || matches!(b, b'\r' | b'\'' | b'"' | b'\\'))
}

/// A 256-entry membership table for the hot scanning loops.
const fn table(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

/// `letter | digit | "_"`.
static NAME_CHARS: [bool; 256] =
    table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
/// Bytes that may start a token at the top level.
static TOP: ByteSet = ByteSet::new(b"\n#'\"\\$`<>(");
/// Bytes that may start a token inside `$( )` (words matter there, for `case`).
static SUBST: ByteSet = ByteSet::new(b"\n#'\"\\$`<>() \t;&|");
/// Bytes that may start a token inside double quotes.
static DQ: ByteSet = ByteSet::new(b"\"\\$`\n");
/// Bytes that may start a token inside `${ }`.
static PARAM: ByteSet = ByteSet::new(b"}'\"\\$`\n");
/// Bytes that may start a token inside `$(( ))` and `(( ))`.
static ARITH: ByteSet = ByteSet::new(b"()'\"\\$`\n");

// ---------------------------------------------------------------------------------------------
// Productions (see grammars/shell.ebnf)
// ---------------------------------------------------------------------------------------------

/// `bom = "\xEF\xBB\xBF"`.
fn bom(i: In) -> PResult<In> {
    tag(&b"\xEF\xBB\xBF"[..]).parse(i)
}

/// `blanks = { blank }`.
fn blanks(i: In) -> PResult<In> {
    take_while(is_blank).parse(i)
}

/// `newline = [ "\r" ] , "\n"`.
fn newline(i: In) -> PResult<In> {
    recognize((opt(tag("\r")), tag("\n"))).parse(i)
}

/// `assignment = blanks , [ "export" , blank , blanks ] , name , "="`, with
/// `name = ( letter | "_" ) , { letter | digit | "_" }`: it runs on every line, so it is
/// written as byte loops. Returns how many bytes it read (blanks and name bytes, which never
/// start a token, and the `=`) and the offsets of the name in `i` if there is an assignment.
fn assignment(i: In) -> (usize, Option<(usize, usize)>) {
    let blanks_from = |mut p: usize| {
        while i.get(p).is_some_and(|&b| is_blank(b)) {
            p += 1;
        }
        p
    };
    let name_from = |mut p: usize| {
        while i.get(p).is_some_and(|&b| is_name_char(b)) {
            p += 1;
        }
        p
    };
    let mut start = blanks_from(0);
    let mut end = name_from(start);
    if &i[start..end] == b"export" && i.get(end).is_some_and(|&b| is_blank(b)) {
        start = blanks_from(end);
        end = name_from(start);
    }
    if i.get(start).is_some_and(|&b| is_name_start(b)) && i.get(end) == Some(&b'=') {
        (end + 1, Some((start, end)))
    } else {
        (end, None)
    }
}

/// Everything up to (not including) the next `\n`, or to the end of the input.
#[allow(clippy::unnecessary_wraps)]
fn rest_of_line(i: In) -> PResult<In> {
    let n = memchr(b'\n', i).unwrap_or(i.len());
    Ok((&i[n..], &i[..n]))
}

/// `comment = "#" , { byte - "\n" }` (only at the start of a word).
fn comment(i: In) -> PResult<In> {
    recognize(preceded(tag("#"), rest_of_line)).parse(i)
}

/// `continuation = "\\" , newline`.
fn continuation(i: In) -> PResult<In> {
    recognize((tag("\\"), newline)).parse(i)
}

/// `escape = "\\" , byte`.
fn escape(i: In) -> PResult<In> {
    recognize((tag("\\"), take(1usize))).parse(i)
}

/// Everything up to (not including) the next `stop` byte; fails when there is none.
fn until_byte(stop: u8) -> impl Fn(In) -> PResult<In> {
    move |i: In| match memchr(stop, i) {
        Some(n) => Ok((&i[n..], &i[..n])),
        None => Err(nom::Err::Error(())),
    }
}

/// `single_quoted = "'" , { byte - "'" } , "'"`; returns the body.
fn single_quoted(i: In) -> PResult<In> {
    delimited(tag("'"), until_byte(b'\''), tag("'")).parse(i)
}

/// `dollar_single_quoted = "$'" , { escape | byte - ( "'" | "\\" ) } , "'"`; returns the body.
fn dollar_single_quoted(i: In) -> PResult<In> {
    delimited(
        tag("$'"),
        recognize(many0_count(alt((escape, is_not("\\'"))))),
        tag("'"),
    )
    .parse(i)
}

/// ``backquoted = "`" , { escape | byte - ( "`" | "\\" ) } , "`"``; returns the body.
fn backquoted(i: In) -> PResult<In> {
    delimited(
        tag("`"),
        recognize(many0_count(alt((escape, is_not("\\`"))))),
        tag("`"),
    )
    .parse(i)
}

/// What follows a `$`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dollar {
    /// `$((`: `arith_expansion`.
    Arith,
    /// `$(`: `command_subst`.
    Command,
    /// `${`: `param_expansion`.
    Param,
    /// `$'`: `dollar_single_quoted`.
    AnsiC,
    /// `$"`: `dollar_double_quoted`.
    Locale,
    /// Any other `$` (`$x`, `$#`, a lone `$`).
    Plain,
}

/// `dollar = "$((" | "$(" | "${" | "$'" | "$\"" | "$"`: the opener of a dollar construct.
fn dollar(i: In) -> PResult<Dollar> {
    alt((
        value(Dollar::Arith, tag("$((")),
        value(Dollar::Command, tag("$(")),
        value(Dollar::Param, tag("${")),
        value(Dollar::AnsiC, tag("$'")),
        value(Dollar::Locale, tag("$\"")),
        value(Dollar::Plain, tag("$")),
    ))
    .parse(i)
}

/// One piece of a heredoc delimiter word.
#[derive(Clone, Copy, Debug)]
enum Part<'a> {
    /// Unquoted bytes.
    Plain(&'a [u8]),
    /// Bytes taken literally from a quote or an escape.
    Quoted(&'a [u8]),
    /// The body of a double-quoted piece, still escaped.
    DoubleQuoted(&'a [u8]),
}

/// `heredoc_part = "'" , { byte - ( "'" | "\n" ) } , "'" | "\"" , ... , "\"" | "\\" , byte
/// | heredoc_plain , { heredoc_plain }`. Quotes may not span lines here.
fn heredoc_part(i: In) -> PResult<Part> {
    let not_newline = |b: u8| b != b'\n';
    alt((
        delimited(tag("'"), take_while(|b| b != b'\'' && b != b'\n'), tag("'")).map(Part::Quoted),
        delimited(
            tag("\""),
            recognize(many0_count(alt((
                recognize((tag("\\"), take_while_m_n(1, 1, not_newline))),
                is_not("\\\"\n"),
            )))),
            tag("\""),
        )
        .map(Part::DoubleQuoted),
        preceded(tag("\\"), take_while_m_n(1, 1, not_newline)).map(Part::Quoted),
        take_while1(is_heredoc_plain).map(Part::Plain),
    ))
    .parse(i)
}

/// `heredoc_word = heredoc_part , { heredoc_part }`: the delimiter with quotes removed, and
/// whether any part of it was quoted (which turns off expansion and `\`-newline joining).
/// The delimiter is borrowed from the input unless quote removal had to join pieces. (The
/// repetition is written out rather than a `fold_many1`, to stop without trying every
/// alternative on the byte after the word.)
fn heredoc_word(i: In<'_>) -> PResult<'_, (Cow<'_, [u8]>, bool)> {
    let (mut rest, part) = heredoc_part(i)?;
    let mut word = Cow::Borrowed(&b""[..]);
    let mut quoted = add_part(&mut word, part);
    while rest
        .first()
        .is_some_and(|&b| is_heredoc_plain(b) || matches!(b, b'\'' | b'"' | b'\\'))
    {
        let Ok((after, part)) = heredoc_part(rest) else {
            break;
        };
        quoted |= add_part(&mut word, part);
        rest = after;
    }
    Ok((rest, (word, quoted)))
}

/// Adds a `heredoc_part` to the delimiter being built; true if the part was quoted.
fn add_part<'a>(word: &mut Cow<'a, [u8]>, part: Part<'a>) -> bool {
    match part {
        Part::Plain(s) => {
            append(word, s);
            false
        }
        Part::Quoted(s) => {
            append(word, s);
            true
        }
        Part::DoubleQuoted(s) if !s.contains(&b'\\') => {
            append(word, s);
            true
        }
        Part::DoubleQuoted(s) => {
            let word = word.to_mut();
            let mut it = s.iter().copied().peekable();
            while let Some(b) = it.next() {
                match it.peek() {
                    Some(&n) if b == b'\\' && matches!(n, b'$' | b'`' | b'"' | b'\\') => {
                        word.push(n);
                        it.next();
                    }
                    _ => word.push(b),
                }
            }
            true
        }
    }
}

/// Appends `s` to a delimiter being built, without allocating while it is one piece.
fn append<'a>(word: &mut Cow<'a, [u8]>, s: &'a [u8]) {
    if word.is_empty() {
        *word = Cow::Borrowed(s);
    } else {
        word.to_mut().extend_from_slice(s);
    }
}

/// What a `<` or `>` starts.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Redirect<'a> {
    /// `here_string = "<<<"`.
    HereString,
    /// `heredoc_redirect = "<<" , [ "-" ] , blanks , heredoc_word`; the word is `None` when
    /// there is none (a syntax error; then `<<` is taken as a plain operator).
    Heredoc {
        /// `<<-`: leading tabs are stripped from body and delimiter lines.
        dash: bool,
        /// The delimiter and whether it was quoted.
        word: Option<(Cow<'a, [u8]>, bool)>,
    },
    /// `"<(" | ">("`: the opener of a `process_subst`.
    ProcessSubst,
    /// Any other redirection operator byte.
    Operator,
}

/// `redirect = here_string | heredoc_redirect | process_subst_open | "<" | ">"`.
fn redirect(i: In<'_>) -> PResult<'_, Redirect<'_>> {
    alt((
        value(Redirect::HereString, tag("<<<")),
        (tag("<<"), opt(tag("-")), blanks, opt(heredoc_word)).map(|(_, dash, _, word)| {
            Redirect::Heredoc {
                dash: dash.is_some(),
                word,
            }
        }),
        value(Redirect::ProcessSubst, alt((tag("<("), tag(">(")))),
        value(Redirect::Operator, take(1usize)),
    ))
    .parse(i)
}

/// `separator = ";;&" | ";;" | ";&" | ";"`; true for the three that end a `case_item`.
fn separator(i: In) -> PResult<bool> {
    alt((
        value(true, alt((tag(";;&"), tag(";;"), tag(";&")))),
        value(false, tag(";")),
    ))
    .parse(i)
}

/// A lower-case word (a reserved-word candidate) that is followed by a word break.
fn keyword(i: In) -> PResult<In> {
    let (rest, word) = take_while1(|b: u8| b.is_ascii_lowercase()).parse(i)?;
    match rest.first() {
        None => Ok((rest, word)),
        Some(&b) if is_break(b) || b == b'\r' => Ok((rest, word)),
        Some(_) => Err(nom::Err::Error(())),
    }
}

// ---------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------

/// Where a `case` statement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CasePhase {
    /// After `case`, before `in`.
    AwaitIn,
    /// Reading a pattern list up to its `)`; `fresh` until the pattern's first byte.
    Pattern {
        /// Nothing of the pattern read yet (so a `(` is the optional opener).
        fresh: bool,
    },
    /// Reading the commands of an item, up to `;;` or `esac`.
    Body,
}

/// The construct a stack frame stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `$(` … `)`.
    CommandSubst,
    /// `<(` or `>(` … `)`.
    ProcessSubst,
    /// A `case` statement inside a substitution.
    Case(CasePhase),
    /// `$((` … `))` when `dollar`, else the `((` … `))` command.
    Arith {
        /// Opened by `$((`.
        dollar: bool,
    },
    /// `${` … `}`.
    Param,
    /// `"` … `"` or `$"` … `"`.
    DoubleQuoted,
}

impl Kind {
    /// The name used in [`Unclosed::what`].
    const fn what(self) -> &'static str {
        match self {
            Self::CommandSubst => "command substitution",
            Self::ProcessSubst => "process substitution",
            Self::Case(_) => "case statement",
            Self::Arith { dollar: true } => "arithmetic expansion",
            Self::Arith { dollar: false } => "arithmetic command",
            Self::Param => "parameter expansion",
            Self::DoubleQuoted => "double-quoted string",
        }
    }

    /// Whether commands are lexed inside (so `#`, heredocs and `case` count there).
    const fn is_command(self) -> bool {
        matches!(
            self,
            Self::CommandSubst | Self::ProcessSubst | Self::Case(_)
        )
    }
}

/// One open construct, as the lexer reads and updates the innermost one.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// What it is.
    kind: Kind,
    /// Unmatched `(` inside it (subshells, arithmetic grouping, extglob in patterns).
    parens: usize,
}

impl Kind {
    /// Every kind, by its one-byte code in [`Stack`].
    const CODES: [Self; 10] = [
        Self::CommandSubst,
        Self::ProcessSubst,
        Self::Case(CasePhase::AwaitIn),
        Self::Case(CasePhase::Pattern { fresh: true }),
        Self::Case(CasePhase::Pattern { fresh: false }),
        Self::Case(CasePhase::Body),
        Self::Arith { dollar: true },
        Self::Arith { dollar: false },
        Self::Param,
        Self::DoubleQuoted,
    ];

    /// The kind's one-byte code.
    const fn code(self) -> u8 {
        match self {
            Self::CommandSubst => 0,
            Self::ProcessSubst => 1,
            Self::Case(CasePhase::AwaitIn) => 2,
            Self::Case(CasePhase::Pattern { fresh: true }) => 3,
            Self::Case(CasePhase::Pattern { fresh: false }) => 4,
            Self::Case(CasePhase::Body) => 5,
            Self::Arith { dollar: true } => 6,
            Self::Arith { dollar: false } => 7,
            Self::Param => 8,
            Self::DoubleQuoted => 9,
        }
    }

    /// The kind of a code made by [`Kind::code`].
    fn of_code(code: u8) -> Self {
        Self::CODES
            .get(usize::from(code))
            .copied()
            .unwrap_or(Self::CommandSubst)
    }
}

/// The open constructs, innermost last, one byte each: a crafted line of five million `$(`
/// costs five megabytes, not the hundred and twenty that whole frames took. Paren counts are
/// kept apart for the few frames that have any, and only the outermost frame's start (the
/// only one a report names).
#[derive(Debug, Default)]
struct Stack {
    /// Each frame's kind, as [`Kind::code`].
    kinds: Vec<u8>,
    /// `(depth, parens)` of the frames with unmatched `(`, by depth.
    parens: Vec<(usize, usize)>,
    /// Where the outermost frame opened.
    first_start: usize,
}

impl Stack {
    fn len(&self) -> usize {
        self.kinds.len()
    }

    fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Opens a frame of `kind` at `start`.
    fn push(&mut self, kind: Kind, start: usize) {
        if self.kinds.is_empty() {
            self.first_start = start;
        }
        self.kinds.push(kind.code());
    }

    /// Closes the innermost frame.
    fn pop(&mut self) {
        let depth = self.kinds.len().saturating_sub(1);
        if self.parens.last().is_some_and(|&(d, _)| d >= depth) {
            self.parens.pop();
        }
        self.kinds.pop();
    }

    /// The innermost frame.
    fn last(&self) -> Option<Frame> {
        let depth = self.kinds.len().checked_sub(1)?;
        let kind = Kind::of_code(*self.kinds.get(depth)?);
        let parens = match self.parens.last() {
            Some(&(d, n)) if d == depth => n,
            _ => 0,
        };
        Some(Frame { kind, parens })
    }

    /// The innermost frame, to update: written back when the guard is dropped.
    fn last_mut(&mut self) -> Option<TopFrame<'_>> {
        let frame = self.last()?;
        Some(TopFrame { stack: self, frame })
    }

    /// Writes `f` as the innermost frame.
    fn set_last(&mut self, f: Frame) {
        let Some(depth) = self.kinds.len().checked_sub(1) else {
            return;
        };
        if let Some(k) = self.kinds.get_mut(depth) {
            *k = f.kind.code();
        }
        let has = self.parens.last().is_some_and(|&(d, _)| d == depth);
        match (has, f.parens) {
            (true, 0) => {
                self.parens.pop();
            }
            (true, n) => {
                if let Some(last) = self.parens.last_mut() {
                    last.1 = n;
                }
            }
            (false, 0) => {}
            (false, n) => self.parens.push((depth, n)),
        }
    }

    /// The outermost frame's kind and where it opened.
    fn first(&self) -> Option<(Kind, usize)> {
        let &code = self.kinds.first()?;
        Some((Kind::of_code(code), self.first_start))
    }
}

/// The innermost frame of a [`Stack`], being updated.
struct TopFrame<'s> {
    stack: &'s mut Stack,
    frame: Frame,
}

impl std::ops::Deref for TopFrame<'_> {
    type Target = Frame;
    fn deref(&self) -> &Frame {
        &self.frame
    }
}

impl std::ops::DerefMut for TopFrame<'_> {
    fn deref_mut(&mut self) -> &mut Frame {
        &mut self.frame
    }
}

impl Drop for TopFrame<'_> {
    fn drop(&mut self) {
        self.stack.set_last(self.frame);
    }
}

/// A heredoc whose operator has been read but whose body has not.
#[derive(Clone, Debug)]
struct Heredoc<'a> {
    /// Offset of `<<`.
    start: usize,
    /// The delimiter, quotes removed.
    delim: Cow<'a, [u8]>,
    /// `<<-`.
    dash: bool,
    /// Some part of the word was quoted: no `\`-newline joining in the body.
    quoted: bool,
}

/// Heredocs waiting for their bodies, in order, 8 bytes each: where each operator is (from
/// the first one's offset) and the depth it was read at. The delimiter and flags are parsed
/// again from the operator when the body is read, so a crafted line of millions of `<<E`
/// costs twice its size, not twelve times.
#[derive(Debug, Default)]
struct Pending {
    /// Offset of the first pending operator.
    base: usize,
    /// `(offset - base, depth)` of each.
    docs: Vec<[u32; 2]>,
    /// The deepest depth among them.
    deepest: usize,
}

impl Pending {
    /// Adds the heredoc whose operator is at `start`, read at `depth`; false when it cannot
    /// be held (four gigabytes after the first).
    fn push(&mut self, start: usize, depth: usize) -> bool {
        if self.docs.is_empty() {
            self.base = start;
            self.deepest = 0;
        }
        let (Ok(at), Ok(d)) = (
            u32::try_from(start.saturating_sub(self.base)),
            u32::try_from(depth),
        ) else {
            return false;
        };
        self.docs.push([at, d]);
        self.deepest = self.deepest.max(depth);
        true
    }

    fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// True when one was read at `depth` or deeper.
    fn any_at_or_below(&self, depth: usize) -> bool {
        !self.docs.is_empty() && self.deepest >= depth
    }

    /// Where the first one's operator is.
    fn first_start(&self) -> Option<usize> {
        self.docs.first().map(|&[at, _]| self.base + at as usize)
    }

    /// Each one's operator offset and depth, in order.
    fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.docs
            .iter()
            .map(|&[at, d]| (self.base + at as usize, d as usize))
    }

    fn clear(&mut self) {
        self.docs.clear();
        self.deepest = 0;
    }
}

/// The heredoc whose operator is at `start` in `src[..to]`, parsed again.
fn heredoc_at(src: &[u8], start: usize, to: usize) -> Option<Heredoc<'_>> {
    match redirect(src.get(start..to)?) {
        Ok((
            _,
            Redirect::Heredoc {
                dash,
                word: Some((delim, quoted)),
            },
        )) => Some(Heredoc {
            start,
            delim,
            dash,
            quoted,
        }),
        _ => None,
    }
}

/// `heredoc_body = { body_line } , delimiter_line`: finds the end of a body starting at `s`,
/// searching no further than `to`: the offset just after the delimiter line (after its `\n`,
/// or `to` at the end of the input).
fn heredoc_end(src: &[u8], mut s: usize, to: usize, doc: &Heredoc) -> Option<usize> {
    let mut joined = false;
    while s < to {
        let rest = src.get(s..to)?;
        let nl = memchr(b'\n', rest);
        let line = &rest[..nl.unwrap_or(rest.len())];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let tabs = if doc.dash {
            line.iter().take_while(|&&b| b == b'\t').count()
        } else {
            0
        };
        if !joined && line[tabs..] == doc.delim[..] {
            return Some(nl.map_or(to, |n| s + n + 1));
        }
        let backslashes = line.iter().rev().take_while(|&&b| b == b'\\').count();
        joined = !doc.quoted && backslashes % 2 == 1;
        s += nl? + 1;
    }
    None
}

/// The lexer state.
struct Lexer<'a> {
    /// The whole input.
    src: &'a [u8],
    /// The next byte to read.
    pos: usize,
    /// Start of the current line (after the BOM on the first line).
    line_start: usize,
    /// The current line starts inside a construct.
    cur_inner: bool,
    /// Start of the current run of inner lines.
    inner_from: usize,
    /// Offset just after the last token that glues onto the next byte (a closing quote or
    /// substitution, an escape): a `#` there is inside a word.
    glue: usize,
    /// Open constructs, innermost last.
    stack: Stack,
    /// Heredocs waiting for their bodies, in order.
    pending: Pending,
    /// The result being built.
    out: Lexed,
    /// The first construct without a frame (quote, backquote, heredoc) that ran into the end.
    eof_open: Option<Unclosed>,
    /// Which comments are recorded.
    keep: Keep,
    /// BEGIN lines seen minus END lines (never below zero), for `Keep::Regions`.
    open_begins: usize,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    fn new(src: &'a [u8]) -> Self {
        let start = bom(src).map_or(0, |(rest, _)| src.len() - rest.len());
        Lexer {
            src,
            pos: start,
            line_start: start,
            cur_inner: false,
            inner_from: 0,
            glue: usize::MAX,
            stack: Stack::default(),
            pending: Pending::default(),
            out: Lexed::default(),
            eof_open: None,
            keep: Keep::All,
            open_begins: 0,
        }
    }

    /// Lexes everything and returns the result.
    fn run(mut self) -> Lexed {
        self.key();
        while self.pos < self.src.len() {
            match self.stack.last().map(|f| f.kind) {
                None => self.step_command(&TOP),
                Some(Kind::CommandSubst | Kind::ProcessSubst | Kind::Case(_)) => {
                    self.step_command(&SUBST);
                }
                Some(Kind::Arith { .. }) => self.step_arith(),
                Some(Kind::Param) => self.step_param(),
                Some(Kind::DoubleQuoted) => self.step_double_quoted(),
            }
        }
        self.finish()
    }

    /// Closes the books at the end of the input.
    fn finish(mut self) -> Lexed {
        let len = self.src.len();
        if self.cur_inner && self.inner_from < len {
            self.out.inner_lines.push(Span::new(self.inner_from, len));
        }
        let candidates = [
            self.stack.first().map(|(kind, start)| Unclosed {
                start,
                what: kind.what(),
            }),
            self.eof_open,
            self.pending.first_start().map(|start| Unclosed {
                start,
                what: "heredoc",
            }),
        ];
        self.out.unclosed = candidates.into_iter().flatten().min_by_key(|u| u.start);
        self.out
    }

    // --- bookkeeping ---------------------------------------------------------------------

    /// Records the `\n` at `nl`; the line after it starts inside a construct if `next_inner`.
    fn line_break(&mut self, nl: usize, next_inner: bool) {
        let next = nl + 1;
        match (self.cur_inner, next_inner) {
            (true, false) => self.out.inner_lines.push(Span::new(self.inner_from, next)),
            (false, true) => self.inner_from = next,
            _ => {}
        }
        self.cur_inner = next_inner;
        self.line_start = next;
    }

    /// Records every `\n` in `from..to` as a break inside a construct.
    fn inner_newlines(&mut self, from: usize, to: usize) {
        let Some(bytes) = self.src.get(from..to) else {
            return;
        };
        for i in memchr_iter(b'\n', bytes) {
            self.line_break(from + i, true);
        }
    }

    /// Notes a frameless construct opened at `start` that runs into the end of the input.
    fn open_at_eof(&mut self, start: usize, what: &'static str) {
        if self.eof_open.is_none() {
            self.eof_open = Some(Unclosed { start, what });
        }
    }

    /// Opens a frame at the current position, skipping its `n`-byte opener.
    fn push(&mut self, kind: Kind, n: usize) {
        self.stack.push(kind, self.pos);
        self.pos += n;
    }

    /// Closes the innermost frame with its `n`-byte closer.
    fn pop(&mut self, n: usize) {
        self.stack.pop();
        self.pos = (self.pos + n).min(self.src.len());
        self.glue = self.pos;
    }

    /// Whether a word starts at `p`: at the start of the line, or after a blank or a
    /// metacharacter that is not itself part of a word (an escaped `\;`, a closing `)`).
    fn word_starts_at(&self, p: usize) -> bool {
        self.glue != p
            && (p == self.line_start
                || p.checked_sub(1)
                    .and_then(|q| self.src.get(q))
                    .is_some_and(|&b| is_break(b)))
    }

    /// Whether a command may start at `p` (after optional blanks): after a line start, a
    /// control operator, or a reserved word that takes a command. `for` counts when
    /// `arith_for`, for `for ((`.
    fn at_command_start(&self, p: usize, arith_for: bool) -> bool {
        let src = self.src;
        let floor = self.line_start;
        let mut i = p;
        while i > floor && src.get(i - 1).is_some_and(|&b| is_blank(b)) {
            i -= 1;
        }
        if i <= floor {
            return true;
        }
        let Some(&before) = src.get(i - 1) else {
            return true;
        };
        if matches!(before, b';' | b'&' | b'|' | b'(' | b')' | b'\n') {
            return self.glue != i;
        }
        let mut j = i;
        while j > floor && i - j < 6 && src.get(j - 1).is_some_and(|&b| !is_break(b)) {
            j -= 1;
        }
        if j > floor && src.get(j - 1).is_some_and(|&b| !is_break(b)) {
            return false;
        }
        match src.get(j..i) {
            Some(
                b"then" | b"do" | b"else" | b"elif" | b"if" | b"while" | b"until" | b"!" | b"{"
                | b"time",
            ) => true,
            Some(b"for") => arith_for,
            _ => false,
        }
    }

    /// At the start of a top-level line: records an `assignment`.
    fn key(&mut self) {
        // With `Keep::Regions` only keys that can be inside a region matter: those after more
        // BEGIN lines than END lines (a superset of the keys inside regions).
        if !self.stack.is_empty()
            || self.cur_inner
            || (self.keep == Keep::Regions && self.open_begins == 0)
        {
            return;
        }
        let src = self.src;
        let Some(rest) = src.get(self.pos..) else {
            return;
        };
        let (read, name) = assignment(rest);
        if let Some((start, end)) = name {
            self.out.keys.push(Key {
                name: Span::new(self.pos + start, self.pos + end),
                context: 0,
            });
        }
        self.pos += read;
    }

    /// Marks the pattern of the innermost `case` item as begun.
    fn pattern_used(&mut self) {
        if let Some(mut f) = self.stack.last_mut()
            && let Kind::Case(CasePhase::Pattern { fresh: true }) = f.kind
        {
            f.kind = Kind::Case(CasePhase::Pattern { fresh: false });
        }
    }

    /// Inside a substitution, at the start of a word: handles `case`, `in` and `esac`.
    fn check_word(&mut self) {
        let src = self.src;
        let Some(top) = self.stack.last() else {
            return;
        };
        // Only `case`, `esac` and `in` matter.
        if !matches!(src.get(self.pos), Some(b'c' | b'e' | b'i')) {
            return;
        }
        let Some(Ok((_, word))) = src.get(self.pos..).map(keyword) else {
            return;
        };
        match (word, top.kind) {
            (b"in", Kind::Case(CasePhase::AwaitIn)) => {
                self.set_top(Kind::Case(CasePhase::Pattern { fresh: true }));
                self.pos += 2;
            }
            (b"esac", Kind::Case(CasePhase::Pattern { .. })) => self.pop(4),
            (b"esac", Kind::Case(CasePhase::Body)) if self.at_command_start(self.pos, false) => {
                self.pop(4);
            }
            (b"case", Kind::CommandSubst | Kind::ProcessSubst | Kind::Case(CasePhase::Body))
                if self.at_command_start(self.pos, false) =>
            {
                self.push(Kind::Case(CasePhase::AwaitIn), 4);
            }
            _ => {}
        }
    }

    /// Replaces the kind of the innermost frame, resetting its paren count.
    fn set_top(&mut self, kind: Kind) {
        if let Some(mut f) = self.stack.last_mut() {
            f.kind = kind;
            f.parens = 0;
        }
    }

    // --- scanners, one per context --------------------------------------------------------

    /// Skips bytes that cannot start a token in the context described by `stops`.
    #[inline]
    fn skip_plain(&mut self, stops: &ByteSet) -> Option<u8> {
        match stops.find(self.src, self.pos) {
            Some(i) => {
                self.pos = i;
                self.src.get(i).copied()
            }
            None => {
                self.pos = self.pos.max(self.src.len());
                None
            }
        }
    }

    /// One step of `commands`: at the top level (`stops == TOP`) or inside a
    /// `command_subst`, `process_subst` or `case_clause` (`SUBST`): one `token`.
    fn step_command(&mut self, stops: &ByteSet) {
        let from = self.pos;
        let subst = !self.stack.is_empty();
        let Some(b) = self.skip_plain(stops) else {
            return;
        };
        if subst && (self.pos > from || !matches!(b, b' ' | b'\t' | b'\n' | b'#' | b'(')) {
            self.pattern_used();
        }
        match b {
            b'\n' => self.command_newline(),
            b'#' => self.hash(),
            b'\'' => self.single_quote(),
            b'"' => self.push(Kind::DoubleQuoted, 1),
            b'\\' => self.command_backslash(),
            b'$' => self.dollar(false),
            b'`' => self.backquote(),
            b'<' | b'>' => self.redirect(),
            b'(' if subst => self.subst_open_paren(),
            b'(' => self.top_open_paren(),
            b')' => self.subst_close_paren(),
            b';' => {
                if let Ok((rest, ends_item)) = separator(&self.src[self.pos..]) {
                    if ends_item && self.top_kind() == Some(Kind::Case(CasePhase::Body)) {
                        self.set_top(Kind::Case(CasePhase::Pattern { fresh: true }));
                    }
                    self.pos = self.src.len() - rest.len();
                }
                self.check_word();
            }
            b' ' | b'\t' => {
                if let Ok((rest, _)) = blanks(&self.src[self.pos..]) {
                    self.pos = self.src.len() - rest.len();
                }
                self.check_word();
            }
            _ => {
                // `&` and `|`.
                self.pos += 1;
                self.check_word();
            }
        }
    }

    /// The kind of the innermost frame.
    fn top_kind(&self) -> Option<Kind> {
        self.stack.last().map(|f| f.kind)
    }

    /// One step of a `double_quoted` / `dollar_double_quoted` body: one `dq_item`.
    fn step_double_quoted(&mut self) {
        match self.skip_plain(&DQ) {
            Some(b'"') => self.pop(1),
            Some(b'\\') => self.inner_backslash(),
            Some(b'$') => self.dollar(true),
            Some(b'`') => self.backquote(),
            Some(b'\n') => self.inner_newline(),
            _ => {}
        }
    }

    /// One step of a `param_expansion` body.
    fn step_param(&mut self) {
        match self.skip_plain(&PARAM) {
            Some(b'}') => self.pop(1),
            Some(b'\'') => self.single_quote(),
            Some(b'"') => self.push(Kind::DoubleQuoted, 1),
            Some(b'\\') => self.inner_backslash(),
            Some(b'$') => self.dollar(false),
            Some(b'`') => self.backquote(),
            Some(b'\n') => self.inner_newline(),
            _ => {}
        }
    }

    /// One step of `arith` (inside `arith_expansion` or `arith_command`).
    fn step_arith(&mut self) {
        match self.skip_plain(&ARITH) {
            Some(b'(') => {
                if let Some(mut f) = self.stack.last_mut() {
                    f.parens = f.parens.saturating_add(1);
                }
                self.pos += 1;
            }
            Some(b')') => self.arith_close_paren(),
            Some(b'\'') => self.single_quote(),
            Some(b'"') => self.push(Kind::DoubleQuoted, 1),
            Some(b'\\') => self.inner_backslash(),
            Some(b'$') => self.dollar(false),
            Some(b'`') => self.backquote(),
            Some(b'\n') => self.inner_newline(),
            _ => {}
        }
    }

    // --- tokens ----------------------------------------------------------------------------

    /// A `\n` inside a construct.
    fn inner_newline(&mut self) {
        self.line_break(self.pos, true);
        self.pos += 1;
    }

    /// A `\n` between commands: starts pending heredoc bodies, then the next line.
    fn command_newline(&mut self) {
        let nl = self.pos;
        let depth = self.stack.len();
        if self.pending.any_at_or_below(depth) {
            self.pos = self.heredoc_bodies(nl);
        } else {
            self.line_break(nl, depth > 0);
            self.pos = nl + 1;
        }
        if self.stack.is_empty() {
            self.key();
        } else {
            self.check_word();
        }
    }

    /// Reads the `heredoc_body` of every pending heredoc opened at the current depth or deeper,
    /// in order; they start after the `\n` at `nl`. Returns the offset after the last
    /// `delimiter_line`.
    fn heredoc_bodies(&mut self, nl: usize) -> usize {
        let src = self.src;
        let len = src.len();
        let depth = self.stack.len();
        // Taken out (and put back, to keep its capacity) so `self` stays free to update; the
        // heredocs of enclosing constructs go back to wait for their own newline.
        let mut docs = std::mem::take(&mut self.pending);
        self.line_break(nl, true);
        let mut s = nl + 1;
        let mut ends_with_newline = false;
        for (start, doc_depth) in docs.iter() {
            if doc_depth < depth {
                self.pending.push(start, doc_depth);
                continue;
            }
            let Some(doc) = heredoc_at(src, start, len) else {
                continue;
            };
            let Some(end) = heredoc_end(src, s, len, &doc) else {
                self.inner_newlines(s, len);
                self.open_at_eof(doc.start, "heredoc");
                return len;
            };
            ends_with_newline = end > s && src.get(end - 1) == Some(&b'\n');
            let last_nl = if ends_with_newline { end - 1 } else { end };
            self.inner_newlines(s, last_nl);
            if ends_with_newline {
                self.line_break(last_nl, true);
            }
            s = end;
        }
        if ends_with_newline && self.stack.is_empty() {
            // The line after the last delimiter line is back at the top level.
            self.line_break(s - 1, false);
        }
        if self.pending.is_empty() {
            docs.clear();
            self.pending = docs;
        }
        s
    }

    /// A `#`: a `comment` at the start of a word, else part of a word.
    fn hash(&mut self) {
        let p = self.pos;
        if !self.word_starts_at(p) {
            self.pos += 1;
            return;
        }
        let src = self.src;
        let Ok((rest, text)) = comment(&src[p..]) else {
            self.pos += 1;
            return;
        };
        let after = src.len() - rest.len();
        let end = if rest.first() == Some(&b'\n') && text.ends_with(b"\r") {
            after - 1
        } else {
            after
        };
        let alone = self.stack.is_empty()
            && !self.cur_inner
            && src
                .get(self.line_start..p)
                .is_some_and(|pre| pre.iter().all(|&b| is_blank(b)));
        if self.keep.keeps(&src[p..end]) {
            if self.keep == Keep::Regions && alone {
                // Keys are recorded only between BEGIN and END lines (see `key`).
                match crate::marker::parse(&src[p..end]).map(|m| m.kind) {
                    Some(crate::marker::Kind::Begin) => self.open_begins += 1,
                    Some(crate::marker::Kind::End) => {
                        self.open_begins = self.open_begins.saturating_sub(1);
                    }
                    None => {}
                }
            }
            self.out.comments.push(Comment {
                text: Span::new(p, end),
                alone,
                context: 0,
            });
        }
        self.pos = after;
    }

    /// A `\` where commands are read: a `continuation` or an `escape`.
    fn command_backslash(&mut self) {
        let p = self.pos;
        let src = self.src;
        if let Ok((rest, _)) = continuation(&src[p..]) {
            let after = src.len() - rest.len();
            // The next line continues this word unless a word break came before the `\`.
            let breaks = self.word_starts_at(p);
            self.line_break(after - 1, true);
            self.glue = if breaks { usize::MAX } else { after };
            self.pos = after;
            if after == src.len() {
                self.open_at_eof(p, "line continuation");
            }
        } else {
            self.pos = (p + 2).min(src.len());
            self.glue = self.pos;
        }
    }

    /// A `\` inside quotes or expansions: escapes the next byte (a newline stays a newline).
    fn inner_backslash(&mut self) {
        let p = self.pos;
        if self.src.get(p + 1) == Some(&b'\n') {
            self.line_break(p + 1, true);
        }
        self.pos = (p + 2).min(self.src.len());
    }

    /// A `'`: a `single_quoted` string.
    fn single_quote(&mut self) {
        let p = self.pos;
        let src = self.src;
        if let Ok((rest, body)) = single_quoted(&src[p..]) {
            self.inner_newlines(p + 1, p + 1 + body.len());
            self.pos = src.len() - rest.len();
            self.glue = self.pos;
        } else {
            self.inner_newlines(p + 1, src.len());
            self.open_at_eof(p, "single-quoted string");
            self.pos = src.len();
        }
    }

    /// A `$`: the opener of a `dollar` construct. Inside double quotes `$'` and `$"` are
    /// plain.
    fn dollar(&mut self, in_double_quotes: bool) {
        let p = self.pos;
        let src = self.src;
        // `$name`, `$?`, `$#` ...: nothing to open; skip the parser for these.
        if !matches!(src.get(p + 1), Some(b'(' | b'{' | b'\'' | b'"')) {
            self.pos += 1;
            return;
        }
        let Ok((_, opener)) = dollar(&src[p..]) else {
            self.pos += 1;
            return;
        };
        match opener {
            Dollar::Arith => self.push(Kind::Arith { dollar: true }, 3),
            Dollar::Command => {
                self.push(Kind::CommandSubst, 2);
                self.check_word();
            }
            Dollar::Param => self.push(Kind::Param, 2),
            Dollar::AnsiC if !in_double_quotes => {
                if let Ok((rest, body)) = dollar_single_quoted(&src[p..]) {
                    self.inner_newlines(p + 2, p + 2 + body.len());
                    self.pos = src.len() - rest.len();
                    self.glue = self.pos;
                } else {
                    self.inner_newlines(p + 2, src.len());
                    self.open_at_eof(p, "ANSI-C quoted string");
                    self.pos = src.len();
                }
            }
            Dollar::Locale if !in_double_quotes => self.push(Kind::DoubleQuoted, 2),
            _ => self.pos += 1,
        }
    }

    /// A `` ` ``: a `backquoted` command substitution, lexed shallowly for comments.
    fn backquote(&mut self) {
        let p = self.pos;
        let src = self.src;
        if let Ok((rest, body)) = backquoted(&src[p..]) {
            self.backquote_body(p + 1, p + 1 + body.len());
            self.inner_newlines(p + 1, p + 1 + body.len());
            self.pos = src.len() - rest.len();
            self.glue = self.pos;
        } else {
            self.backquote_body(p + 1, src.len());
            self.inner_newlines(p + 1, src.len());
            self.open_at_eof(p, "backquote");
            self.pos = src.len();
        }
    }

    /// Finds the comments in the body `from..to` of a backquoted substitution (never alone),
    /// skipping quoted text and the bodies of heredocs started inside it.
    fn backquote_body(&mut self, from: usize, to: usize) {
        let src = self.src;
        let mut quote = 0u8;
        let mut glue = usize::MAX;
        let mut pending = Pending::default();
        let mut i = from;
        while i < to {
            let Some(&b) = src.get(i) else { break };
            match b {
                b'\\' => {
                    i = (i + 2).min(to);
                    glue = i;
                }
                b'\'' | b'"' if quote == 0 || quote == b => {
                    quote = if quote == 0 { b } else { 0 };
                    i += 1;
                    glue = i;
                }
                b'#' if quote == 0
                    && glue != i
                    && (i == from || src.get(i - 1).is_some_and(|&c| is_break(c))) =>
                {
                    let line = &src[i..to];
                    let mut end = i + memchr(b'\n', line).unwrap_or(line.len());
                    if end < to && src.get(end - 1) == Some(&b'\r') {
                        end -= 1;
                    }
                    if self.keep.keeps(&src[i..end]) {
                        self.out.comments.push(Comment {
                            text: Span::new(i, end),
                            alone: false,
                            context: 0,
                        });
                    }
                    i = end;
                }
                b'<' if quote == 0 => match redirect(&src[i..to]) {
                    Ok((rest, Redirect::Heredoc { word: Some(_), .. })) => {
                        if !pending.push(i, 0) {
                            self.open_at_eof(i, "heredoc");
                        }
                        i = to - rest.len();
                    }
                    _ => i += 1,
                },
                b'\n' if quote == 0 && !pending.is_empty() => {
                    i += 1;
                    for (start, _) in pending.iter() {
                        i = heredoc_at(src, start, to)
                            .and_then(|doc| heredoc_end(src, i, to, &doc))
                            .unwrap_or(to);
                    }
                    pending.clear();
                }
                _ => i += 1,
            }
        }
    }

    /// A `<` or `>` where commands are read: a `redirect`.
    fn redirect(&mut self) {
        let p = self.pos;
        let src = self.src;
        // Most redirections are plain `>`, `<` or `2>&1`: skip the parser for them.
        if !matches!(src.get(p..p + 2), Some(b"<<" | b"<(" | b">(")) {
            self.pos += 1;
            return;
        }
        match redirect(&src[p..]) {
            Ok((_, Redirect::HereString)) => self.pos += 3,
            Ok((rest, Redirect::Heredoc { word, .. })) => match word {
                Some(_) => {
                    if !self.pending.push(p, self.stack.len()) {
                        self.open_at_eof(p, "heredoc");
                    }
                    self.pos = src.len() - rest.len();
                }
                None => self.pos += 2,
            },
            Ok((_, Redirect::ProcessSubst)) => {
                self.push(Kind::ProcessSubst, 2);
                self.check_word();
            }
            _ => self.pos += 1,
        }
    }

    /// A `(` at the top level: `((` at the start of a command opens an `arith_command`;
    /// other parentheses (subshells, arrays) are not tracked at the top level.
    fn top_open_paren(&mut self) {
        let p = self.pos;
        if self.src.get(p + 1) == Some(&b'(') && self.at_command_start(p, true) {
            self.push(Kind::Arith { dollar: false }, 2);
        } else {
            self.pos += 1;
        }
    }

    /// A `(` inside a substitution: a pattern's optional opener, an `arith_command`, or a
    /// subshell.
    fn subst_open_paren(&mut self) {
        let p = self.pos;
        match self.top_kind() {
            Some(Kind::Case(CasePhase::Pattern { fresh: true })) => {
                self.set_top(Kind::Case(CasePhase::Pattern { fresh: false }));
                self.pos += 1;
                return;
            }
            Some(Kind::Case(CasePhase::Pattern { fresh: false })) => {}
            _ if self.src.get(p + 1) == Some(&b'(') && self.at_command_start(p, true) => {
                self.push(Kind::Arith { dollar: false }, 2);
                return;
            }
            _ => {}
        }
        if let Some(mut f) = self.stack.last_mut() {
            f.parens = f.parens.saturating_add(1);
        }
        self.pos += 1;
        self.check_word();
    }

    /// A `)` inside a substitution: ends a pattern, a subshell, or the substitution.
    fn subst_close_paren(&mut self) {
        let Some(mut top) = self.stack.last_mut() else {
            self.pos += 1;
            return;
        };
        if top.parens > 0 {
            top.parens -= 1;
            drop(top);
            self.pos += 1;
            self.check_word();
            return;
        }
        let kind = top.kind;
        drop(top);
        match kind {
            Kind::Case(CasePhase::Pattern { .. }) => {
                self.set_top(Kind::Case(CasePhase::Body));
                self.pos += 1;
                self.check_word();
            }
            // A `case` left open: drop it and let the `)` close what encloses it.
            Kind::Case(_) => {
                self.stack.pop();
            }
            _ => self.pop(1),
        }
    }

    /// A `)` inside arithmetic: closes a group, the arithmetic (`))`), or shows that `$((`
    /// or `((` really opened two nested subshells.
    fn arith_close_paren(&mut self) {
        let p = self.pos;
        let Some(mut top) = self.stack.last_mut() else {
            self.pos += 1;
            return;
        };
        if top.parens > 0 {
            top.parens -= 1;
            drop(top);
            self.pos += 1;
            return;
        }
        let kind = top.kind;
        drop(top);
        if self.src.get(p + 1) == Some(&b')') {
            self.pop(2);
        } else if kind == (Kind::Arith { dollar: true }) {
            // `$((cmd) ...)`: a command substitution starting with a subshell.
            self.set_top(Kind::CommandSubst);
            self.pos += 1;
        } else {
            // `((cmd) ...)`: the outer `(` is a subshell.
            self.stack.pop();
            if let Some(mut f) = self.stack.last_mut()
                && f.kind.is_command()
            {
                f.parens = f.parens.saturating_add(1);
            }
            self.pos += 1;
        }
    }
}

/// Lexes a POSIX sh / bash / zsh file.
///
/// Reports the real comments (a `#` at the start of a word, outside quotes, heredoc bodies
/// and expansions), the lines that start inside a multi-line construct, the top-level
/// `NAME=` / `export NAME=` assignments at the start of a line, and the first construct left
/// open at the end. Never panics; linear in the input; any bytes (not only UTF-8) are fine.
#[must_use]
pub(crate) fn lex(src: &[u8]) -> Lexed {
    Lexer::new(src).run()
}

/// As [`lex`], recording the comments `keep` asks for.
#[must_use]
pub(crate) fn lex_keeping(src: &[u8], keep: Keep) -> Lexed {
    let mut lexer = Lexer::new(src);
    lexer.keep = keep;
    lexer.run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the invariants every result must satisfy.
    fn check(src: &[u8], l: &Lexed) {
        let len = src.len();
        let mut last = 0;
        for c in &l.comments {
            assert!(c.text.start < c.text.end && c.text.end <= len, "{c:?}");
            assert!(c.text.start >= last, "comments out of order");
            last = c.text.end;
            assert_eq!(src[c.text.start], b'#');
            assert!(!c.text.of(src).contains(&b'\n'));
            assert_eq!(c.context, 0);
        }
        let mut prev_end = None;
        for s in &l.inner_lines {
            assert!(s.start < s.end && s.end <= len, "{s:?}");
            assert!(
                s.start == 0 || src[s.start - 1] == b'\n',
                "span not at a line start"
            );
            assert!(
                s.end == len || src[s.end - 1] == b'\n',
                "span not at a line end"
            );
            if let Some(e) = prev_end {
                assert!(s.start > e, "inner_lines overlap or touch");
            }
            prev_end = Some(s.end);
        }
        for k in &l.keys {
            assert!(k.name.start < k.name.end && k.name.end < len);
            assert_eq!(src[k.name.end], b'=');
        }
        if let Some(u) = l.unclosed {
            assert!(u.start < len);
        }
    }

    fn lx(src: &str) -> Lexed {
        let l = lex(src.as_bytes());
        check(src.as_bytes(), &l);
        l
    }

    /// Every comment with its `alone` flag.
    fn comments(src: &str) -> Vec<(&str, bool)> {
        lx(src)
            .comments
            .iter()
            .map(|c| (&src[c.text.start..c.text.end], c.alone))
            .collect()
    }

    /// The comments that stand alone.
    fn alone(src: &str) -> Vec<&str> {
        comments(src)
            .into_iter()
            .filter_map(|(t, a)| a.then_some(t))
            .collect()
    }

    /// 0-based numbers of the inner lines.
    fn inner(src: &str) -> Vec<usize> {
        let l = lx(src);
        let mut starts = vec![0];
        starts.extend(memchr_iter(b'\n', src.as_bytes()).map(|i| i + 1));
        starts.retain(|&s| s < src.len());
        starts
            .iter()
            .enumerate()
            .filter_map(|(n, &s)| l.is_inner(s).then_some(n))
            .collect()
    }

    fn keys(src: &str) -> Vec<&str> {
        lx(src)
            .keys
            .iter()
            .map(|k| &src[k.name.start..k.name.end])
            .collect()
    }

    fn unclosed(src: &str) -> Option<(usize, &'static str)> {
        lx(src).unclosed.map(|u| (u.start, u.what))
    }

    /// Many heredocs waiting on one line, at two depths: each body is read after the newline
    /// at its own depth, in order, with its own delimiter and flags (parsed again from the
    /// operator).
    #[test]
    fn many_pending_heredocs_read_their_bodies_in_order() {
        let n = 5_000;
        let ops: String = (0..n).map(|i| format!(" <<'E{i}'")).collect();
        let bodies: String = (0..n).map(|i| format!("# in {i}\nE{i}\n")).collect();
        let src = format!("cat{ops} $(cat <<-X\n\t# inner\n\tX\n)\n{bodies}# after\nA=1\n");
        let l = lx(&src);
        assert_eq!(l.unclosed, None);
        assert_eq!(comments(&src), [("# after", true)]);
        assert_eq!(keys(&src), ["A"]);
        // The last delimiter line missing: that heredoc is left open, at its operator.
        let src = format!("cat{ops}\n{}", &bodies[..bodies.len() - 6]);
        let last = src.rfind("<<'E").unwrap_or(0);
        assert_eq!(unclosed(&src), Some((last, "heredoc")));
    }

    #[test]
    fn frame_codes_round_trip() {
        for (i, k) in Kind::CODES.iter().enumerate() {
            assert_eq!(usize::from(k.code()), i);
            assert_eq!(Kind::of_code(k.code()), *k);
        }
    }

    /// Deep nesting, with unmatched `(` at every level: every frame's kind and paren count
    /// come back when the inner ones close (the stack keeps one byte a frame).
    #[test]
    fn deep_nesting_with_parens_at_every_level_unwinds_exactly() {
        let n = 20_000;
        let open = "$( ( \"${x:-$(( 1 + (".repeat(n);
        let close = ") ))}\" ) )".repeat(n);
        let src = format!("echo {open}{close}\n# after\nA=1\n");
        let l = lx(&src);
        assert_eq!(l.unclosed, None);
        assert_eq!(comments(&src), [("# after", true)]);
        assert_eq!(keys(&src), ["A"]);
        // Left open, the outermost construct is named, at its opener.
        let src = format!("x {open}");
        assert_eq!(unclosed(&src), Some((2, "command substitution")));
    }

    const MARK: &str = "# BEGIN ACME MANAGED acc";

    // --- file ------------------------------------------------------------------------------

    #[test]
    fn file_empty_input() {
        assert_eq!(lx(""), Lexed::default());
    }

    #[test]
    fn file_no_final_newline() {
        let src = "a=1\n# end";
        assert_eq!(alone(src), ["# end"]);
        assert_eq!(keys(src), ["a"]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn file_non_utf8_bytes() {
        let src = b"\xff\xfe=1\n# \xc3\x28 caf\xe9\nX=\x80'\xff\n'\n\x80 # c\n";
        let l = lex(src);
        check(src, &l);
        let texts: Vec<&[u8]> = l.comments.iter().map(|c| c.text.of(src)).collect();
        assert_eq!(texts, [&b"# \xc3\x28 caf\xe9"[..], &b"# c"[..]]);
        assert!(l.comments[0].alone);
        assert!(!l.comments[1].alone);
        assert_eq!(l.keys.len(), 1);
        assert_eq!(
            l.inner_lines.iter().collect::<Vec<_>>(),
            [Span::new(21, 23)]
        );
    }

    #[test]
    fn file_realistic_profile() {
        let src = "\
# ~/.profile
export PATH=\"$HOME/bin:$PATH\"
alias ll='ls -la' # list
if [ -f ~/.bashrc ]; then
    . ~/.bashrc
fi
# BEGIN ACME MANAGED hooks
eval \"$(acme init -)\"
# END ACME MANAGED hooks
";
        assert_eq!(
            alone(src),
            [
                "# ~/.profile",
                "# BEGIN ACME MANAGED hooks",
                "# END ACME MANAGED hooks"
            ]
        );
        assert_eq!(comments(src)[1], ("# list", false));
        assert_eq!(keys(src), ["PATH"]);
        assert!(inner(src).is_empty());
        assert_eq!(unclosed(src), None);
    }

    // --- bom -------------------------------------------------------------------------------

    #[test]
    fn bom_hash_after_bom_is_alone() {
        let src = "\u{feff}# BEGIN ACME MANAGED x\nA=1\n";
        assert_eq!(alone(src), ["# BEGIN ACME MANAGED x"]);
    }

    #[test]
    fn bom_key_after_bom() {
        assert_eq!(keys("\u{feff}FOO=1\n"), ["FOO"]);
    }

    #[test]
    fn bom_only_at_file_start() {
        // A BOM elsewhere is just bytes of a word, so the `#` after it is inside the word.
        assert_eq!(comments("a\n\u{feff}# x\n"), []);
    }

    // --- newline ---------------------------------------------------------------------------

    #[test]
    fn newline_crlf_comment_excludes_cr() {
        let src = "# a\r\nx=1 # b\r\n# c\r";
        assert_eq!(
            comments(src),
            [("# a", true), ("# b", false), ("# c\r", true)]
        );
        assert_eq!(keys(src), ["x"]);
    }

    #[test]
    fn newline_crlf_multiline_string() {
        let src = "x='a\r\n# BEGIN\r\n'\r\n# real\r\n";
        assert_eq!(alone(src), ["# real"]);
        assert_eq!(inner(src), [1, 2]);
    }

    // --- comment ---------------------------------------------------------------------------

    #[test]
    fn comment_alone_at_line_start_and_indented() {
        assert_eq!(alone("# a\n  \t# b\n"), ["# a", "# b"]);
    }

    #[test]
    fn comment_after_code_not_alone() {
        assert_eq!(
            comments("echo hi # BEGIN ACME MANAGED acc\n"),
            [(MARK, false)]
        );
    }

    #[test]
    fn comment_only_at_word_start() {
        for src in [
            "a#b\n",
            "${x#y}\n",
            "${#x}\n",
            "$#\n",
            "\\#\n",
            "\"#\"\n",
            "'#'\n",
            "x=#y\n",
            "$(echo a)#b\n",
            "echo \\ #x\n",
            "`a`#b\n",
            "$((1))#b\n",
            "${x}#b\n",
            "\"a\"#b\n",
        ] {
            assert_eq!(comments(src), [], "{src:?}");
        }
    }

    #[test]
    fn metachar_starts_a_word() {
        for src in [
            "a;#x\n", "a&#x\n", "a|#x\n", "(#x\n", "a)#x\n", "a<#x\n", "a>#x\n", "a\t#x\n",
        ] {
            assert_eq!(comments(src), [("#x", false)], "{src:?}");
        }
    }

    #[test]
    fn comment_hash_inside_comment_is_text() {
        assert_eq!(comments("# a # b 'c\nx=1\n"), [("# a # b 'c", true)]);
        assert_eq!(keys("# a # b 'c\nx=1\n"), ["x"]);
    }

    #[test]
    fn comment_quotes_inside_comment_do_not_open() {
        let src = "# it's \"a\" $( `\n# BEGIN\n";
        assert_eq!(alone(src).len(), 2);
        assert_eq!(unclosed(src), None);
    }

    // --- assignment ------------------------------------------------------------------------

    #[test]
    fn assignment_plain_export_and_indented() {
        let src = "A=1\nexport B=2\n  C=3\n\texport   D_1=\"x\"\n";
        assert_eq!(keys(src), ["A", "B", "C", "D_1"]);
    }

    #[test]
    fn assignment_only_at_line_start_with_equals() {
        let src = "export E\nF+=1\n1G=2\necho H=1\nI=1; J=2\nexportK=1\nexport=1\n";
        assert_eq!(keys(src), ["I", "exportK", "export"]);
    }

    #[test]
    fn assignment_not_on_inner_lines() {
        let src = "x='\nA=1\n'\ncat <<EOF\nB=2\nEOF\necho \\\nC=3\nD=4\n";
        assert_eq!(keys(src), ["x", "D"]);
    }

    #[test]
    fn assignment_name_span() {
        let l = lx("  export FOO=bar\n");
        assert_eq!(
            l.keys.iter().collect::<Vec<_>>(),
            [Key {
                name: Span::new(9, 12),
                context: 0
            }]
        );
    }

    // --- continuation ----------------------------------------------------------------------

    #[test]
    fn continuation_next_line_inner() {
        let src = "echo a \\\n# BEGIN ACME MANAGED acc\necho b \\\n  c \\\n  d\n# real\n";
        assert_eq!(inner(src), [1, 3, 4]);
        assert_eq!(comments(src), [(MARK, false), ("# real", true)]);
    }

    #[test]
    fn continuation_crlf() {
        let src = "echo a \\\r\n# x\r\n# y\r\n";
        assert_eq!(inner(src), [1]);
        assert_eq!(comments(src), [("# x", false), ("# y", true)]);
    }

    #[test]
    fn continuation_glues_words() {
        // `a\<newline>#b` is the word `a#b`; with a blank before the `\` it is a comment.
        assert_eq!(comments("echo a\\\n#b\n"), []);
        assert_eq!(comments("echo a \\\n#b\n"), [("#b", false)]);
    }

    #[test]
    fn continuation_into_eof_is_unclosed() {
        assert_eq!(unclosed("echo a \\\n"), Some((7, "line continuation")));
        assert_eq!(unclosed("echo a \\\nb\n"), None);
        assert_eq!(unclosed("echo a \\"), None);
    }

    // --- escape ----------------------------------------------------------------------------

    #[test]
    fn escape_quotes_do_not_open() {
        let src = "echo \\' \\\" \\` \\$( # c\n# d\n";
        assert_eq!(comments(src), [("# c", false), ("# d", true)]);
        assert_eq!(unclosed(src), None);
    }

    // --- single_quoted ---------------------------------------------------------------------

    #[test]
    fn single_quoted_multiline_marker_is_inner() {
        let src = format!("x='a\n{MARK}\nb'\n# real\n");
        assert_eq!(alone(&src), ["# real"]);
        assert_eq!(inner(&src), [1, 2]);
    }

    #[test]
    fn single_quoted_has_no_escapes() {
        let src = "echo 'a\\' # c\n";
        assert_eq!(comments(src), [("# c", false)]);
    }

    #[test]
    fn single_quoted_unclosed() {
        assert_eq!(
            unclosed("a\necho 'x\n# y\n"),
            Some((7, "single-quoted string"))
        );
        assert_eq!(comments("a\necho 'x\n# y\n"), []);
    }

    // --- double_quoted ---------------------------------------------------------------------

    #[test]
    fn double_quoted_multiline_marker_is_inner() {
        let src = format!("x=\"a\n{MARK}\n\"\n{MARK}\n");
        assert_eq!(comments(&src), [(MARK, true)]);
        assert_eq!(inner(&src), [1, 2]);
    }

    #[test]
    fn double_quoted_escapes() {
        let src = "echo \"a\\\"b # c\" # d\n";
        assert_eq!(comments(src), [("# d", false)]);
    }

    #[test]
    fn double_quoted_nested_substitution_with_quotes() {
        let src = "echo \"$(echo \"a # b\")\" # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        let src = "echo \"${x:-\"}\"}\" # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        let src = "echo \"`echo \"#x\"`\" # c\n";
        assert_eq!(comments(src), [("# c", false)]);
    }

    #[test]
    fn double_quoted_dollar_quotes_are_plain() {
        let src = "echo \"$'\" # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn double_quoted_unclosed() {
        assert_eq!(unclosed("echo \"abc\n"), Some((5, "double-quoted string")));
    }

    // --- dollar_single_quoted --------------------------------------------------------------

    #[test]
    fn production_dollar_single_quote() {
        let src = "echo $'a\\'b # c' # d\n";
        assert_eq!(comments(src), [("# d", false)]);
        let src = "echo $'a\\\\' # d\n";
        assert_eq!(comments(src), [("# d", false)]);
    }

    #[test]
    fn dollar_single_quoted_multiline() {
        let src = format!("x=$'a\n{MARK}\\'\n'\n# r\n");
        assert_eq!(alone(&src), ["# r"]);
        assert_eq!(inner(&src), [1, 2]);
        assert_eq!(unclosed("x=$'a\\'\n"), Some((2, "ANSI-C quoted string")));
    }

    // --- dollar_double_quoted --------------------------------------------------------------

    #[test]
    fn dollar_double_quoted_multiline() {
        let src = format!("echo $\"a\n{MARK}\n\" # c\n");
        assert_eq!(comments(&src), [("# c", false)]);
        assert_eq!(inner(&src), [1, 2]);
    }

    // --- command_subst ---------------------------------------------------------------------

    #[test]
    fn command_subst_multiline_marker_is_inner() {
        let src = format!("x=$(\n{MARK}\n  echo a\n)\n# r\n");
        assert_eq!(comments(&src), [(MARK, false), ("# r", true)]);
        assert_eq!(inner(&src), [1, 2, 3]);
    }

    #[test]
    fn command_subst_comment_does_not_close() {
        let src = "x=$(echo a # ) c\n)\n# r\n";
        assert_eq!(comments(src), [("# ) c", false), ("# r", true)]);
        assert_eq!(inner(src), [1]);
    }

    #[test]
    fn command_subst_comment_after_opener() {
        let src = "x=$(#c\necho hi)\n";
        assert_eq!(comments(src), [("#c", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn command_subst_nested_and_quoted() {
        let src = "x=$(a $(b ')' \")\") `)` ${x%)} ( c ) )\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn command_subst_unclosed() {
        assert_eq!(unclosed("a\nx=$(echo\n"), Some((4, "command substitution")));
        // The outermost construct is reported.
        assert_eq!(
            unclosed("x=$(echo \"a\n"),
            Some((2, "command substitution"))
        );
    }

    #[test]
    fn command_subst_deep_nesting_does_not_overflow() {
        let src = "$(".repeat(200_000);
        let l = lx(&src);
        assert_eq!(
            l.unclosed,
            Some(Unclosed {
                start: 0,
                what: "command substitution"
            })
        );
        let src = format!("{}{}\n# r\n", "$(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(alone(&src), ["# r"]);
    }

    // --- process_subst ---------------------------------------------------------------------

    #[test]
    fn process_subst_multiline() {
        let src = format!("diff <(\n{MARK}\nsort a) >(cat)\n# r\n");
        assert_eq!(comments(&src), [(MARK, false), ("# r", true)]);
        assert_eq!(inner(&src), [1, 2]);
        assert_eq!(unclosed("cat <(a\n"), Some((4, "process substitution")));
    }

    // --- case_clause -----------------------------------------------------------------------

    #[test]
    fn case_clause_in_command_subst() {
        let src = "x=$(case x in a) echo;; esac)\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn case_clause_multiline_with_paren_patterns() {
        let src = "x=$(case $y in\n  (a|b) echo 1 ;;\n  c) (echo 2) ;&\n  *) ;;\nesac\n)\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(inner(src), [1, 2, 3, 4, 5]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn case_clause_nested_and_after_reserved_word() {
        let src = "x=$(if t; then case a in a) case b in b) :;; esac;; esac; fi)\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn case_clause_word_not_at_command_start() {
        // `echo case in x)`: the `)` closes the substitution.
        let src = "x=$(echo case in x) # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn case_clause_unterminated_in_subst() {
        // A missing `esac`: the `)` that cannot belong to the case closes the substitution.
        let src = "x=$(case a in a) echo ) # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn case_clause_at_top_level_lines_are_not_inner() {
        let src = "case $1 in\n  a) # BEGIN ACME MANAGED x\n  ;;\nesac\n";
        assert!(inner(src).is_empty());
        assert_eq!(comments(src), [("# BEGIN ACME MANAGED x", false)]);
    }

    // --- arith_expansion -------------------------------------------------------------------

    #[test]
    fn arith_expansion_shift_is_not_heredoc() {
        let src = "echo $((1<<2))\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn arith_expansion_hash_is_not_comment() {
        assert_eq!(comments("echo $((16#ff)) $(( 2#1 + ( 3 ) ))\n"), []);
    }

    #[test]
    fn arith_expansion_multiline() {
        let src = "x=$((1 +\n# 2\n3))\n";
        assert_eq!(comments(src), []);
        assert_eq!(inner(src), [1, 2]);
        assert_eq!(unclosed("x=$((1 +\n"), Some((2, "arithmetic expansion")));
    }

    #[test]
    fn arith_expansion_that_is_a_subshell() {
        let src = "echo $((echo a); (echo b)) # c\n# r\n";
        assert_eq!(comments(src), [("# c", false), ("# r", true)]);
        assert_eq!(unclosed(src), None);
    }

    // --- arith_command ---------------------------------------------------------------------

    #[test]
    fn arith_command_shift_is_not_heredoc() {
        let src = "((x <<= 2))\nfor ((i=0; i<<1; i++)); do :; done\nif ((a<<b)); then :; fi\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn arith_command_only_at_command_start() {
        // `echo ((` is not arithmetic; the `<<` is a heredoc operator.
        let src = "x=((a)) <<EOF\n# body\nEOF\n";
        assert_eq!(comments(src), []);
        assert_eq!(inner(src), [1, 2]);
    }

    #[test]
    fn arith_command_that_is_a_subshell() {
        let src = "((echo a) | cat) # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
        let src = "x=$( ((echo a) | cat) ) # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
    }

    // --- param_expansion -------------------------------------------------------------------

    #[test]
    fn param_expansion_operators_are_not_comments() {
        let src = "echo ${x#y} ${x##*/} ${x%#} ${#x} ${x:-#} ${x/#a/b}\n";
        assert_eq!(comments(src), []);
    }

    #[test]
    fn param_expansion_quotes_and_nesting() {
        let src = "echo ${x:-'}'} ${x:-\"}\"} ${x:-${y:-}}} ${x:-$(echo })} # c\n";
        assert_eq!(comments(src), [("# c", false)]);
    }

    #[test]
    fn param_expansion_multiline() {
        let src = format!("echo ${{x:-a\n{MARK}\n}}\n# r\n");
        assert_eq!(alone(&src), ["# r"]);
        assert_eq!(inner(&src), [1, 2]);
        assert_eq!(unclosed("echo ${x\n"), Some((5, "parameter expansion")));
    }

    // --- backquoted ------------------------------------------------------------------------

    #[test]
    fn backquoted_multiline_marker_is_inner() {
        let src = format!("x=`\n{MARK}\necho`\n# r\n");
        assert_eq!(comments(&src), [(MARK, false), ("# r", true)]);
        assert_eq!(inner(&src), [1, 2]);
    }

    #[test]
    fn backquoted_comment_ends_at_backquote() {
        let src = "x=`echo a # c` # d\n";
        assert_eq!(comments(src), [("# c", false), ("# d", false)]);
    }

    #[test]
    fn backquoted_escapes_and_quotes() {
        let src = "x=`echo \\` '#a' \"#b\" a#b` # d\n";
        assert_eq!(comments(src), [("# d", false)]);
        assert_eq!(unclosed("x=`echo\n"), Some((2, "backquote")));
    }

    #[test]
    fn backquoted_heredoc_body_is_not_comment() {
        let src = "x=`cat <<EOF\n# BEGIN\nEOF\n`\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
    }

    // --- heredoc_redirect / heredoc_body ---------------------------------------------------

    #[test]
    fn heredoc_body_marker_is_not_comment() {
        let src = format!("cat <<EOF\n{MARK}\n'\nEOF\n# r\n");
        assert_eq!(comments(&src), [("# r", true)]);
        assert_eq!(inner(&src), [1, 2, 3]);
        assert_eq!(unclosed(&src), None);
    }

    #[test]
    fn heredoc_dash_strips_tabs() {
        let src = "\tcat <<-EOF\n\t\t# x\n\t\tEOF\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2]);
        // Without `-`, an indented delimiter does not end the body.
        let src = "cat <<EOF\n\tEOF\nEOF\n";
        assert_eq!(inner(src), [1, 2]);
        assert_eq!(unclosed(src), None);
        // Spaces are not stripped.
        assert_eq!(unclosed("cat <<-EOF\n  EOF\n"), Some((4, "heredoc")));
    }

    #[test]
    fn heredoc_word_quoted_forms() {
        for op in [
            "<<'EOF'",
            "<<\"EOF\"",
            "<<\\EOF",
            "<<E\"O\"F",
            "<<E'OF'",
            "<< EOF",
            "<<-  'EOF'",
            "<<\"E\\\"\"OF",
            "<<EOF",
        ] {
            let delim = if op.contains("E\\\"") { "E\"OF" } else { "EOF" };
            let src = format!("cat {op} # c\n# x\n{delim}\n# r\n");
            assert_eq!(comments(&src), [("# c", false), ("# r", true)], "{op}");
            assert_eq!(inner(&src), [1, 2], "{op}");
        }
    }

    #[test]
    fn delimiter_line_crlf() {
        let src = "cat <<EOF\r\n# x\r\nEOF\r\n# r\r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2]);
        let src = "cat <<'EOF' | x\r\nEOF\r\n";
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn heredoc_body_several_on_one_line() {
        let src = "cat <<A <<'B' <<-\"C\"\n# a\nA\n# b\nB\n# c\n\tC\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2, 3, 4, 5, 6]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn heredoc_body_after_multiline_string() {
        let src = "cat <<EOF | grep \"x\ny\"\n# body\nEOF\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2, 3]);
    }

    #[test]
    fn heredoc_body_unclosed() {
        assert_eq!(unclosed("a\ncat <<EOF\nx\n"), Some((6, "heredoc")));
        assert_eq!(unclosed("cat <<EOF"), Some((4, "heredoc")));
        assert_eq!(unclosed("cat <<A <<B\nA\n"), Some((8, "heredoc")));
        assert_eq!(comments("cat <<EOF\n# x\n"), []);
    }

    #[test]
    fn delimiter_line_at_eof_without_newline() {
        let src = "cat <<EOF\nx\nEOF";
        assert_eq!(unclosed(src), None);
        assert_eq!(inner(src), [1, 2]);
    }

    #[test]
    fn heredoc_body_waits_for_a_newline_at_its_own_depth() {
        // bash reads the body after `echo b)`, not after the newline inside `$(`.
        let src = "cat <<EOF; echo $(echo a\necho b)\n# body\nEOF\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2, 3]);
        assert_eq!(unclosed(src), None);
        // Both levels: the inner body first, after the newline inside `$(`.
        let src = "cat <<A $(cat <<B\n# b\nB\n)\n# a\nA\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2, 3, 4, 5]);
        assert_eq!(unclosed(src), None);
        // A heredoc whose substitution closed before the newline is read at the next one.
        let src = "x=$(cat <<EOF)\n# b\nEOF\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(unclosed("cat <<A $(cat <<B\n"), Some((4, "heredoc")));
    }

    #[test]
    fn heredoc_body_inside_command_subst() {
        let src = "x=$(cat <<EOF\n# a )\nEOF\n)\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(inner(src), [1, 2, 3]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn body_line_unquoted_continuation_joins_lines() {
        // `a\` + `EOF` is the line `aEOF`: the body goes on.
        let src = "cat <<EOF\na\\\nEOF\nEOF\n# r\n";
        assert_eq!(inner(src), [1, 2, 3]);
        assert_eq!(alone(src), ["# r"]);
        // Quoted: no joining.
        let src = "cat <<'EOF'\na\\\nEOF\n# r\n";
        assert_eq!(inner(src), [1, 2]);
        assert_eq!(alone(src), ["# r"]);
    }

    #[test]
    fn heredoc_redirect_without_word() {
        let src = "cat <<\n# c\n";
        assert_eq!(alone(src), ["# c"]);
    }

    #[test]
    fn heredoc_word_empty() {
        let src = "cat <<''\n# x\n\n# r\n";
        assert_eq!(alone(src), ["# r"]);
    }

    // --- here_string -----------------------------------------------------------------------

    #[test]
    fn here_string_is_not_heredoc() {
        let src = "cat <<<EOF\n# r\n";
        assert_eq!(alone(src), ["# r"]);
        assert_eq!(unclosed(src), None);
    }

    // --- more productions, parsers tested directly ------------------------------------------

    #[test]
    fn line_assignment_then_comment() {
        let src = "A=1 # c\n";
        assert_eq!(keys(src), ["A"]);
        assert_eq!(comments(src), [("# c", false)]);
    }

    #[test]
    fn blank_tab_or_space_before_comment() {
        assert_eq!(comments("a\t#x\nb #y\n"), [("#x", false), ("#y", false)]);
    }

    #[test]
    fn blanks_parser_takes_spaces_and_tabs() {
        assert_eq!(blanks(b" \t x"), Ok((&b"x"[..], &b" \t "[..])));
        assert_eq!(blanks(b"x"), Ok((&b"x"[..], &b""[..])));
    }

    #[test]
    fn word_break_escaped_byte_or_closing_paren_glues() {
        for src in ["a\\;#x\n", "a\\ #x\n", "<(a)#x\n", "$((1))#x\n"] {
            assert_eq!(comments(src), [], "{src:?}");
        }
        assert_eq!(comments("a\\\\ #x\n"), [("#x", false)]);
    }

    #[test]
    fn assignment_production() {
        assert_eq!(assignment(b"_a1=x"), (4, Some((0, 3))));
        assert_eq!(assignment(b"1a=x"), (2, None));
        assert_eq!(assignment(b"=x"), (0, None));
        assert_eq!(assignment(b"\texport \tX=1"), (11, Some((9, 10))));
        assert_eq!(assignment(b"export X").1, None);
        assert_eq!(assignment(b"exportX=1"), (8, Some((0, 7))));
        assert_eq!(assignment(b"export=1"), (7, Some((0, 6))));
        assert_eq!(assignment(b"X+=1").1, None);
    }

    #[test]
    fn token_every_kind_on_one_line() {
        let src =
            "a 'q' \"d\" $'c' $\"l\" $(s) $((1)) ${p} `b` <(x) >y <<<z \\# ; (u) | v & # c\n# r\n";
        assert_eq!(comments(src), [("# c", false), ("# r", true)]);
        assert_eq!(unclosed(src), None);
        assert!(inner(src).is_empty());
    }

    #[test]
    fn word_byte_hash_inside_word() {
        assert_eq!(comments("echo a#b c# d # e\n"), [("# e", false)]);
    }

    #[test]
    fn dq_item_substitutions_nest() {
        let src = "x=\"$(a \"$(b ')')\") ${y:-\"}\"} $((1)) `c`\" # k\n";
        assert_eq!(comments(src), [("# k", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn dollar_construct_plain_dollar_forms() {
        let src = "echo $# $? $$ $1 $ x # c\necho $";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn dollar_parser_longest_first() {
        assert_eq!(dollar(b"$((1))").map(|r| r.1), Ok(Dollar::Arith));
        assert_eq!(dollar(b"$(a)").map(|r| r.1), Ok(Dollar::Command));
        assert_eq!(dollar(b"${a}").map(|r| r.1), Ok(Dollar::Param));
        assert_eq!(dollar(b"$'a'").map(|r| r.1), Ok(Dollar::AnsiC));
        assert_eq!(dollar(b"$\"a\"").map(|r| r.1), Ok(Dollar::Locale));
        assert_eq!(dollar(b"$a").map(|r| r.1), Ok(Dollar::Plain));
        assert!(dollar(b"a").is_err());
    }

    #[test]
    fn commands_inside_substitution_are_fully_lexed() {
        let src = "x=$(\n  a 'b)' \"c)\" # d)\n  cat <<E\n)\nE\n)\n# r\n";
        assert_eq!(comments(src), [("# d)", false), ("# r", true)]);
        assert_eq!(inner(src), [1, 2, 3, 4, 5]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn subshell_in_command_subst_counts_parens() {
        let src = "x=$( (a) ( (b) ) ) # c\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(unclosed(src), None);
        assert_eq!(unclosed("x=$( (a\n"), Some((2, "command substitution")));
    }

    #[test]
    fn case_item_separators() {
        let src = "x=$(case a in a) :;& b) :;;& c) :;; esac) # k\n";
        assert_eq!(comments(src), [("# k", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn pattern_extglob_parens() {
        let src = "x=$(case a in @(a|b)) :;; !(c)|d) :;; esac) # k\n";
        assert_eq!(comments(src), [("# k", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn blanks_or_newlines_comment_between_items() {
        let src = "x=$(case a in\n  # one)\n  a) :;;\n  # two\n  (b) :;;\nesac)\n# r\n";
        assert_eq!(
            comments(src),
            [("# one)", false), ("# two", false), ("# r", true)]
        );
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn separator_parser() {
        assert_eq!(separator(b";;& x"), Ok((&b" x"[..], true)));
        assert_eq!(separator(b";; x"), Ok((&b" x"[..], true)));
        assert_eq!(separator(b";& x"), Ok((&b" x"[..], true)));
        assert_eq!(separator(b"; x"), Ok((&b" x"[..], false)));
        assert!(separator(b"x").is_err());
    }

    #[test]
    fn keyword_parser() {
        assert_eq!(keyword(b"esac)"), Ok((&b")"[..], &b"esac"[..])));
        assert_eq!(keyword(b"in\r\n"), Ok((&b"\r\n"[..], &b"in"[..])));
        assert_eq!(keyword(b"case"), Ok((&b""[..], &b"case"[..])));
        assert!(keyword(b"cases").is_ok());
        assert!(keyword(b"case2").is_err());
        assert!(keyword(b"Case").is_err());
    }

    #[test]
    fn arith_quotes_and_substitutions() {
        let src = "echo $(( $(echo 1) + ${x#y} + \"2\" + ( `echo 3` ) )) # k\n";
        assert_eq!(comments(src), [("# k", false)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn redirect_parser() {
        assert_eq!(redirect(b"<<<x").map(|r| r.1), Ok(Redirect::HereString));
        assert_eq!(
            redirect(b"<<- 'A B'").map(|r| r.1),
            Ok(Redirect::Heredoc {
                dash: true,
                word: Some((Cow::from(&b"A B"[..]), true))
            })
        );
        assert_eq!(
            redirect(b"<<\n").map(|r| r.1),
            Ok(Redirect::Heredoc {
                dash: false,
                word: None
            })
        );
        assert_eq!(redirect(b"<(a)").map(|r| r.1), Ok(Redirect::ProcessSubst));
        assert_eq!(redirect(b">(a)").map(|r| r.1), Ok(Redirect::ProcessSubst));
        assert_eq!(redirect(b">&2").map(|r| r.1), Ok(Redirect::Operator));
    }

    #[test]
    fn redirect_plain_operators() {
        let src = "a >x 2>&1 <y >>z <>w >|v # c\n# r\n";
        assert_eq!(comments(src), [("# c", false), ("# r", true)]);
        assert!(inner(src).is_empty());
    }

    #[test]
    fn heredoc_part_parser() {
        assert!(matches!(
            heredoc_part(b"'a b'c"),
            Ok((b"c", Part::Quoted(b"a b")))
        ));
        assert!(matches!(
            heredoc_part(b"\"a\\\"\"c"),
            Ok((b"c", Part::DoubleQuoted(b"a\\\"")))
        ));
        assert!(matches!(
            heredoc_part(b"\\Ec"),
            Ok((b"c", Part::Quoted(b"E")))
        ));
        assert!(matches!(
            heredoc_part(b"EOF;"),
            Ok((b";", Part::Plain(b"EOF")))
        ));
        assert!(heredoc_part(b"'a\nb'").is_err());
        assert!(heredoc_part(b"\\\n").is_err());
        assert_eq!(
            heredoc_word(b"E\"\\\"\"'O'\\F x"),
            Ok((&b" x"[..], (Cow::from(&b"E\"OF"[..]), true)))
        );
        assert_eq!(
            heredoc_word(b"EOF)"),
            Ok((&b")"[..], (Cow::from(&b"EOF"[..]), false)))
        );
    }

    #[test]
    fn heredoc_plain_stops_at_metachar() {
        let src = "cat <<EOF;echo x # c\nbody\nEOF\n";
        assert_eq!(comments(src), [("# c", false)]);
        assert_eq!(inner(src), [1, 2]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn body_line_quotes_and_substitutions_do_not_matter() {
        let src = "cat <<EOF\n'\"$(`${\n# x\nEOF\n# r\n";
        assert_eq!(comments(src), [("# r", true)]);
        assert_eq!(unclosed(src), None);
    }

    #[test]
    fn delimiter_must_match_whole_line() {
        let src = "cat <<EOF\nEOFX\n EOF\nEOF \nEOF\n# r\n";
        assert_eq!(inner(src), [1, 2, 3, 4]);
        assert_eq!(alone(src), ["# r"]);
    }

    #[test]
    fn eof_reports_the_outermost_open_construct() {
        assert_eq!(unclosed("x=\"$(echo '"), Some((2, "double-quoted string")));
        assert_eq!(unclosed("cat <<EOF $(\n"), Some((4, "heredoc")));
        assert_eq!(unclosed("echo 'a\n"), Some((5, "single-quoted string")));
        assert_eq!(unclosed("((1 +\n"), Some((0, "arithmetic command")));
    }

    #[test]
    fn file_adversarial_inputs_stay_linear() {
        // Each of these would take minutes if any part of the lexer rescanned its input.
        let n = 100_000;
        let patterns = [
            "$(", "$((", "${", "((", "(", ")", "<<'", "<<\"", "<<A ", "<<", "`", "\\", "'", "\"",
            "$'", "#", "\n", " ", "\t", "a ", "case ", "esac ", "in ", ";;", "x)", "<(", "\\\n",
        ];
        for p in patterns {
            for wrap in ["", "$(", "x=$(case a in ", "\"", "cat <<E\n"] {
                let src = format!("{wrap}{}", p.repeat(n / p.len().max(1)));
                let l = lex(src.as_bytes());
                check(src.as_bytes(), &l);
            }
        }
        let src = format!("{}((\n", " ".repeat(n));
        check(src.as_bytes(), &lex(src.as_bytes()));
        let src = format!("cat {}\n{}", "<<A ".repeat(n / 4), "A\n".repeat(n / 4));
        let l = lex(src.as_bytes());
        check(src.as_bytes(), &l);
        assert_eq!(l.unclosed, None);
    }

    // --- proptests -------------------------------------------------------------------------

    const FRAGMENTS: &[&str] = &[
        "#",
        "# BEGIN ACME MANAGED a",
        "\n",
        "\r\n",
        " ",
        "\t",
        "'",
        "\"",
        "`",
        "\\",
        "$",
        "$(",
        "$((",
        "${",
        "$'",
        "$\"",
        "(",
        ")",
        "((",
        "))",
        "{",
        "}",
        "<<",
        "<<-",
        "<<<",
        "EOF",
        "'EOF'",
        "\"EOF\"",
        "\\EOF",
        "\tEOF",
        "case",
        "in",
        "esac",
        ";;",
        ";",
        "|",
        "&",
        "<(",
        ">(",
        "export",
        "A=",
        "x",
        "=",
        "for",
        "then",
        "\u{feff}",
        "\u{ff}",
        "#x",
        "\\\n",
        "\\\r\n",
        "\r",
        "@(",
        "`#",
        "'#'",
        "EOF\n",
        "\tEOF\n",
        "EOF\r\n",
        "${x#",
        "$((1<<2))",
        "))",
    ];

    /// Pieces of lines that matter to `assignment`.
    const ASSIGNMENT_PARTS: &[&str] = &[
        "export", "exportx", "xport", " ", "\t", "=", "+=", "_", "a", "Z9", "9", "#", "\n", "-",
    ];

    fn shellish() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn lex_never_panics_on_bytes(src in prop::collection::vec(any::<u8>(), 0..400)) {
            let l = lex(&src);
            check(&src, &l);
        }

        #[test]
        fn assignment_reads_no_token(
            parts in prop::collection::vec(prop::sample::select(ASSIGNMENT_PARTS), 0..8)
        ) {
            let src = parts.concat().into_bytes();
            let (read, name) = assignment(&src);
            // What it skips can hold no token, and a name it finds is a name before `=`.
            prop_assert!(src[..read].iter().all(|&b| !TOP.contains(b) || b == b'='));
            if let Some((a, b)) = name {
                prop_assert!(is_name_start(src[a]));
                prop_assert!(src[a..b].iter().all(|&c| is_name_char(c)));
                prop_assert_eq!(src.get(b), Some(&b'='));
                prop_assert_eq!(read, b + 1);
            }
        }

        #[test]
        fn lex_never_panics_on_shellish(src in shellish()) {
            let l = lex(src.as_bytes());
            check(src.as_bytes(), &l);
            // Alone comments never sit on inner lines.
            for c in l.comments.iter().filter(|c| c.alone) {
                let line = src.as_bytes()[..c.text.start]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                prop_assert!(!l.is_inner(line));
            }
        }
    }
}
