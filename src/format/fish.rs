//! The fish lexer: `*.fish`, `config.fish`, fish shebangs.
//!
//! fish quotes differently from POSIX shells and has no heredocs:
//! - `'…'` knows only the escapes `\'` and `\\`;
//! - `"…"` knows backslash escapes, `$var` and `$(…)` command substitutions (fish 3.4);
//! - `(…)` anywhere (also inside a word) and `$(…)` are command substitutions, nested to any
//!   depth, lexed like the top level (quotes, comments);
//! - a backslash escapes the next byte outside quotes; before a line break it continues the
//!   line;
//! - `#` starts a comment at the start of a word: after a line break, a blank, `;`, `|`, `&`,
//!   `<`, `>`, `(` or `)`.
//!
//! A marker is a comment alone on a line that starts at the top level (not inside a quote, a
//! command substitution or a continuation); inside `function`, `if` and `begin` blocks is
//! fine. Lines that start inside a construct are [`Lexed::inner_lines`]; a construct open at
//! the end of the input is [`Lexed::unclosed`]. fish assigns variables with `set`, whose
//! flags make keys ambiguous: no keys are reported. The grammar is `grammars/fish.ebnf`; the
//! tests at the end are named after its productions.

use memchr::{memchr, memchr3};

use crate::lex::{Comment, Keep, Lexed, Span, Unclosed};

use super::{KeyPolicy, Lexer as FormatLexer, Syntax};

/// The fish format.
pub(crate) struct Fish;

impl FormatLexer for Fish {
    fn name(&self) -> &'static str {
        "fish"
    }
    fn lex(&self, src: &[u8]) -> Lexed {
        lex(src)
    }
    fn scan_keeping(&self, src: &[u8], keep: Keep) -> (Lexed, Option<crate::lex::Scan>) {
        (lex_keeping(src, keep), None)
    }
    fn key_policy(&self) -> KeyPolicy {
        KeyPolicy::AcrossOwners
    }
}

impl Syntax for Fish {}

/// An open construct that nests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    /// `(` or `$(`: a command substitution.
    Subst,
    /// `"`: a double-quoted string.
    Double,
}

struct Lexer<'a> {
    src: &'a [u8],
    out: Lexed,
    /// Open constructs, innermost last, one byte each: a crafted line of ten million `(`
    /// costs ten megabytes. Only the outermost one's start is kept (a file left open is
    /// reported there).
    stack: Vec<Frame>,
    /// Where the outermost open construct starts.
    first_start: usize,
    keep: Keep,
}

/// Lexes a fish script.
#[must_use]
pub(crate) fn lex(src: &[u8]) -> Lexed {
    lex_keeping(src, Keep::All)
}

/// Lexes a fish script, recording the comments `keep` asks for.
#[must_use]
pub(crate) fn lex_keeping(src: &[u8], keep: Keep) -> Lexed {
    let mut lx = Lexer {
        src,
        out: Lexed::default(),
        stack: Vec::new(),
        first_start: 0,
        keep,
    };
    lx.run();
    lx.out
}

