//! `repair`: fixes damaged markers only where the fix is certain, and never changes a user
//! byte outside marker lines. Pure: bytes in, bytes out.
//!
//! Fixes, tried one at a time (the file is parsed again after each):
//! 1. a near-miss marker (`BEGN`, `MANGED`, a missing space) whose correction makes a broken
//!    pair whole: the line is rewritten in canonical form;
//! 2. an END whose identity differs from its open BEGIN only in case: the END is rewritten to
//!    the BEGIN's identity;
//! 3. an unclosed BEGIN with `hash=`: the END line is restored after the shortest run of
//!    following lines whose normalized hash matches;
//! 4. an orphan END right after lines equal to a template region's body: the BEGIN line is
//!    restored before them;
//! 5. two identical copies of a pristine region: the later copy is removed (the only deletion,
//!    and only of bytes the tool wrote and that are provably unchanged).
//!
//! When damage remains that none of these fixes, nothing is changed at all: the caller gets
//! the list of what could be fixed and what could not, with the manual fix.

use crate::document::{Desired, Document, Foreign};
use crate::format::Syntax;
use crate::hash;
use crate::lex::{Lexer, Span};
use crate::lines::{line_end, line_start};
use crate::marker::{Identity, Kind, Marker};
use crate::problem::{Problem, ProblemKind};

/// One fix made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    /// The problem fixed.
    pub kind: ProblemKind,
    /// Its line in the file as it was read.
    pub line: usize,
    /// What was done, for a person.
    pub what: String,
}

/// The outcome of a repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repaired {
    /// The repaired bytes (equal to the input when nothing could be or had to be fixed).
    pub new: Vec<u8>,
    /// The fixes made, in order.
    pub fixes: Vec<Fix>,
    /// Damage no certain fix exists for; when non-empty, `new` is the input unchanged.
    pub unfixed: Vec<Problem>,
}

/// The most fixes one run makes; what is left is fixed by the next run.
const MAX_FIXES: usize = 256;

/// Repairs `src`. `template` holds the regions of `--template`, if given.
#[must_use]
pub fn repair(
    src: &[u8],
    syntax: &dyn Syntax,
    template: &[Desired],
    foreign: Option<&Foreign>,
) -> Repaired {
    let mut cur = src.to_vec();
    let mut fixes = Vec::new();
    // Line numbers are reported as read: track how many lines each fix added before a line.
    let mut shifts: Vec<(usize, isize)> = Vec::new();
    for _ in 0..MAX_FIXES {
        let doc = Document::parse_with(&cur, syntax, foreign);
        let Some((next, mut fix, shift)) = next_fix(&doc, syntax, template, foreign) else {
            break;
        };
        fix.line = original_line(fix.line, &shifts);
        if let Some(s) = shift {
            shifts.push(s);
        }
        fixes.push(fix);
        cur = next;
    }
    if fixes.len() == MAX_FIXES {
        // One run makes at most this many fixes (each parses the file again); every one of
        // them is certain, so they are kept, and what damage is left shows in the report for
        // the next run to fix. Rolling them back would leave a file with more damage than
        // one run can fix unrepairable for ever.
        return Repaired {
            new: cur,
            fixes,
            unfixed: Vec::new(),
        };
    }
    let doc = Document::parse_with(&cur, syntax, foreign);
    let unfixed: Vec<Problem> = doc
        .problems
        .iter()
        .filter(|p| p.kind.blocks())
        .cloned()
        .collect();
    if !unfixed.is_empty() {
        let before = Document::parse_with(src, syntax, foreign);
        return Repaired {
            new: src.to_vec(),
            fixes,
            unfixed: before
                .problems
                .into_iter()
                .filter(|p| p.kind.blocks())
                .map(|mut p| {
                    let why = format!(" (not repaired: {})", why_not(p.kind));
                    match &mut p.help {
                        Some(h) => h.push_str(&why),
                        None => p.message.push_str(&why),
                    }
                    p
                })
                .collect(),
        };
    }
    Repaired {
        new: cur,
        fixes,
        unfixed: Vec::new(),
    }
}

