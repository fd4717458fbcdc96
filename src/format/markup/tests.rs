//! One test per production of `grammars/markup.ebnf`, through one helper that checks the
//! lexer's invariants on every input.

use super::*;
use crate::document::Document;
use proptest::prelude::*;

/// Lexes `src`, checks the invariants, and returns the comments (text, alone) and the
/// inner lines' text.
fn lexed(src: &str, dialect: Dialect) -> (Vec<(String, bool)>, Vec<String>) {
    let b = src.as_bytes();
    let out = lex(b, dialect);
    check(b, &out);
    (
        out.comments
            .iter()
            .map(|c| (String::from_utf8_lossy(c.text.of(b)).into_owned(), c.alone))
            .collect(),
        out.inner_lines
            .iter()
            .map(|s| String::from_utf8_lossy(s.of(b)).into_owned())
            .collect(),
    )
}

/// Spans in bounds and in order; comments are `<!-- … -->` on one line; inner spans start
/// at line starts and end after a line break or at the end; a comment on an inner line is
/// never alone.
fn check(src: &[u8], out: &Lexed) {
    crate::lex::assert_lexed(src, out, &[b"<!--"]);
}

/// The identities of the regions `src` holds.
fn regions(src: &str, syntax: &dyn Syntax) -> Vec<String> {
    let doc = Document::parse(src.as_bytes(), syntax);
    doc.regions
        .iter()
        .map(|r| r.id(doc.src).to_string())
        .collect()
}

/// Asserts that every marker-looking line of `src` is no marker (no region, nothing alone).
fn no_marker(src: &str, dialect: Dialect) {
    let (comments, _) = lexed(src, dialect);
    assert!(comments.iter().all(|c| !c.1), "{src:?}: {comments:?}");
    let syntax: &dyn Syntax = match dialect {
        Dialect::Markdown => &Markdown,
        Dialect::Html => &Markup,
    };
    assert!(regions(src, syntax).is_empty(), "{src:?}");
}

const REGION: &str = "<!-- BEGIN Z MANAGED a -->\nbody\n<!-- END Z MANAGED a -->\n";

#[test]
fn production_file_empty_bom() {
    assert_eq!(lex(b"", Dialect::Markdown), Lexed::default());
    let (c, _) = lexed("\u{feff}<!-- x -->\n", Dialect::Html);
    assert_eq!(c, [("<!-- x -->".to_owned(), true)]);
}

#[test]
fn production_marker_line() {
    for d in [Dialect::Markdown, Dialect::Html] {
        let (c, inner) = lexed(&format!("# Title\n\n  {REGION}"), d);
        assert_eq!(c.len(), 2);
        assert!(c.iter().all(|c| c.1));
        assert!(inner.is_empty());
    }
    assert_eq!(regions(REGION, &Markdown), ["Z MANAGED a"]);
    assert_eq!(
        regions(&REGION.replace('\n', "\r\n"), &Markup),
        ["Z MANAGED a"]
    );
}

#[test]
fn production_comment_after_text_is_not_alone() {
    let (c, _) = lexed("text <!-- BEGIN Z MANAGED a -->\n", Dialect::Html);
    assert_eq!(c, [("<!-- BEGIN Z MANAGED a -->".to_owned(), false)]);
    let (c, _) = lexed("<!-- a --> <!-- b -->\n", Dialect::Html);
    assert!(c.iter().all(|c| !c.1));
}

#[test]
fn production_comment_empty_forms() {
    let (c, _) = lexed("<!--> x <!---> <!---->\n", Dialect::Html);
    assert_eq!(c.len(), 3);
}

#[test]
fn production_open_comment() {
    // Comments do not nest: the first `-->` closes the open comment, so a marker line
    // inside one is its last line, never a marker.
    let src = "<!-- notes\n<!-- BEGIN Z MANAGED a -->\nbody\n<!-- after -->\n";
    let (c, inner) = lexed(src, Dialect::Markdown);
    assert_eq!(c, [("<!-- after -->".to_owned(), true)]);
    assert_eq!(inner, ["<!-- BEGIN Z MANAGED a -->\n"]);
    no_marker("<!-- notes\n  <!-- BEGIN Z MANAGED a -->\n", Dialect::Html);
    // Text after the close on the same line is scanned again, but never alone.
    let (c, _) = lexed("<!--\n--> <!-- BEGIN Z MANAGED a -->\n", Dialect::Html);
    assert_eq!(c, [("<!-- BEGIN Z MANAGED a -->".to_owned(), false)]);
}

#[test]
fn production_cdata() {
    no_marker(&format!("<a><![CDATA[\n{REGION}]]></a>\n"), Dialect::Html);
    let (c, _) = lexed("<![CDATA[ <!-- x --> ]]>\n", Dialect::Html);
    assert!(c.is_empty());
}

