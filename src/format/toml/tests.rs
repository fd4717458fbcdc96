//! Unit tests of the TOML format: one or more per production of `grammars/toml.ebnf`
//! (`production_<name>`), then lexing of whole files. Placement, scope safety and validation
//! through the planner are tested in `tests/integration/toml_plan.rs`.

use super::Toml;
use super::lexer::{self, Scan, scan};
use crate::document::Document;
use crate::format::Lexer;
use crate::format::Syntax;
use crate::lex::Span;
use crate::problem::ProblemKind;

fn ok<'a>(r: nom::IResult<&'a [u8], &'a [u8]>) -> (&'a str, &'a str) {
    let (rest, got) = r.expect("parses");
    (
        std::str::from_utf8(got).expect("utf-8"),
        std::str::from_utf8(rest).expect("utf-8"),
    )
}

fn comments(src: &str) -> Vec<(String, bool, u32)> {
    let s = scan(src.as_bytes());
    s.lexed
        .comments
        .iter()
        .map(|c| {
            (
                String::from_utf8_lossy(c.text.of(src.as_bytes())).into_owned(),
                c.alone,
                c.context,
            )
        })
        .collect()
}

fn texts(src: &str) -> Vec<String> {
    comments(src).into_iter().map(|c| c.0).collect()
}

fn keys(src: &str) -> Vec<(String, u32)> {
    let s = scan(src.as_bytes());
    s.lexed
        .keys
        .iter()
        .map(|k| {
            (
                String::from_utf8_lossy(k.name.of(src.as_bytes())).into_owned(),
                k.context,
            )
        })
        .collect()
}

/// Line numbers (1-based) reported as inner.
fn inner_lines(src: &str) -> Vec<usize> {
    let s = scan(src.as_bytes());
    let mut out = Vec::new();
    let mut ls = 0;
    let mut n = 1;
    while ls < src.len() {
        if s.lexed.is_inner(ls) {
            out.push(n);
        }
        ls = crate::document::line_end(src.as_bytes(), ls);
        n += 1;
    }
    out
}

fn doc_problems(src: &str) -> Vec<ProblemKind> {
    Document::parse(src.as_bytes(), &Toml)
        .problems
        .iter()
        .map(|p| p.kind)
        .collect()
}

// ---------------------------------------------------------------- productions

#[test]
fn production_toml() {
    let s = scan(b"a = 1\n[t]\nb = 2\n");
    assert_eq!(s.stmts.len(), 2);
    assert_eq!(s.headers.len(), 1);
    assert!(s.lexed.unclosed.is_none());
}

#[test]
fn production_bom() {
    let src = "\u{feff}# BEGIN A MANAGED x\na = 1\n# END A MANAGED x\n";
    assert!(comments(src)[0].1, "a comment after the BOM stands alone");
    assert_eq!(Document::parse(src.as_bytes(), &Toml).regions.len(), 1);
}

#[test]
fn production_expression() {
    let c = comments("a = 1 # after a value\n[t] # after a header\n  # alone\n");
    assert_eq!(
        c,
        vec![
            ("# after a value".to_owned(), false, 0),
            ("# after a header".to_owned(), false, 0),
            ("# alone".to_owned(), true, 0),
        ]
    );
}

#[test]
fn production_ws() {
    assert_eq!(ok(lexer::ws(b" \t x")), (" \t ", "x"));
    assert_eq!(ok(lexer::ws(b"x")), ("", "x"));
}

#[test]
fn production_newline() {
    assert_eq!(ok(lexer::newline(b"\r\nx")), ("\r\n", "x"));
    assert_eq!(ok(lexer::newline(b"\nx")), ("\n", "x"));
    assert!(lexer::newline(b"\rx").is_err());
}

#[test]
fn production_comment() {
    assert_eq!(ok(lexer::comment(b"# hi\r\nx")), ("# hi", "\r\nx"));
    assert_eq!(ok(lexer::comment(b"#")), ("#", ""));
    assert!(lexer::comment(b"x#").is_err());
}

#[test]
fn production_key() {
    let k = keys("a . \"b.c\" . 'd' = 1\n");
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].0, "'d'");
    assert_ne!(
        k[0].1, 0,
        "a dotted key's name belongs to the table its prefix names"
    );
}

#[test]
fn production_simple_key() {
    assert_eq!(ok(lexer::simple_key(b"\"a#b\" = 1")), ("\"a#b\"", " = 1"));
    assert_eq!(ok(lexer::simple_key(b"'a#b' = 1")), ("'a#b'", " = 1"));
    assert_eq!(ok(lexer::simple_key(b"a-b_1 = 1")), ("a-b_1", " = 1"));
}

#[test]
fn production_unquoted_key() {
    assert_eq!(ok(lexer::unquoted_key(b"Ab-_9.x")), ("Ab-_9", ".x"));
    assert!(lexer::unquoted_key(b".x").is_err());
}

#[test]
fn production_dot_sep() {
    assert_eq!(ok(lexer::dot_sep(b" . b")), (" . ", "b"));
    assert!(lexer::dot_sep(b" = b").is_err());
}

#[test]
fn production_keyval_sep() {
    assert_eq!(ok(lexer::keyval_sep(b" =\t1")), (" =\t", "1"));
    assert!(lexer::keyval_sep(b" : 1").is_err());
}

#[test]
fn production_keyval() {
    let s = scan(b"a = \"x # y\" # real\nb = 2\n");
    assert_eq!(s.stmts.len(), 2);
    assert_eq!(s.stmts.to_vec()[0].end, 19);
    assert_eq!(texts("a = \"x # y\" # real\nb = 2\n"), vec!["# real"]);
}

#[test]
fn production_table() {
    let s = scan(b"[a]\n[[b]]\n");
    assert_eq!(s.headers.len(), 2);
    assert!(!s.headers.to_vec()[0].array);
    assert!(s.headers.to_vec()[1].array);
}

#[test]
fn production_std_table() {
    let src = "[ a . \"b#c\" ] # note\nx = 1\n";
    let s = scan(src.as_bytes());
    assert_eq!(
        s.path(&s.headers.to_vec()[0], src.as_bytes()),
        format!("a{}b#c", lexer::SEP)
    );
    assert_eq!(s.headers.to_vec()[0].line, Span::new(0, 21));
    assert_eq!(texts(src), vec!["# note"]);
    assert_eq!(s.stmts.to_vec()[0].header, Some(0));
}