fn why_not(kind: ProblemKind) -> &'static str {
    match kind {
        ProblemKind::UnclosedBegin => {
            "no hash= on the BEGIN line, or no run of following lines matches it, so where the \
             region ends is not certain"
        }
        ProblemKind::OrphanEnd => {
            "where the region starts is not certain (a template that holds the region lets \
             repair find its body)"
        }
        ProblemKind::DuplicateRegion => {
            "the copies differ, one was edited, or they sit in different tables, objects, \
             mappings or sections, so neither can be deleted safely"
        }
        ProblemKind::InterleavedRegions | ProblemKind::NestedRegion => {
            "which lines belong to which region is a choice only a person can make"
        }
        ProblemKind::MismatchedEnd => "the END names another region, not just another case",
        _ => "no certain fix",
    }
}

/// Maps a line number in the current text back to the text as read.
fn original_line(line: usize, shifts: &[(usize, isize)]) -> usize {
    let mut l = line as isize;
    for &(at, delta) in shifts.iter().rev() {
        if l > at as isize {
            l -= delta;
        }
    }
    usize::try_from(l).unwrap_or(1)
}

type Next = (Vec<u8>, Fix, Option<(usize, isize)>);

fn splice(src: &[u8], span: Span, text: &[u8]) -> Vec<u8> {
    [&src[..span.start], text, &src[span.end..]].concat()
}

fn blocking(doc: &Document<'_>) -> usize {
    doc.problems.iter().filter(|p| p.kind.blocks()).count()
}

fn line_text_end(src: &[u8], line: Span) -> usize {
    let l = line.of(src);
    line.end
        - if l.ends_with(b"\r\n") {
            2
        } else {
            usize::from(l.ends_with(b"\n"))
        }
}

/// Rewrites a marker line's text, keeping its indentation and line ending.
fn rewrite_line(src: &[u8], line: Span, new_text: &str) -> Vec<u8> {
    let l = line.of(src);
    let indent = l.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    let body = Span::new(line.start + indent, line_text_end(src, line));
    splice(src, body, new_text.as_bytes())
}

fn next_fix(
    doc: &Document<'_>,
    syntax: &dyn Syntax,
    template: &[Desired],
    foreign: Option<&Foreign>,
) -> Option<Next> {
    let src = doc.src;
    let damage = blocking(doc);
    if damage == 0 {
        return None;
    }
    // 1. Near misses whose correction reduces the damage.
    for (line, nm) in &doc.near_misses {
        let new = rewrite_line(src, *line, &syntax.render_marker(&nm.fixed));
        let after = Document::parse_with(&new, syntax, foreign);
        if blocking(&after) < damage {
            let fix = Fix {
                kind: ProblemKind::NearMissMarker,
                line: crate::lines::line_of(src, line.start),
                what: format!(
                    "rewrote the marker ({}): `{}`",
                    nm.what,
                    syntax.render_marker(&nm.fixed)
                ),
            };
            return Some((new, fix, None));
        }
    }
    for p in doc.problems.iter().filter(|p| p.kind.blocks()) {
        let fixed = match p.kind {
            ProblemKind::MismatchedEnd => case_only_end(doc, syntax, foreign, p),
            ProblemKind::UnclosedBegin => close_by_hash(doc, syntax, foreign, p),
            ProblemKind::OrphanEnd => open_from_template(doc, syntax, foreign, p, template),
            ProblemKind::DuplicateRegion => drop_duplicate(doc, syntax, p),
            _ => None,
        };
        if let Some(f) = fixed {
            return Some(f);
        }
    }
    None
}

/// The marker line at a 1-based line number among `lines` (the document's
/// [`Document::marker_lines`]), parsed.
fn marker_at(
    doc: &Document<'_>,
    lines: &[Span],
    foreign: Option<&Foreign>,
    line: usize,
) -> Option<(Span, Marker)> {
    let src = doc.src;
    lines.iter().find_map(|span| {
        if crate::lines::line_of(src, span.start) != line {
            return None;
        }
        let text = &src[span.start..line_text_end(src, *span)];
        let trimmed = {
            let s = text
                .iter()
                .position(|b| *b != b' ' && *b != b'\t')
                .unwrap_or(text.len());
            &text[s..]
        };
        let m = foreign
            .and_then(|f| f.marker(trimmed))
            .or_else(|| crate::marker::parse(trimmed))?;
        Some((*span, m))
    })
}