impl Lexer<'_> {
    fn run(&mut self) {
        let src = self.src;
        let mut i = if src.starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        let mut line_start = i;
        let mut word_start = true;
        while i < src.len() {
            let c = src[i];
            if self.stack.last().copied() == Some(Frame::Double) {
                match c {
                    b'"' => {
                        self.stack.pop();
                        i += 1;
                    }
                    b'\\' => {
                        if src.get(i + 1) == Some(&b'\n') {
                            self.inner(i + 2);
                        }
                        i += 2;
                    }
                    b'$' if src.get(i + 1) == Some(&b'(') => {
                        self.open_frame(Frame::Subst, i);
                        word_start = true;
                        i += 2;
                    }
                    b'\n' => {
                        self.inner(i + 1);
                        i += 1;
                    }
                    _ => {
                        // Skip to the next byte that matters.
                        i = memchr3(b'"', b'\\', b'$', &src[i..])
                            .map_or(src.len(), |n| i + n)
                            .min(memchr(b'\n', &src[i..]).map_or(src.len(), |n| i + n))
                            .max(i + 1);
                    }
                }
                continue;
            }
            match c {
                b'\n' => {
                    i += 1;
                    line_start = i;
                    word_start = true;
                    if !self.stack.is_empty() {
                        self.inner(i);
                    }
                }
                b' ' | b'\t' | b'\r' | b';' | b'|' | b'&' | b'<' | b'>' => {
                    word_start = true;
                    i += 1;
                }
                b'#' if word_start => {
                    let end = memchr(b'\n', &src[i..]).map_or(src.len(), |n| i + n);
                    let text_end = if end > i && src[end - 1] == b'\r' {
                        end - 1
                    } else {
                        end
                    };
                    let blank_before = src[line_start..i].iter().all(|b| *b == b' ' || *b == b'\t');
                    let alone =
                        self.stack.is_empty() && blank_before && !self.out.is_inner(line_start);
                    if self.keep.keeps(&src[i..text_end]) {
                        self.out.comments.push(Comment {
                            text: Span::new(i, text_end),
                            alone,
                            context: 0,
                        });
                    }
                    i = end;
                }
                b'\'' => {
                    i = self.single(i);
                    word_start = false;
                }
                b'"' => {
                    self.open_frame(Frame::Double, i);
                    word_start = false;
                    i += 1;
                }
                b'(' => {
                    self.open_frame(Frame::Subst, i);
                    word_start = true;
                    i += 1;
                }
                b'$' if src.get(i + 1) == Some(&b'(') => {
                    self.open_frame(Frame::Subst, i);
                    word_start = true;
                    i += 2;
                }
                b')' => {
                    if self.stack.last().copied() == Some(Frame::Subst) {
                        self.stack.pop();
                    }
                    word_start = true;
                    i += 1;
                }
                b'\\' => {
                    let next = src.get(i + 1);
                    if next == Some(&b'\n') {
                        self.inner(i + 2);
                        if i + 2 >= src.len() {
                            self.open(i, "line continuation");
                        }
                    } else if next == Some(&b'\r') && src.get(i + 2) == Some(&b'\n') {
                        self.inner(i + 3);
                    }
                    word_start = false;
                    i += if next == Some(&b'\r') { 3 } else { 2 };
                }
                _ => {
                    word_start = false;
                    i += 1;
                }
            }
        }
        if let Some(&frame) = self.stack.first() {
            let at = self.first_start;
            let what = match frame {
                Frame::Subst => "command substitution",
                Frame::Double => "double-quoted string",
            };
            self.open(at, what);
        }
    }

    /// Opens `frame` at `at`.
    fn open_frame(&mut self, frame: Frame, at: usize) {
        if self.stack.is_empty() {
            self.first_start = at;
        }
        self.stack.push(frame);
    }

    /// A single-quoted string opening at `at`; returns the index after it.
    fn single(&mut self, at: usize) -> usize {
        let src = self.src;
        let mut i = at + 1;
        while i < src.len() {
            match src[i] {
                b'\'' => return i + 1,
                b'\\' if matches!(src.get(i + 1), Some(b'\'' | b'\\')) => i += 2,
                b'\n' => {
                    self.inner(i + 1);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        self.open(at, "single-quoted string");
        src.len()
    }

    fn open(&mut self, at: usize, what: &'static str) {
        if self.out.unclosed.is_none() {
            self.out.unclosed = Some(Unclosed { start: at, what });
        }
    }

    /// Marks the line starting at `start` as inner.
    fn inner(&mut self, start: usize) {
        if start >= self.src.len() {
            return;
        }
        let end = memchr(b'\n', &self.src[start..]).map_or(self.src.len(), |n| start + n + 1);
        self.out.inner_lines.add(Span::new(start, end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Document;
    use proptest::prelude::*;

    /// Lexes `src`, checks the invariants, returns (comment text, alone) pairs.
    fn comments(src: &str) -> Vec<(String, bool)> {
        crate::lex::hash_comments(src, lex)
    }

    fn check(src: &[u8], out: &Lexed) {
        crate::lex::assert_lexed(src, out, &[b"#"]);
    }

    /// Every marker-looking line of `src` is no marker.
    fn no_marker(src: &str) {
        assert!(comments(src).iter().all(|c| !c.1), "{src:?}");
        assert!(Document::parse(src.as_bytes(), &Fish).regions.is_empty());
    }

    const REGION: &str = "# BEGIN Z MANAGED a\nset -gx A 1\n# END Z MANAGED a\n";

    #[test]
    fn production_comment_at_word_start() {
        assert_eq!(
            comments("echo a#b # c\n  # d\necho x;#e\n"),
            [("# c", false), ("# d", true), ("#e", false)].map(|(t, a)| (t.to_owned(), a))
        );
        let doc = Document::parse(REGION.as_bytes(), &Fish);
        assert_eq!(doc.regions.len(), 1);
    }

    #[test]
    fn production_single_quoted() {
        no_marker(&format!("echo 'it\\'s\n{REGION}'\n"));
        // `\n` is no escape in single quotes: the quote closes at the next `'`.
        assert_eq!(comments("echo 'a\\n' # c\n"), [("# c".to_owned(), false)]);
        assert_eq!(
            lex(b"echo 'open\n").unclosed.map(|u| u.what),
            Some("single-quoted string")
        );
    }

    #[test]
    fn production_double_quoted() {
        no_marker(&format!("echo \"a \\\" $HOME\n{REGION}\"\n"));
        no_marker(&format!("echo \"$(echo \"\n{REGION}\")\"\n"));
        assert_eq!(
            lex(b"echo \"open\n").unclosed.map(|u| u.what),
            Some("double-quoted string")
        );
    }

    /// What is left open is named by the outermost construct, at its opener, however deep.
    #[test]
    fn the_outermost_construct_left_open_is_reported() {
        let open = |src: &[u8]| lex(src).unclosed.map(|u| (u.start, u.what));
        assert_eq!(
            open(b"echo (echo \"$(\n"),
            Some((5, "command substitution"))
        );
        assert_eq!(open(b"x \"a $(b\n"), Some((2, "double-quoted string")));
        assert_eq!(
            open("(".repeat(100_000).as_bytes()),
            Some((0, "command substitution"))
        );
        let closed = format!("{}{}\n# c\n", "(\"$(".repeat(50_000), ")\")".repeat(50_000));
        let out = lex(closed.as_bytes());
        assert_eq!(out.unclosed, None);
        assert!(out.comments.iter().any(|c| c.alone));
    }

    #[test]
    fn production_command_substitution() {
        no_marker(&format!("set x (\n{REGION})\n"));
        no_marker(&format!("set x $(\n{REGION})\n"));
        no_marker(&format!("set x a(echo (\n{REGION}))\n"));
        // Closed: the next line is top level.
        assert_eq!(
            Document::parse(format!("set x (echo ')')\n{REGION}").as_bytes(), &Fish)
                .regions
                .len(),
            1
        );
        assert_eq!(
            lex(b"set x (echo\n").unclosed.map(|u| u.what),
            Some("command substitution")
        );
    }

    #[test]
    fn production_continuation() {
        no_marker("echo a \\\n# BEGIN Z MANAGED a\necho \\\n# END Z MANAGED a\n");
        assert_eq!(
            lex(b"echo a \\\n").unclosed.map(|u| u.what),
            Some("line continuation")
        );
    }

    #[test]
    fn production_no_heredocs() {
        // `<<` is no heredoc in fish: the lines after it are top level.
        let src = format!("cat <<EOF\n{REGION}EOF\n");
        assert_eq!(Document::parse(src.as_bytes(), &Fish).regions.len(), 1);
    }

    #[test]
    fn production_blocks_are_top_level() {
        let src = format!("function f\n    {}end\n", REGION.replace('\n', "\n    "));
        assert_eq!(Document::parse(src.as_bytes(), &Fish).regions.len(), 1);
    }

    #[test]
    fn crlf_lines() {
        let src = REGION.replace('\n', "\r\n");
        assert_eq!(Document::parse(src.as_bytes(), &Fish).regions.len(), 1);
    }

    proptest! {
        #[test]
        fn never_panics(src in proptest::collection::vec(any::<u8>(), 0..300)) {
            check(&src, &lex(&src));
        }

        #[test]
        fn never_panics_on_fish(parts in proptest::collection::vec(proptest::sample::select(&[
            "'", "\"", "(", ")", "$(", "\\", "\n", "\r\n", "# BEGIN Z MANAGED a", " ", "echo", "$x",
            "\\'", ";", "#",
        ][..]), 0..40)) {
            let src = parts.concat();
            check(src.as_bytes(), &lex(src.as_bytes()));
        }
    }
}