#[test]
fn production_array_table() {
    // Each element is a table of its own: the same key twice is no duplicate.
    let src = "[[bin]]\nname = \"a\"\n[bin.x]\nk = 1\n[[bin]]\nname = \"b\"\n[bin.x]\nk = 2\n";
    let k = keys(src);
    assert_eq!(k.len(), 4);
    assert_ne!(k[0].1, k[2].1);
    assert_ne!(
        k[1].1, k[3].1,
        "[bin.x] belongs to the last [[bin]] element"
    );
    assert!(!doc_problems(src).contains(&ProblemKind::DuplicateKey));
}

#[test]
fn production_val() {
    let s = scan(b"a = 1\nb = 'x'\nc = [1]\nd = {e = 1}\n");
    assert_eq!(s.stmts.len(), 4);
    assert_eq!(keys("a = 1\nb = 'x'\nc = [1]\nd = {e = 1}\n").len(), 5);
}

#[test]
fn production_string() {
    let (rest, (s, closed)) = lexer::string(b"\"\"\"a\"\"\" x").expect("parses");
    assert_eq!((s, rest, closed), (&b"\"\"\"a\"\"\""[..], &b" x"[..], true));
    let (rest, (s, closed)) = lexer::string(b"\"open\nnext").expect("recovers");
    assert_eq!((s, rest, closed), (&b"\"open"[..], &b"\nnext"[..], false));
}