fn case_only_end(
    doc: &Document<'_>,
    syntax: &dyn Lexer,
    foreign: Option<&Foreign>,
    p: &Problem,
) -> Option<Next> {
    let src = doc.src;
    let lines = doc.marker_lines();
    let (end_span, end) = marker_at(doc, &lines, foreign, p.line)?;
    // The open BEGIN is the nearest BEGIN above whose identity matches ignoring case.
    let begin = lines
        .iter()
        .filter(|s| s.start < end_span.start)
        .rev()
        .find_map(|s| {
            let (_, m) = marker_at(doc, &lines, foreign, crate::lines::line_of(src, s.start))?;
            (m.kind == Kind::Begin && m.identity().eq_ignore_case(&end.identity())).then_some(m)
        })?;
    let mut fixed = end.clone();
    fixed.owner = begin.owner.clone();
    fixed.name = begin.name.clone();
    let text = syntax.render_marker(&fixed);
    let new = rewrite_line(src, end_span, &text);
    if blocking(&Document::parse_with(&new, syntax, foreign)) >= blocking(doc) {
        return None;
    }
    Some((
        new,
        Fix {
            kind: ProblemKind::MismatchedEnd,
            line: p.line,
            what: format!("rewrote the END line to match its BEGIN: `{text}`"),
        },
        None,
    ))
}

fn close_by_hash(
    doc: &Document<'_>,
    syntax: &dyn Lexer,
    foreign: Option<&Foreign>,
    p: &Problem,
) -> Option<Next> {
    let src = doc.src;
    let lines = doc.marker_lines();
    let (begin_span, begin) = marker_at(doc, &lines, foreign, p.line)?;
    let recorded = begin.hash()?.to_owned();
    // Candidate body ends: each following line end, up to the next marker line.
    let limit = lines
        .iter()
        .map(|s| s.start)
        .find(|s| *s > begin_span.start)
        .unwrap_or(src.len());
    let start = begin_span.end;
    let mut end = start;
    loop {
        if hash::matches(&recorded, &syntax.normalize(&src[start..end])) {
            break;
        }
        if end >= limit {
            return None;
        }
        end = line_end(src, end);
        if end > limit {
            return None;
        }
    }
    let mut text = Vec::new();
    if end > 0 && src[end - 1] != b'\n' {
        text.extend_from_slice(doc.eol.as_bytes());
    }
    let indent: Vec<u8> = begin_span
        .of(src)
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .copied()
        .collect();
    text.extend_from_slice(&indent);
    let end_marker = syntax.render_marker(&Marker::end(&begin.identity()));
    text.extend_from_slice(end_marker.as_bytes());
    text.extend_from_slice(doc.eol.as_bytes());
    let new = splice(src, Span::new(end, end), &text);
    if blocking(&Document::parse_with(&new, syntax, foreign)) >= blocking(doc) {
        return None;
    }
    let after_line = crate::lines::line_of(src, end.saturating_sub(1));
    Some((
        new,
        Fix {
            kind: ProblemKind::UnclosedBegin,
            line: p.line,
            what: format!(
                "restored `{end_marker}` after line {after_line}, where the body matches the hash"
            ),
        },
        Some((after_line, 1)),
    ))
}