#[test]
fn production_raw_element() {
    for tag in ["pre", "script", "style", "textarea", "PRE", "Script"] {
        no_marker(
            &format!("<{tag} class=x>\n{REGION}</{tag}>\n"),
            Dialect::Html,
        );
        no_marker(&format!("<{tag}>\n{REGION}</{tag}>\n"), Dialect::Markdown);
    }
    // A tag that merely starts like one is not raw.
    let (c, _) = lexed(&format!("<prefix>\n{REGION}"), Dialect::Html);
    assert!(c.iter().all(|c| c.1));
    // Closed on its own line: what follows is top level again.
    let (c, _) = lexed(&format!("<pre>x</pre>\n{REGION}"), Dialect::Html);
    assert_eq!(c.len(), 2);
}

#[test]
fn production_fenced_code() {
    for fence in ["```", "~~~", "````", "~~~~~"] {
        no_marker(
            &format!("{fence}html\n{REGION}{fence}\n"),
            Dialect::Markdown,
        );
    }
    // A shorter or different fence does not close.
    no_marker(
        &format!("````\n```\n{REGION}~~~~\n````\n"),
        Dialect::Markdown,
    );
    // Closed: markers after it count.
    assert_eq!(
        regions(&format!("```\nx\n```\n{REGION}"), &Markdown),
        ["Z MANAGED a"]
    );
    // HTML has no fences.
    assert_eq!(
        regions(&format!("```\n{REGION}```\n"), &Markup),
        ["Z MANAGED a"]
    );
    // A backtick fence's info string holds no backtick: this is a code span line.
    assert_eq!(
        regions(&format!("``` a ` b\n{REGION}"), &Markdown),
        ["Z MANAGED a"]
    );
}

#[test]
fn production_fence_unclosed_at_end() {
    let out = lex(b"text\n```sh\necho\n", Dialect::Markdown);
    assert_eq!(out.unclosed.map(|u| u.what), Some("fenced code block"));
    assert_eq!(out.unclosed.map(|u| u.start), Some(5));
}

#[test]
fn production_indented_code() {
    no_marker(
        "Example:\n\n    <!-- BEGIN Z MANAGED a -->\n    body\n\n    <!-- END Z MANAGED a -->\n",
        Dialect::Markdown,
    );
    // A paragraph's continuation line is not code.
    let (c, _) = lexed("para\n    <!-- x -->\n", Dialect::Markdown);
    assert_eq!(c, [("<!-- x -->".to_owned(), true)]);
    // In a list, indentation is the item's content.
    let src = format!("- item\n\n    {}", REGION.replace('\n', "\n    "));
    assert_eq!(regions(src.trim_end(), &Markdown), ["Z MANAGED a"]);
    // HTML: indentation means nothing.
    assert_eq!(
        regions(
            "<div>\n\n    <!-- BEGIN Z MANAGED a -->\n    <!-- END Z MANAGED a -->\n",
            &Markup
        ),
        ["Z MANAGED a"]
    );
}

#[test]
fn production_code_span() {
    no_marker("`<!-- BEGIN Z MANAGED a -->`\n", Dialect::Markdown);
    // An open comment inside a code span opens nothing.
    assert_eq!(
        regions(
            &format!("Write `<!--` to start a comment.\n{REGION}"),
            &Markdown
        ),
        ["Z MANAGED a"]
    );
    // HTML knows no code spans: the same line opens a comment.
    assert!(regions(&format!("Write `<!--` here.\n{REGION}"), &Markup).is_empty());
}

#[test]
fn production_list_item() {
    assert!(list_item(b"- x") && list_item(b"12. x") && list_item(b"3)") && list_item(b"*"));
    assert!(!list_item(b"-x") && !list_item(b"1234567890. x") && !list_item(b"a. x"));
}

#[test]
fn written_markers_parse_back() {
    let m = Marker::begin(
        &crate::marker::Identity::new("Z", "a"),
        Some("0123456789ab"),
    );
    let line = Markdown.render_marker(&m);
    assert_eq!(line, "<!-- BEGIN Z MANAGED a hash=0123456789ab -->");
    assert_eq!(crate::marker::parse(line.as_bytes()), Some(m));
}

proptest! {
    #[test]
    fn never_panics_on_bytes(src in proptest::collection::vec(any::<u8>(), 0..300), md in any::<bool>()) {
        let d = if md { Dialect::Markdown } else { Dialect::Html };
        check(&src, &lex(&src, d));
    }

    #[test]
    fn never_panics_on_markup(parts in proptest::collection::vec(proptest::sample::select(&[
        "<!--", "-->", "<!-- BEGIN Z MANAGED a -->", "\n", "\r\n", "    ", "```", "~~~", "`",
        "<pre>", "</pre>", "<![CDATA[", "]]>", "- ", "text", "<", ">", "\t",
    ][..]), 0..40), md in any::<bool>()) {
        let src = parts.concat();
        let d = if md { Dialect::Markdown } else { Dialect::Html };
        check(src.as_bytes(), &lex(src.as_bytes(), d));
    }
}