#[test]
fn production_basic_string() {
    assert_eq!(
        ok(lexer::basic_string(br#""a \" # b" # c"#)),
        (r#""a \" # b""#, " # c")
    );
    assert_eq!(ok(lexer::basic_string(br#""\\" x"#)), (r#""\\""#, " x"));
}

#[test]
fn production_basic_char() {
    assert!(
        lexer::basic_string(b"\"a\nb\"").is_err(),
        "a line break ends a basic string"
    );
}

#[test]
fn production_escaped() {
    assert_eq!(texts("a = \"\\\"# no\" # yes\n"), vec!["# yes"]);
}

#[test]
fn production_literal_string() {
    assert_eq!(
        ok(lexer::literal_string(br"'C:\x # y' z")),
        (r"'C:\x # y'", " z")
    );
    assert!(lexer::literal_string(b"'a\nb'").is_err());
}

#[test]
fn production_ml_basic_string() {
    let src = "a = \"\"\"\n# BEGIN A MANAGED x\n[not.a.table]\n# END A MANAGED x\n\"\"\"\nb = 1\n";
    assert!(texts(src).is_empty());
    assert_eq!(inner_lines(src), vec![2, 3, 4, 5]);
    let s = scan(src.as_bytes());
    assert!(s.headers.is_empty());
    assert_eq!(s.stmts.len(), 2);
}

#[test]
fn production_ml_basic_string_escaped_quotes() {
    let src = "a = \"\"\"x \\\"\"\" # still in\n\"\"\" # out\n";
    assert_eq!(texts(src), vec!["# out"]);
}

#[test]
fn production_ml_basic_body() {
    let src = "a = \"\"\"line \\\n  # still in\n  \"\"\"\n# out\n";
    assert_eq!(texts(src), vec!["# out"]);
}

#[test]
fn production_escaped_any() {
    let (_, (s, closed)) = lexer::ml_basic_string(b"\"\"\"\\\\\"\"\" x").expect("parses");
    assert!(closed);
    assert_eq!(s, b"\"\"\"\\\\\"\"\"");
}

#[test]
fn production_quote_run() {
    assert_eq!(
        texts("a = \"\"\"one \"\" two \" # in\"\"\" # out\n"),
        vec!["# out"]
    );
}

#[test]
fn production_ml_basic_close() {
    let (rest, (s, _)) = lexer::ml_basic_string(b"\"\"\"a\"\"\"\"\" x").expect("parses");
    assert_eq!((s, rest), (&b"\"\"\"a\"\"\"\"\""[..], &b" x"[..]));
}

#[test]
fn production_ml_literal_string() {
    let src = "re = '''\n# BEGIN A MANAGED x\n[not_a_table]\n# END A MANAGED x\n'''\n";
    assert!(texts(src).is_empty());
    assert_eq!(inner_lines(src), vec![2, 3, 4, 5]);
    assert!(scan(src.as_bytes()).headers.is_empty());
}

#[test]
fn production_ml_literal_body() {
    assert_eq!(texts("a = '''x '' \\''' # out\n"), vec!["# out"]);
}

#[test]
fn production_ml_literal_close() {
    let (rest, (s, _)) = lexer::ml_literal_string(b"'''a'''' x").expect("parses");
    assert_eq!((s, rest), (&b"'''a''''"[..], &b" x"[..]));
}

#[test]
fn production_array() {
    let src = "a = [\n  1, # one\n  # alone\n  \"# no\",\n]\nb = 2\n";
    let c = comments(src);
    assert_eq!(c.len(), 2);
    assert!(!c[0].1);
    assert!(c[1].1);
    assert_ne!(c[1].2, 0, "a comment in an array has the array's context");
    assert_eq!(inner_lines(src), vec![2, 3, 4, 5]);
}

#[test]
fn production_inline_table() {
    let src = "m = { a = 1, b = \"# END A MANAGED x\", c.d = 2 }\n";
    assert!(texts(src).is_empty());
    let k = keys(src);
    assert_eq!(k.len(), 4);
    assert_eq!(k[1].1, k[2].1, "a and b are in the same inline table");
    assert_ne!(k[0].1, k[1].1);
    assert!(inner_lines(src).is_empty());
}

#[test]
fn production_ws_comment_newline() {
    let src = "a = {\n  x = 1, # c\n  y = 2,\n}\n";
    assert_eq!(inner_lines(src), vec![2, 3, 4]);
    assert_eq!(texts(src), vec!["# c"]);
}

#[test]
fn production_bare_value() {
    assert_eq!(
        ok(lexer::bare_value(b"1979-05-27 07:32:00Z # c")),
        ("1979-05-27 07:32:00Z", " # c")
    );
    assert_eq!(ok(lexer::bare_value(b"+1_000.5e3,")), ("+1_000.5e3", ","));
    assert_eq!(ok(lexer::bare_value(b"true #")), ("true", " #"));
}

#[test]
fn production_bare_char() {
    assert!(lexer::bare_value(b"#x").is_err());
    assert_eq!(ok(lexer::bare_value(b"07:32:00.5]")), ("07:32:00.5", "]"));
}

// ---------------------------------------------------------------- whole files

#[test]
fn marker_looking_text_in_every_string_kind_is_no_marker() {
    let src = concat!(
        "a = \"# BEGIN A MANAGED x\"\n",
        "b = '# BEGIN A MANAGED x'\n",
        "c = \"\"\"\n# BEGIN A MANAGED x\n\"\"\"\n",
        "d = '''\n# END A MANAGED x\n'''\n",
        "\"# BEGIN A MANAGED y\" = 1\n",
        "m = { k = \"# END A MANAGED x\" }\n",
    );
    assert!(texts(src).is_empty());
    let d = Document::parse(src.as_bytes(), &Toml);
    assert!(d.regions.is_empty());
    assert!(d.problems.is_empty(), "{:?}", d.problems);
}

#[test]
fn crlf_lines() {
    let src = "a = 1\r\n# BEGIN A MANAGED x\r\nb = 2\r\n# END A MANAGED x\r\n[t]\r\nc = \"\"\"\r\n# no\r\n\"\"\"\r\n";
    let c = comments(src);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].0, "# BEGIN A MANAGED x", "the comment excludes the CR");
    let d = Document::parse(src.as_bytes(), &Toml);
    assert_eq!(d.regions.len(), 1);
    assert_eq!(inner_lines(src), vec![7, 8]);
}

#[test]
fn no_final_newline() {
    let s = scan(b"a = 1\n[t]\nb = 2");
    assert_eq!(s.stmts.to_vec()[1].end, 15);
    assert_eq!(s.headers.to_vec()[0].line, Span::new(6, 10));
    assert_eq!(texts("a = 1 # c"), vec!["# c"]);
}

#[test]
fn comments_between_tables() {
    let src = "[a]\nx = 1\n# about b\n\n# BEGIN A MANAGED r\ny = 2\n# END A MANAGED r\n[b]\n";
    let d = Document::parse(src.as_bytes(), &Toml);
    assert_eq!(d.regions.len(), 1);
    assert!(d.problems.is_empty());
}

#[test]
fn dotted_keys_collide_with_tables() {
    // `a.b` at the root and `b` in [a] are one key of one table.
    assert!(doc_problems("a.b = 1\n[a]\nb = 2\n").contains(&ProblemKind::DuplicateKey));
    assert!(doc_problems("[x]\na.b = 1\n[x.a]\nb = 2\n").contains(&ProblemKind::DuplicateKey));
    assert!(doc_problems("a.b = 1\na.b = 2\n").contains(&ProblemKind::DuplicateKey));
    assert!(!doc_problems("a.b = 1\nb = 2\n").contains(&ProblemKind::DuplicateKey));
}

#[test]
fn duplicate_keys_in_tables() {
    assert!(doc_problems("[t]\na = 1\na = 2\n").contains(&ProblemKind::DuplicateKey));
    assert!(!doc_problems("[t]\na = 1\n[u]\na = 2\n").contains(&ProblemKind::DuplicateKey));
    assert!(doc_problems("m = { a = 1, a = 2 }\n").contains(&ProblemKind::DuplicateKey));
}

#[test]
fn markers_inside_one_array_pair() {
    let src = "deps = [\n  \"a\",\n  # BEGIN A MANAGED x\n  \"b\",\n  # END A MANAGED x\n]\n";
    let d = Document::parse(src.as_bytes(), &Toml);
    assert_eq!(d.regions.len(), 1);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
}

#[test]
fn markers_across_structure_are_refused() {
    let src = "deps = [\n  \"a\",\n  # BEGIN A MANAGED x\n  \"b\",\n]\n# END A MANAGED x\n";
    assert!(doc_problems(src).contains(&ProblemKind::MarkerCrossesStructure));
    let two = "a = [\n# BEGIN A MANAGED x\n1,\n]\nb = [\n# END A MANAGED x\n2,\n]\n";
    assert!(doc_problems(two).contains(&ProblemKind::MarkerCrossesStructure));
}

#[test]
fn unclosed_constructs() {
    for (src, what) in [
        ("a = \"\"\"\nx\n", "multi-line string"),
        ("a = '''x", "multi-line string"),
        ("a = [\n1,\n", "array"),
        ("a = {\nb = 1\n", "inline table"),
    ] {
        let u = scan(src.as_bytes()).lexed.unclosed.expect(src);
        assert_eq!(u.what, what);
        assert_eq!(u.start, 4);
    }
    assert!(scan(b"a = \"open\nb = 1\n").lexed.unclosed.is_none());
}

#[test]
fn garbage_never_panics_and_spans_stay_in_bounds() {
    let inputs: [&[u8]; 16] = [
        b"a = [ = ]",
        b"a = [ } ]\nb = 1",
        b"a = { ] }",
        b"a = [{=}]",
        b"[",
        b"[[",
        b"[[a",
        b"= = =",
        b"\"",
        b"'''",
        b"a = [[[[[[{{{{",
        b"]]]}}}",
        b"a.\n",
        b"\xef\xbb\xbf",
        b"a = 1979-05-27 ",
        b"x = \"\\",
    ];
    for src in inputs {
        let s: Scan = scan(src);
        for c in &s.lexed.comments {
            assert!(c.text.end <= src.len());
        }
        for sp in &s.lexed.inner_lines {
            assert!(sp.start <= sp.end && sp.end <= src.len());
        }
        let _ = super::normalize::normalize(src);
    }
}

#[test]
fn reindent_leaves_multiline_strings_alone() {
    let body = b"  a = \"\"\"\n    keep\n  \"\"\"\n  b = 1\n";
    let out = super::place::reindent(body, b"\t");
    assert_eq!(out, b"\ta = \"\"\"\n    keep\n  \"\"\"\n\tb = 1\n");
}

#[test]
fn toml_syntax_basics() {
    assert_eq!(Toml.name(), "toml");
    assert!(Toml.requires_utf8());
    assert!(Toml.duplicate_keys_block());
}

// ---------------------------------------------------------------- against the reference parser

/// Asserts that on a file toml_edit accepts, the lexer finds exactly the comments and keys
/// that toml_parser (the lexer and parser under toml_edit) finds: the same comment spans, and
/// a key recorded for every key/value statement, named by its last key segment.
fn agrees_with_reference(src: &[u8]) {
    let Ok(text) = std::str::from_utf8(src) else {
        return;
    };
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if toml_edit::Document::parse(body).is_err() {
        return;
    }
    let bom = text.len() - body.len();
    let source = toml_parser::Source::new(body);
    let tokens = source.lex().into_vec();
    let mut events: Vec<toml_parser::parser::Event> = Vec::new();
    toml_parser::parser::parse_document(&tokens, &mut events, &mut ());
    use toml_parser::parser::EventKind as E;
    let span = |e: &toml_parser::parser::Event| (bom + e.span().start(), bom + e.span().end());
    let reference_comments: Vec<(usize, usize)> = events
        .iter()
        .filter(|e| e.kind() == E::Comment)
        .map(span)
        .collect();
    // The last simple key before each `=` names the key the statement assigns.
    let mut reference_keys = Vec::new();
    let mut last_key = None;
    for e in &events {
        match e.kind() {
            E::SimpleKey => last_key = Some(span(e)),
            E::KeyValSep => reference_keys.extend(last_key.take()),
            E::StdTableOpen | E::ArrayTableOpen => last_key = None,
            _ => {}
        }
    }
    let s = scan(src);
    let comments: Vec<(usize, usize)> = s
        .lexed
        .comments
        .iter()
        .map(|c| (c.text.start, c.text.end))
        .collect();
    assert_eq!(comments, reference_comments, "comments of {text:?}");
    if s.too_deep.is_some() {
        return;
    }
    let mut keys: Vec<(usize, usize)> = s
        .lexed
        .keys
        .iter()
        .map(|k| (k.name.start, k.name.end))
        .collect();
    keys.sort_unstable();
    reference_keys.sort_unstable();
    let named = |spans: &[(usize, usize)]| -> Vec<String> {
        spans
            .iter()
            .map(|&(a, b)| String::from_utf8_lossy(&src[a..b]).into_owned())
            .collect()
    };
    assert_eq!(named(&keys), named(&reference_keys), "keys of {text:?}");
}

/// Statements of valid TOML, with `{}` standing for a number that makes each key and table
/// name unique in the file: any sequence of them is a valid file ([`valid_file`]).
const VALID_STATEMENTS: &[&str] = &[
    "k{} = \"s # BEGIN X MANAGED s\" # c{}\n",
    "k{} = 'l # x'\n",
    "k{} = '''\nml # not a comment\n# BEGIN X MANAGED m\n'''\n",
    "k{} = \"\"\"\nx \\\n  # y\n\"\"\"\n",
    "[t{}]\n",
    "[t{}.u] # after a header\n",
    "[[a]]\n",
    "[[b.c]]\r\n",
    "d{}.e.f = 1\n",
    "\"q {}\" = 1\n",
    "k{} = [\n  1, # one\n  # BEGIN X MANAGED arr\n  2,\n  # END X MANAGED arr\n]\n",
    "k{} = {a = 1, b = {c = \"#\"}, d.e = [{f = 2}]}\n",
    "k{} = [{a = 1}, {a = \"{{\"}]\n",
    "# comment {}\n",
    "    # BEGIN X MANAGED n{}\n",
    "\n",
    "\r\n",
    "\tk{} = 0x1f # hex\n",
    "k{} = 1979-05-27T07:32:00Z\n",
];

/// The file of `parts`, each `{}` replaced by the part's position.
fn valid_file(parts: &[&str]) -> String {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| p.replace("{}", &i.to_string()))
        .collect()
}

const TOML_FRAGMENTS: &[&str] = &[
    "0x1f",
    "1979-05-27",
    " 07:32:00",
    "T07:32:00Z",
    "1e5",
    "_1",
    "inf",
    "nan",
    "0o7",
    "+",
    "[a]\n",
    "[a.b]\n",
    "[[a]]\n",
    "[[a.c]]\n",
    "[ \"a\" . 'b' ]\n",
    "[[b]]\n",
    "a = 1\n",
    "a.b = 2\n",
    "\"a\".b = 3\n",
    "'b' = ",
    "c = {",
    "d = {e = 1, f = {",
    "g = [{h = 1}, {h = 1}]\n",
    "i = [",
    "{",
    "}",
    "[",
    "]",
    ",",
    "=",
    ".",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "# c\n",
    "#",
    "\"s # x\"",
    "'l # x'",
    "'''\nml # x\n'''",
    "\"\"\"\nml \\\n\"\"\"",
    "\"\"\"",
    "'''",
    "\"",
    "'",
    "\\",
    "k",
    "a",
    "1979-05-27 07:32:00",
    "\"a\\\"b\"",
    "\"\\u00e9\"",
    "\u{feff}",
    "\u{e9}",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    #[test]
    fn lexer_agrees_with_the_reference_on_tomlish(parts in proptest::collection::vec(
        proptest::sample::select(TOML_FRAGMENTS), 0..80
    )) {
        agrees_with_reference(parts.concat().as_bytes());
    }
    #[test]
    fn lexer_agrees_with_the_reference_on_valid_files(parts in proptest::collection::vec(
        proptest::sample::select(VALID_STATEMENTS), 0..40
    )) {
        let src = valid_file(&parts);
        proptest::prop_assert!(toml_edit_accepts(src.as_bytes()), "{:?}", src);
        agrees_with_reference(src.as_bytes());
    }
}

#[test]
fn lexer_agrees_with_the_reference_after_a_broken_key() {
    // The line break after `"s # x".` is skipped as junk, yet starts inner lines.
    agrees_with_reference(b"c = {\"s # x\".\n}");
    agrees_with_reference(b"c = [{a.\n}, 1]\nd = 2\n");
}

#[test]
fn lexer_agrees_with_the_reference_on_nesting() {
    let n = 300;
    let src = format!("a = {}\n# c\n1{}\n", "[\n{b = ".repeat(n), "}]".repeat(n));
    agrees_with_reference(src.as_bytes());
    let src = format!("a = {}", "{b = [\n".repeat(n));
    agrees_with_reference(src.as_bytes());
    let src = format!("a = {}1{}\n", "{b = ".repeat(n), "}".repeat(n));
    agrees_with_reference(src.as_bytes());
    let src = format!("[[t]]\nx = [{}{{k = 1}}{}]\n", "[".repeat(n), "]".repeat(n));
    agrees_with_reference(src.as_bytes());
}

#[test]
fn deeply_nested_inline_tables_lex_in_linear_time() {
    // 100,000 levels: with a path cloned per level this took minutes and tens of gigabytes;
    // a record per level took 20 times the file. Levels beyond RECORDED_DEPTH are lexed
    // but not recorded.
    let n = 100_000;
    let depth = lexer::RECORDED_DEPTH;
    let src = format!("a = {}1{}\nz = 2\n", "{b = ".repeat(n), "}".repeat(n));
    let s = scan(src.as_bytes());
    assert_eq!(s.lexed.keys.len(), depth + 2);
    assert_eq!(s.lexed.unclosed, None);
    assert!(s.lexed.inner_lines.is_empty());
    assert_eq!(s.stmts.len(), 2);
    // Each recorded `b` is in the table its parent names: no two levels share a table, and
    // `z` is back in the root table with `a`.
    let ctx: Vec<u32> = s.lexed.keys.iter().map(|k| k.context).collect();
    let distinct: std::collections::HashSet<u32> = ctx[..=depth].iter().copied().collect();
    assert_eq!(distinct.len(), depth + 1);
    assert_eq!(ctx[0], ctx[depth + 1]);
    // The 81st container is where the validating parser stops.
    assert_eq!(s.too_deep, Some(4 + 5 * lexer::MAX_DEPTH));
    let doc = Document::parse(src.as_bytes(), &Toml);
    assert!(doc.problems.is_empty(), "{:?}", doc.problems);
}

#[test]
fn nesting_deeper_than_the_validating_parser_accepts_is_refused_before_an_edit() {
    let deep = |n: usize| format!("x = 1\na = {}1{}\n", "[".repeat(n), "]".repeat(n));
    let ok = deep(lexer::MAX_DEPTH);
    assert_eq!(scan(ok.as_bytes()).too_deep, None);
    let doc = Document::parse(ok.as_bytes(), &Toml);
    assert_eq!(Toml.check_input(&doc), Ok(()));
    let bad = deep(lexer::MAX_DEPTH + 1);
    let doc = Document::parse(bad.as_bytes(), &Toml);
    let err = Toml.check_input(&doc).expect_err("too deep");
    assert!(
        err.contains("line 2, column 85") && err.contains("80") && err.contains("[tables]"),
        "{err}"
    );
    // toml_edit refuses it as well.
    assert!(toml_edit::Document::parse(bad.as_str()).is_err());
}

#[test]
fn unrecorded_levels_keep_comments_and_inner_lines() {
    let n = lexer::RECORDED_DEPTH + 20;
    let src = format!(
        "a = {}'''x\n# not'''\n# inside \"{{\"\n{}\n# after\nb = 1\n",
        "[{k = ".repeat(n),
        "}]".repeat(n)
    );
    agrees_with_reference(src.as_bytes());
    let s = scan(src.as_bytes());
    let texts: Vec<&[u8]> = s
        .lexed
        .comments
        .iter()
        .map(|c| c.text.of(src.as_bytes()))
        .collect();
    assert_eq!(texts, vec![&b"# inside \"{\""[..], b"# after"]);
    let inside = s.lexed.comments[0].text.start;
    assert!(
        s.lexed
            .is_inner(crate::lines::line_start(src.as_bytes(), inside))
    );
    assert!(s.lexed.comments[1].alone);
    assert_eq!(s.stmts.len(), 2);
    assert_eq!(s.lexed.inner_lines.len(), 1);
}

#[test]
fn an_empty_quoted_key_names_a_table_of_its_own() {
    // `''` is a table below the root, not the root: its `x` and the root's `x` are two keys.
    let k = keys("'' = {x = 1}\nx = 2\n");
    assert_eq!(k.len(), 3);
    assert_ne!(k[1].1, k[2].1);
    assert!(!doc_problems("'' = {x = 1}\nx = 2\n").contains(&ProblemKind::DuplicateKey));
    assert!(doc_problems("x = 1\nx = 2\n").contains(&ProblemKind::DuplicateKey));
}

// ---------------------------------------------------------------- the input check

fn toml_edit_accepts(src: &[u8]) -> bool {
    std::str::from_utf8(src)
        .is_ok_and(|t| toml_edit::Document::parse(t.strip_prefix('\u{feff}').unwrap_or(t)).is_ok())
}

#[test]
fn common_files_are_accepted_and_agree_with_the_reference() {
    let files = [
        // Inline tables: the same key names in different ones.
        "a = [{b = 1}, {b = 2}]\nc = {d = {e = 1}, f = {e = 1}}\n[t]\nc = {d = 1}\n",
        // Numbers, dates and times it reads through toml_edit one token at a time.
        "h = 0x1f\no = 0o17\nb = 0b1\nu = 1_000\ne = -1.5E-3\ni = -inf\nn = nan\n\
         d = 1979-05-27T07:32:00Z\nl = 1979-05-27 07:32:00.999+07:00\nt = 07:32:00\n\
         a = [1979-05-27, 0xff]\n",
        // One name as a key in several tables, and in each element of an array of tables.
        "a = 1\n[t]\na = 1\n[u.t]\na = 1\n[[e]]\na = 1\n[[e]]\na = 1\nx = {a = 1}\n",
        "title = \"x\"\n[table_0]\nname = \"n # not a comment\"\nport = 0\nlist = [1, 2, 3]\n\
         desc = '''\nmulti # line\n'''\n# a comment\n[table_1]\nport = -1\n",
        "[package]\nname = \"demarcate\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\nclap = { version = \"4\", features = [\"derive\"] }\nmemchr = \"2\"\n\n\
         [profile.release]\nlto = \"thin\"\ncodegen-units = 4\n",
        "\u{feff}[tool.poetry]\nname = \"x\"\n[tool.poetry.dependencies]\npython = \"^3.8\"\n\
         [[tool.mypy.overrides]]\nmodule = \"a.*\"\nstrict = true\n[[tool.mypy.overrides]]\n\
         module = \"b\"\n[tool.mypy.overrides.x]\nk = 1.5\n",
        "a.b.c = 1\na.b.d = \"\\u00e9\\t\\\"\"\n'quoted key' = { x = 1, y.z = [ {q = 1}, {q = 2} ] }\r\n\
         arr = [\n  1, # one\n  2,\n]\ns = \"\"\"\nline \\\n  joined \"\" ok\"\"\"\"\n",
        "[a]#c\nb = 1#c\nc = \"x\"#c\nd = [1]#c\ne = {f = 1}#c\n\t g = [ # c\n\n ]\n",
    ];
    for f in files {
        assert!(toml_edit_accepts(f.as_bytes()), "{f}");
        let doc = Document::parse(f.as_bytes(), &Toml);
        assert_eq!(Toml.check_input(&doc), Ok(()), "{f}");
        assert!(super::sure::surely_valid(f.as_bytes()), "{f}");
        agrees_with_reference(f.as_bytes());
    }
}

#[test]
fn invalid_files_are_refused_before_an_edit() {
    // Each is invalid TOML: toml_edit refuses it, and so does the input check.
    let files = [
        "[a]\n[a]\n",
        "a = 1\na = 2\n",
        "a = 1\n\"a\" = 2\n",
        "a = 1\n[a]\n",
        "a.b = 1\n[a]\n",
        "a = {b = 1}\n[a.c]\n",
        "a = {b = 1}\na.c = 2\n",
        "[[a]]\n[a]\n",
        "[a]\n[[a]]\n",
        "a = [1]\n[[a]]\n",
        "[a.b]\n[a]\nb = 1\n",
        // A key with a value found again as a table, later or earlier, or in a dotted key.
        "[t]\na = 1\n[t.a]\n",
        "[t.a.b]\n[t]\na = 1\n",
        "a = 1\na.b = 2\n",
        "x = {a = 1, a = 2}\n",
        "x = {a = 1, a.b = 2}\n",
        "[[t]]\na = 1\na = 2\n",
        // An inline table's name taken again, before or after; a key twice inside one.
        "x = {a = 1}\n[x]\n",
        "[t.x]\n[t]\nx = {a = 1}\n",
        "x = {a = 1}\nx = 2\n",
        "a = [{b = 1, b = 2}]\n",
        "c = {d = {e = 1, e = 2}}\n",
        // Tokens toml_edit does not read as a value.
        "h = 0x\n",
        "h = 1__0\n",
        "h = 1979-13-01\n",
        "h = 25:00:00\n",
        "h = nanx\n",
        "a = \"x\n",
        "a = 'x\n",
        "a = \"\\q\"\n",
        "a = 01\n",
        "a = 1 b = 2\n",
        "a = [1 2]\n",
        "a = \"\"\"x\"\"\"\"\"\"\n",
        "# \u{1}\n",
        "a = 1\r",
        "a = 99999999999999999999\n",
        "a = \"\\uD800\"\n",
        "[]\n",
        "= 1\n",
    ];
    for f in files {
        assert!(!toml_edit_accepts(f.as_bytes()), "{f:?}");
        assert!(!super::sure::surely_valid(f.as_bytes()), "{f:?}");
        let doc = Document::parse(f.as_bytes(), &Toml);
        assert!(Toml.check_input(&doc).is_err(), "{f:?}");
    }
}

#[test]
fn a_quoted_table_name_is_the_table_of_its_decoded_text() {
    // Table names are kept as written and decoded when compared: `"\u0061"` is `a`.
    let src = b"[\"\\u0061\".'b']\nx = 1\n[a.b]\nx = 2\n[a . \"b\"]\nx = 3\n";
    let s = scan(src);
    let contexts: Vec<u32> = s.lexed.keys.iter().map(|k| k.context).collect();
    assert_eq!(contexts.len(), 3);
    assert!(contexts.iter().all(|c| *c == contexts[0]), "{contexts:?}");
    let paths: Vec<String> = s.headers.iter().map(|h| s.path(&h, src)).collect();
    let want = format!("a{}b", lexer::SEP);
    assert_eq!(paths, [want.clone(), want.clone(), want]);
    let first: Vec<String> = s.headers.iter().map(|h| s.first(&h, src)).collect();
    assert_eq!(first, ["a", "a", "a"]);
}

/// A scan made only to read a file lexes it as the full scan does (comments, inner lines,
/// what is left open; the keys but those of sealed inline tables), counts the same tables
/// and the same depth, and holds no records only edits read; a document read with it
/// reports the same problems.
fn read_scan_agrees(src: &[u8]) {
    let keep = crate::lex::Keep::MarkerLike;
    let full = lexer::scan_keeping(src, keep);
    let read = lexer::scan_to_read(src, keep);
    let text = String::from_utf8_lossy(src);
    assert_eq!(read.lexed.comments, full.lexed.comments, "{text:?}");
    assert_eq!(read.lexed.inner_lines, full.lexed.inner_lines, "{text:?}");
    assert_eq!(read.lexed.unclosed, full.lexed.unclosed, "{text:?}");
    // (A file lexed again numbers its inline tables in arrays apart: names, not contexts.)
    let all: Vec<_> = full.lexed.keys.iter().map(|k| k.name).collect();
    assert!(
        read.lexed.keys.iter().all(|k| all.contains(&k.name)),
        "{text:?}"
    );
    let (a, b) = (
        Document::parse_to_read(src, &Toml, None),
        Document::parse(src, &Toml),
    );
    assert_eq!(a.problems, b.problems, "{text:?}");
    assert_eq!(read.too_deep, full.too_deep);
    // A file lexed again may count the tables below inline tables in arrays twice: the
    // count is the size the fast check's index is made at.
    assert!(read.read_only >= Some(full.tables_len()), "{text:?}");
    assert_eq!(read.read_only, Some(read.tables_len()));
    assert_eq!(full.read_only, None);
    assert!(read.headers.is_empty() && read.stmts.is_empty() && read.string_lines.is_empty());
}

#[test]
fn a_scan_to_read_keeps_what_list_and_check_read() {
    read_scan_agrees(b"a = 1\n[t]\nb = {c = 1, d.e = 2}\n[[x]]\ny = [{z = 1}]\ns = '''\n#\n'''\n");
    // Inline tables whose keys repeat, or that a later key or header reaches into: every
    // key is recorded, and the repeats are reported as from a full scan.
    for src in [
        &b"x = {a = 1, a = 2}\n"[..],
        b"x = {a = 1}\nx.a = 2\n",
        b"x = {a = 1}\n[x]\na = 2\n",
        b"x = {a = {b = 1}, a = {b = 2}}\n",
        b"x = {a.b = 1, a.c = 2, a.b = 3}\n",
        b"[x]\na = 1\n[y]\nx = {a = 1}\n",
        // Headers whose table is made only once a key is met below them.
        b"[t]\n[t]\na = 1\n[u]\n[t]\na = 2\n",
        b"[t.x]\n[t]\nx.a = 1\n[t.x]\na = 2\n",
        b"[[a]]\n[a]\nk = 1\n[[a]]\n[a]\nk = 2\n",
        b"x = {a = 1}\n[x]\n[y]\na = 1\n",
        // A line that is not a header leaves the keys below it in the table above.
        b"[a]\n[\ra]\nk = 1\n[a]\nk = 2\n",
    ] {
        read_scan_agrees(src);
    }
    let read = Document::parse_to_read(b"x = {a = 1}\nx.a = 2\n", &Toml, None);
    assert!(
        read.problems
            .iter()
            .any(|p| p.kind == ProblemKind::DuplicateKey),
        "{:?}",
        read.problems
    );
    // Sealed inline tables that nothing reaches into: one key recorded a line.
    let src = b"x0 = {a = 1, b = {c = 2}}\nx1 = {a = 1, d.e = 3, d.f = 4}\n";
    read_scan_agrees(src);
    let read = lexer::scan_to_read(src, crate::lex::Keep::MarkerLike);
    assert_eq!(read.lexed.keys.len(), 2);
    let read = lexer::scan_to_read(b"[a]\n[b.c]\n", crate::lex::Keep::MarkerLike);
    assert_eq!(read.tables_len(), 3);
}

/// A document parsed only to read holds a scan without the table tree; asked for what an
/// edit needs, the format lexes the file again rather than answer from it.
#[test]
fn a_document_parsed_to_read_answers_edit_questions_from_a_full_scan() {
    let src = b"top = 1\n[t]\na = 1\nb = 2\n";
    let read = Document::parse_to_read(src, &Toml, None);
    let full = Document::parse(src, &Toml);
    let at = src.len();
    assert_eq!(
        Toml.assigned(&read, at),
        vec!["a".to_owned(), "b".to_owned()]
    );
    assert_eq!(Toml.assigned(&read, at), Toml.assigned(&full, at));
    assert!(Toml.check_input(&read).is_ok());
    let bad = b"[t]\n[t]\n";
    let read = Document::parse_to_read(bad, &Toml, None);
    assert!(Toml.check_input(&read).is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    #[test]
    fn a_scan_to_read_agrees_with_the_full_scan(parts in proptest::collection::vec(
        proptest::sample::select(TOML_FRAGMENTS), 0..80
    )) {
        read_scan_agrees(parts.concat().as_bytes());
    }
}

// ---------------------------------------------------------------- the fast validity check

/// Fragments that make valid TOML in any sequence (unique names aside).
const VALID_FRAGMENTS: &[&str] = &[
    // Scalars outside the fast check's own subset (toml_edit reads each token alone), valid
    // and not, and tokens that only look like them.
    "h = 0x1f\n",
    "h = 0o17\n",
    "h = 0b101\n",
    "h = 1_000\n",
    "h = 1e6\n",
    "h = -1.5E-3\n",
    "h = inf\n",
    "h = -nan\n",
    "h = 1979-05-27T07:32:00Z\n",
    "h = 1979-05-27 07:32:00.999+07:00\n",
    "h = 07:32:00\n",
    "h = 1979-05-27\n",
    "h = 0x\n",
    "h = 1__0\n",
    "h = 1979-13-01\n",
    "h = 1979-02-30\n",
    "h = 25:00:00\n",
    "h = 1979-05-27 \n",
    "h = 0b102\n",
    "h = 1e\n",
    "h = nanx\n",
    "h = 01\n",
    "h = [0x1, 1979-05-27, {i = inf}]\n",
    "[a]\n",
    "[a.b]\n",
    "[b . 'c']\n",
    "[[a]]\n",
    "[[a.d]]\n",
    "[[e]]\n",
    "k = 1\n",
    "k = -0.5\n",
    "k.x = true\n",
    "x = \"s # \\n \\u00e9\"\n",
    "\"k\" = 'lit'\n",
    "b = { p = 1, q.r = [1, {s = 2}] }\n",
    "a = [\n  1, # c\n  [2],\n]\n",
    "m = \"\"\"\nx \\\n  y\"\"\"\n",
    "n = '''\n'x'\n'''\n",
    "# comment\n",
    "\n",
    "\r\n",
    "   ",
    "z = 1979-05-27\n",
    "c = {}\n",
    "d = []\n",
    "f = 0x1f\n",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    #[test]
    fn the_fast_check_is_sure_only_of_what_toml_edit_accepts(parts in proptest::collection::vec(
        proptest::sample::select(VALID_FRAGMENTS), 0..30
    )) {
        let src = parts.concat();
        if super::sure::surely_valid(src.as_bytes()) {
            proptest::prop_assert!(toml_edit_accepts(src.as_bytes()), "{:?}", src);
        }
    }

    #[test]
    fn the_fast_check_is_sure_only_of_what_toml_edit_accepts_on_tomlish(
        parts in proptest::collection::vec(proptest::sample::select(TOML_FRAGMENTS), 0..60)
    ) {
        let src = parts.concat();
        if super::sure::surely_valid(src.as_bytes()) {
            proptest::prop_assert!(toml_edit_accepts(src.as_bytes()), "{:?}", src);
        }
    }

    #[test]
    fn the_fast_check_is_sure_only_of_what_toml_edit_accepts_on_bytes(
        src in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)
    ) {
        if super::sure::surely_valid(&src) {
            proptest::prop_assert!(toml_edit_accepts(&src), "{:?}", src);
        }
    }
}

#[test]
fn the_fast_check_is_often_sure_of_valid_sequences() {
    // The property above must not hold vacuously: most short sequences of the valid pieces
    // that toml_edit accepts are recognized.
    let mut sure = 0;
    let mut valid = 0;
    for a in VALID_FRAGMENTS {
        for b in VALID_FRAGMENTS {
            let src = format!("{a}{b}");
            if toml_edit_accepts(src.as_bytes()) {
                valid += 1;
                if super::sure::surely_valid(src.as_bytes()) {
                    sure += 1;
                }
            }
        }
    }
    assert!(valid > 200 && sure * 10 > valid * 7, "{sure} of {valid}");
}

#[test]
fn the_fast_check_is_sure_only_of_what_toml_edit_accepts_on_edge_cases() {
    let files: &[&str] = &[
        "- = 1\n",
        "_ = 1\n",
        "1979-05-27 = 1\n",
        "a.1.5 = 1\n",
        "true = 1\n",
        "inf = 1\n",
        "a = {b = [\n1]}\n",
        "a = {b = \"\"\"\nx\"\"\"}\n",
        "a = {b = '''\nx'''}\n",
        "a = '''''''\n",
        "a = \"\"\"\"\"\"\"\n",
        "a = \"\"\"\\\n\"\"\"\n",
        "a = \"\"\" \\ \n\"\"\"\n",
        "a = \"\"\"\\\n\n\n  \"\"\"\n",
        "a = \"\"\"\\\r\n\"\"\"\n",
        "a = \"\"\"\\ \t\r\n x\"\"\"\n",
        "[[a.b]]\n[a]\n",
        "[a.b.c]\n[a.b]\n[a]\n",
        "[a]\nb.c = 1\n[x]\n[a.d]\n",
        "[a.b]\nc = 1\n[a]\nd.e = 1\n",
        "a = +0\nb = -0.0\nc = 123456789012345678\nd = -123456789012345678\n",
        "a = 999999999999999.5\n",
        "a = 1.0000000000000000000000000000000000001\n",
        "a = [1 # c\n, 2]\n",
        "a = [\n#c\n]\n",
        "a=1#c",
        "\u{feff}",
        "\u{feff}\u{feff}a = 1\n",
        "a = \"\\U0010FFFF\"\n",
        "a = \"\\u0000\"\n",
        "a = \"\u{85}\"\n",
        "a = \"\u{2028}\"\n",
        "# \u{feff}\n",
        "\"\" = 1\n",
        "'' = 1\n",
        "\"\" = 1\n'' = 2\n",
        "a = {}\n[b]\n",
        "[a]\n[b.a]\n",
        "[\"a\"]\n[a.b]\n",
        "[[a]]\n[[a]]\n[a.b]\n[a.b.c]\n[[a]]\n[a.b]\n",
        "a = [{b = 1}, {b = 2}]\n",
        "a = [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]\n",
        "a = [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]\n",
        "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p = 1\n",
        "a = {b = {c = {d = 1}}}\n[x]\ny = 1\n",
        "[a]\n\"b\" = 1\n'c' = 2\nd = 3\n",
        "a = \"\"\"x\"\"\"y\n",
        "a = 1\n\n\n   \t\n",
        "\t[a]\n\tb = 1\n",
        "a = \"x\" \"y\"\n",
        "a = 1,\n",
        "a = [1],\n",
        "a = {} x\n",
        "[a]b\n",
        "a\t=\t1\n",
        "a . b = 1\n",
        "a . \"b\" = 1\n",
        "a = 00.5\n",
        "a = 0.5\n",
        "a = 5.\n",
        "a = -.5\n",
        "a = 1_000\n",
        "a = 0\n",
        "a = 0x\n",
        "a = tru\n",
        "a = true\n",
        "a = \"\\\"\"\n",
        "a = '\\'\n",
        "a = 'x\\' \n",
        "a = \"\"\"\n\"\"\"\"\"\n",
        "a = {b = 1, c = {d = 2}, e.f = 3}\n[g]\n",
        "[a]\nb = {}\n[a.c]\n",
        "[a.b]\n[a]\nc = 1\n[a.b.d]\n",
        "[a]\n[a.b]\nc.d = 1\n[a.b.c.e]\n",
        "x = 1\r\n[a]\r\n# c\r\nb = [\r\n1,\r\n]\r\n",
        "a = \"\"\"\r\nx\r\n\"\"\"\r\n",
        "a = '''\r\n'''\r\n",
        "[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n",
        "[a]\n[[a.b]]\n[a.b.c]\n[[a.b]]\n",
        "a = 123456789012345678.5\n",
        "a = [ 1 , 2 , ]\n",
        "a = [\n  1,\n  2\n  ,\n]\n",
        "a = { b = 1 }\n",
        "a = {b=1,c=2}\n",
        "[ a ]\n[[ b ]]\n",
        "[a . b]\n",
        "[ 'a' . \"b\" ]\n",
    ];
    let mut bad = Vec::new();
    for f in files {
        let s = super::sure::surely_valid(f.as_bytes());
        let t = toml_edit_accepts(f.as_bytes());
        if s && !t {
            bad.push(*f);
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}

#[test]
fn the_fast_check_agrees_with_toml_edit_on_tables_keys_and_headers_of_shared_names() {
    let frags: &[&str] = &[
        "[a]\n",
        "[a.b]\n",
        "[[a]]\n",
        "[[a.b]]\n",
        "[\"a\"]\n",
        "['a'.b]\n",
        "[b]\n",
        "[b.a]\n",
        "[[b]]\n",
        "[a.b.c]\n",
        "[[a.b.c]]\n",
        "a = 1\n",
        "b = 1\n",
        "c = 1\n",
        "a.b = 1\n",
        "b.c = 1\n",
        "\"b\".c = 2\n",
        "b = {}\n",
        "c = {a = 1}\n",
        "a = {b.c = 1}\n",
        "b = [{a = 1}]\n",
        "'a' = 3\n",
        "c.a = 1\n",
        "a.c = 2\n",
        "b.a.c = 1\n",
        "[c]\n",
        "[c.a]\n",
        "[[c]]\n",
        "a.b.c = 1\n",
        "c = []\n",
        "\"\" = 1\n",
        "[\"\"]\n",
        "b . c = 1\n",
    ];
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut sure = 0;
    for _ in 0..30_000 {
        let n = (next() % 8) as usize + 1;
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(frags[(next() % frags.len() as u64) as usize]);
        }
        if super::sure::surely_valid(s.as_bytes()) {
            sure += 1;
            assert!(toml_edit_accepts(s.as_bytes()), "{s:?}");
        }
    }
    // Not vacuous: many of the sequences are recognized.
    assert!(sure > 3_000, "{sure}");
}

#[test]
fn the_fast_check_finds_conflicts_within_each_inline_table() {
    for bad in [
        "x = {a = 1, a = 2}\n",
        "x = {a = 1, a.b = 2}\n",
        "x = {a.b = 1, a = 2}\n",
        "x = {a = {b = 1, b = 2}}\n",
        "x = {a = [{d = 1, d = 2}]}\n",
        "x = [{a = 1, a = 2}]\n",
        "x = {a = 1}\nx = {b = 1}\n",
    ] {
        assert!(!super::sure::surely_valid(bad.as_bytes()), "{bad:?}");
        assert!(!toml_edit_accepts(bad.as_bytes()), "{bad:?}");
    }
    for good in [
        "x = {a.b = 1, a.c = 2}\ny = {a = 1, b = {a = 1}}\n",
        "x = [{a = 1}, {a = 1}]\na = {a = 1}\n",
        "x0 = {a = 1}\nx1 = {a = 1}\n[t]\nx0 = {a = 1}\n",
    ] {
        assert!(super::sure::surely_valid(good.as_bytes()), "{good:?}");
        assert!(toml_edit_accepts(good.as_bytes()), "{good:?}");
    }
}