fn open_from_template(
    doc: &Document<'_>,
    syntax: &dyn Lexer,
    foreign: Option<&Foreign>,
    p: &Problem,
    template: &[Desired],
) -> Option<Next> {
    let src = doc.src;
    let lines = doc.marker_lines();
    let (end_span, end) = marker_at(doc, &lines, foreign, p.line)?;
    let id: Identity = end.identity();
    let t = template.iter().find(|d| d.id == id)?;
    let want = syntax.normalize(&t.body);
    let want = if want.ends_with(b"\n") || want.is_empty() {
        want
    } else {
        [want, b"\n".to_vec()].concat()
    };
    // The body must be the lines right before the END, and not reach into another marker.
    if want.len() > end_span.start {
        return None;
    }
    let prev_marker_end = lines
        .iter()
        .map(|s| s.end)
        .filter(|e| *e <= end_span.start)
        .max()
        .unwrap_or(0);
    // Find the start offset whose normalized text up to the END equals the body.
    let mut start = end_span.start;
    loop {
        if syntax.normalize(&src[start..end_span.start]) == want {
            break;
        }
        if start <= prev_marker_end {
            return None;
        }
        start = line_start(src, start - 1);
        if start < prev_marker_end {
            return None;
        }
    }
    let normalized = syntax.normalize(&src[start..end_span.start]);
    let begin = Marker::begin(&id, Some(&hash::of_normalized(&normalized)));
    let text = syntax.render_marker(&begin);
    let indent: Vec<u8> = end_span
        .of(src)
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .copied()
        .collect();
    let line = [indent.as_slice(), text.as_bytes(), doc.eol.as_bytes()].concat();
    let new = splice(src, Span::new(start, start), &line);
    if blocking(&Document::parse_with(&new, syntax, foreign)) >= blocking(doc) {
        return None;
    }
    let at = crate::lines::line_of(src, start);
    Some((
        new,
        Fix {
            kind: ProblemKind::OrphanEnd,
            line: p.line,
            what: format!("restored `{text}` before line {at}, where the template's body starts"),
        },
        Some((at.saturating_sub(1), 1)),
    ))
}

fn drop_duplicate(doc: &Document<'_>, syntax: &dyn Syntax, p: &Problem) -> Option<Next> {
    let src = doc.src;
    let later = doc.regions.iter().find(|r| r.begin.line_no() == p.line)?;
    let id = later.id(src);
    let first = doc.region(&id)?;
    // Copies in two tables, objects, mappings or sections each mean something there.
    if !syntax.same_container(doc, first, later) {
        return None;
    }
    let pristine = |r: &crate::document::Region| r.state() == crate::document::State::Pristine;
    if !(pristine(first) && pristine(later)) || first.body().of(src) != later.body().of(src) {
        return None;
    }
    let new = splice(src, later.span(), b"");
    let n = later.end.line_no() - later.begin.line_no() + 1;
    Some((
        new,
        Fix {
            kind: ProblemKind::DuplicateRegion,
            line: p.line,
            what: format!(
                "removed the second copy of \"{}\" (lines {}-{}), identical to the first and unedited",
                id,
                later.begin.line_no(),
                later.end.line_no()
            ),
        },
        Some((
            later.begin.line_no().saturating_sub(1),
            -isize::try_from(n).unwrap_or(0),
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;

    fn rep(src: &str) -> Repaired {
        repair(src.as_bytes(), Format::Shell.syntax(), &[], None)
    }

    fn h(body: &str) -> String {
        hash::of_normalized(body.as_bytes())
    }

    /// More copies of a region than one run fixes: each run keeps its certain fixes, so two
    /// runs leave one copy (the whole run used to be rolled back, for ever).
    #[test]
    fn more_damage_than_one_run_fixes_is_fixed_over_runs() {
        let region = format!(
            "# BEGIN Z MANAGED d hash={}\necho hi\n# END Z MANAGED d\n",
            h("echo hi\n")
        );
        let src = format!("a=1\n{}b=2\n", region.repeat(300));
        let first = rep(&src);
        assert!(first.unfixed.is_empty(), "{:?}", first.unfixed);
        assert_eq!(first.fixes.len(), MAX_FIXES);
        let second = repair(&first.new, Format::Shell.syntax(), &[], None);
        assert!(second.unfixed.is_empty(), "{:?}", second.unfixed);
        assert_eq!(second.fixes.len(), 300 - 1 - MAX_FIXES);
        assert_eq!(
            String::from_utf8_lossy(&second.new),
            format!("a=1\n{region}b=2\n")
        );
    }

    #[test]
    fn unclosed_begin_is_closed_where_the_hash_matches() {
        let src = format!(
            "a=1\n# BEGIN Z MANAGED x hash={}\nexport X=1\nexport Y=2\nuser=1\n",
            h("export X=1\nexport Y=2\n")
        );
        let r = rep(&src);
        assert!(r.unfixed.is_empty(), "{:?}", r.unfixed);
        let text = String::from_utf8_lossy(&r.new);
        assert!(
            text.contains("export Y=2\n# END Z MANAGED x\nuser=1\n"),
            "{text}"
        );
        assert_eq!(r.fixes[0].kind, ProblemKind::UnclosedBegin);
    }

    #[test]
    fn unclosed_begin_without_hash_is_refused_and_nothing_changes() {
        let src = "a=1\n# BEGIN Z MANAGED x\nexport X=1\n";
        let r = rep(src);
        assert_eq!(r.new, src.as_bytes());
        assert_eq!(r.unfixed[0].kind, ProblemKind::UnclosedBegin);
        assert!(r.unfixed[0].full_message().contains("not repaired"));
    }

    #[test]
    fn near_miss_keyword_is_rewritten() {
        let src = "# BEGN Z MANAGED x\nx=1\n# END Z MANAGED x\n";
        let r = rep(src);
        assert!(r.unfixed.is_empty(), "{:?}", r.unfixed);
        assert_eq!(
            String::from_utf8_lossy(&r.new),
            "# BEGIN Z MANAGED x\nx=1\n# END Z MANAGED x\n"
        );
    }

    #[test]
    fn case_only_end_is_rewritten_to_the_begin() {
        let src = "# BEGIN Zylos MANAGED x\nx=1\n# END ZYLOS managed X\n";
        let r = rep(src);
        assert!(r.unfixed.is_empty(), "{:?}", r.unfixed);
        assert_eq!(
            String::from_utf8_lossy(&r.new),
            "# BEGIN Zylos MANAGED x\nx=1\n# END Zylos MANAGED x\n"
        );
    }

    #[test]
    fn identical_pristine_duplicate_is_removed_edited_one_is_not() {
        let hh = h("x=1\n");
        let src = format!(
            "u=1\n# BEGIN Z MANAGED x hash={hh}\nx=1\n# END Z MANAGED x\nu=2\n# BEGIN Z MANAGED x hash={hh}\nx=1\n# END Z MANAGED x\nu=3\n"
        );
        let r = rep(&src);
        assert!(r.unfixed.is_empty(), "{:?}", r.unfixed);
        assert_eq!(
            String::from_utf8_lossy(&r.new),
            format!("u=1\n# BEGIN Z MANAGED x hash={hh}\nx=1\n# END Z MANAGED x\nu=2\nu=3\n")
        );
        let edited = src.replacen(
            "x=1\n# END Z MANAGED x\nu=3",
            "x=2\n# END Z MANAGED x\nu=3",
            1,
        );
        let r = rep(&edited);
        assert_eq!(r.new, edited.as_bytes());
        assert_eq!(r.unfixed[0].kind, ProblemKind::DuplicateRegion);
    }

    #[test]
    fn orphan_end_is_opened_from_the_template() {
        let src = "u=1\nexport X=1\n# END Z MANAGED x\nu=2\n";
        let t = [Desired {
            id: Identity::new("Z", "x"),
            body: b"export X=1\n".to_vec(),
        }];
        let r = repair(src.as_bytes(), Format::Shell.syntax(), &t, None);
        assert!(r.unfixed.is_empty(), "{:?}", r.unfixed);
        assert_eq!(
            String::from_utf8_lossy(&r.new),
            format!(
                "u=1\n# BEGIN Z MANAGED x hash={}\nexport X=1\n# END Z MANAGED x\nu=2\n",
                h("export X=1\n")
            )
        );
        // Without the template: refused.
        assert_eq!(rep(src).unfixed[0].kind, ProblemKind::OrphanEnd);
    }

    #[test]
    fn interleaved_regions_are_refused() {
        let src =
            "# BEGIN Z MANAGED a\n# BEGIN Z MANAGED b\n# END Z MANAGED a\n# END Z MANAGED b\n";
        let r = rep(src);
        assert_eq!(r.new, src.as_bytes());
        assert!(!r.unfixed.is_empty());
    }

    #[test]
    fn clean_file_needs_nothing() {
        let r = rep("a=1\n");
        assert!(r.fixes.is_empty() && r.unfixed.is_empty());
        assert_eq!(r.new, b"a=1\n");
    }
}
