//! The marker line grammar: parsing a comment into a [`Marker`] (tolerant) and writing one
//! (canonical).
//!
//! ```text
//! marker  = keyword SP [owner SP] "MANAGED" [SP name] *(SP attr) [SP note]
//! keyword = "BEGIN" / "END"          ; any case when read, upper case when written
//! owner   = word *(SP word)          ; at most 3 words
//! name    = word *(SP word)          ; up to the first attr or note
//! attr    = key "=" value            ; hash=<hex> on BEGIN; unknown attrs kept
//! note    = ("--" / "—" / "–") SP text
//! ```
//!
//! Parsing is written with nom over the comment's bytes; `grammars/marker.ebnf` is the same
//! grammar for a person.

use nom::{
    IResult, Parser,
    branch::alt,
    bytes::complete::{tag, tag_no_case, take_till1, take_while, take_while1},
    combinator::{opt, rest},
    multi::many0,
    sequence::preceded,
};

/// A cheap exact gate before [`parse`] and [`near_miss`], which most
/// comments fail: both need a first word (after the opener) that is a keyword or close to
/// one (at most 7 characters, or starting with `BEGIN`/`END` in any case), and a word that is or
/// is close to `MANAGED` (which keeps one of its three-letter pieces). False means neither
/// can match; a property test checks it against both.
pub(crate) fn may_be_marker(text: &[u8]) -> bool {
    let Some(body) = strip_opener(text.trim_ascii()) else {
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

/// Whether a marker opens or closes a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `BEGIN`.
    Begin,
    /// `END`.
    End,
}

impl Kind {
    /// The keyword as written.
    #[must_use]
    pub const fn keyword(self) -> &'static str {
        match self {
            Self::Begin => "BEGIN",
            Self::End => "END",
        }
    }
}

/// A parsed marker comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// BEGIN or END.
    pub kind: Kind,
    /// Words before `MANAGED`, single-spaced (may be empty).
    pub owner: String,
    /// Words after `MANAGED` up to the first attribute or note, single-spaced (may be empty).
    pub name: String,
    /// `key=value` attributes in the order written, `hash` included.
    pub attrs: Vec<(String, String)>,
    /// The note after `--`, `—` or `–`, as written (without the dash), if any.
    pub note: Option<String>,
    /// The dash that introduced the note (`--`, `—` or `–`).
    pub note_dash: Option<String>,
}

/// What identifies a region: owner and name. BEGIN and END pair when their identities are
/// equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The owner (may be empty).
    pub owner: String,
    /// The name (may be empty).
    pub name: String,
}

impl Identity {
    /// An identity from its parts, whitespace collapsed.
    #[must_use]
    pub fn new(owner: &str, name: &str) -> Self {
        Self {
            owner: collapse(owner),
            name: collapse(name),
        }
    }

    /// Same identity ignoring case: a near miss between a BEGIN and an END.
    #[must_use]
    pub fn eq_ignore_case(&self, other: &Self) -> bool {
        self.owner.eq_ignore_ascii_case(&other.owner) && self.name.eq_ignore_ascii_case(&other.name)
    }
}

impl std::str::FromStr for Identity {
    type Err = ();

    /// Parses the written form `OWNER MANAGED name` (as [`Identity`]'s `Display` writes it):
    /// the words before the first `MANAGED` are the owner, the words after it the name.
    fn from_str(s: &str) -> Result<Self, ()> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "MANAGED").ok_or(())?;
        Ok(Self::new(
            &words[..at].join(" "),
            &words[at + 1..].join(" "),
        ))
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::with_capacity(3);
        if !self.owner.is_empty() {
            parts.push(self.owner.as_str());
        }
        parts.push("MANAGED");
        if !self.name.is_empty() {
            parts.push(self.name.as_str());
        }
        f.write_str(&parts.join(" "))
    }
}

impl Marker {
    /// The identity this marker opens or closes.
    #[must_use]
    pub fn identity(&self) -> Identity {
        Identity {
            owner: self.owner.clone(),
            name: self.name.clone(),
        }
    }

    /// The value of `hash=` (BEGIN only), if present.
    #[must_use]
    pub fn hash(&self) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == "hash")
            .map(|(_, v)| v.as_str())
    }

    /// Writes the marker in its canonical form after `opener` (`#`, `//`): upper-case
    /// keyword, single spaces, attributes then note as they were.
    #[must_use]
    pub fn render(&self, opener: &str) -> String {
        let mut out = format!("{opener} {} ", self.kind.keyword());
        out.push_str(&self.identity().to_string());
        for (k, v) in &self.attrs {
            out.push(' ');
            out.push_str(k);
            out.push('=');
            out.push_str(v);
        }
        if let Some(note) = &self.note {
            out.push(' ');
            out.push_str(self.note_dash.as_deref().unwrap_or("--"));
            out.push(' ');
            out.push_str(note);
        }
        out
    }

    /// A new BEGIN marker with an optional hash.
    #[must_use]
    pub fn begin(id: &Identity, hash: Option<&str>) -> Self {
        Self {
            kind: Kind::Begin,
            owner: id.owner.clone(),
            name: id.name.clone(),
            attrs: hash
                .map(|h| vec![("hash".to_owned(), h.to_owned())])
                .unwrap_or_default(),
            note: None,
            note_dash: None,
        }
    }

    /// A new END marker.
    #[must_use]
    pub fn end(id: &Identity) -> Self {
        Self {
            kind: Kind::End,
            ..Self::begin(id, None)
        }
    }

    /// Sets (or with `None` removes) the `hash` attribute, keeping the other attributes.
    pub fn set_hash(&mut self, hash: Option<&str>) {
        match (self.attrs.iter().position(|(k, _)| k == "hash"), hash) {
            (Some(i), Some(h)) => h.clone_into(&mut self.attrs[i].1),
            (Some(i), None) => {
                self.attrs.remove(i);
            }
            (None, Some(h)) => self.attrs.insert(0, ("hash".to_owned(), h.to_owned())),
            (None, None) => {}
        }
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn sp(i: &[u8]) -> IResult<&[u8], &[u8]> {
    take_while1(is_space).parse(i)
}

fn word(i: &[u8]) -> IResult<&[u8], &[u8]> {
    take_till1(is_space).parse(i)
}

fn keyword(i: &[u8]) -> IResult<&[u8], Kind> {
    alt((
        tag_no_case("begin").map(|_| Kind::Begin),
        tag_no_case("end").map(|_| Kind::End),
    ))
    .parse(i)
}

fn is_note_dash(w: &[u8]) -> bool {
    w == b"--" || w == "—".as_bytes() || w == "–".as_bytes()
}

fn is_attr(w: &[u8]) -> bool {
    match memchr::memchr(b'=', w) {
        Some(eq) => {
            eq > 0
                && w[..eq]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        }
        None => false,
    }
}

/// The words of a marker after the keyword: everything up to end of text, split on blanks.
fn words(i: &[u8]) -> IResult<&[u8], Vec<&[u8]>> {
    many0(preceded(sp, word)).parse(i)
}

/// Strips the comment opener: `#` (any number), `//`, `/*` with its closing `*/`, `<!--`
/// with its closing `-->`, `;`, `%` or `!` (any number), `--`, `"`, or the word `REM`.
///
/// Which openers a file may use is the lexer's decision: it reports only real comments.
pub(crate) fn strip_opener(text: &[u8]) -> Option<&[u8]> {
    let rem_word = |i| -> IResult<&[u8], &[u8]> {
        let (r, _) = tag_no_case("rem").parse(i)?;
        match r.first() {
            None => Ok((r, r)),
            Some(c) if is_space(*c) => Ok((r, r)),
            Some(_) => Err(nom::Err::Error(nom::error::Error::new(
                i,
                nom::error::ErrorKind::Tag,
            ))),
        }
    };
    let body: IResult<&[u8], &[u8]> = alt((
        preceded(tag("/*"), rest).map(|b: &[u8]| b.strip_suffix(b"*/").unwrap_or(b)),
        preceded(tag("//"), rest),
        preceded(take_while1(|b| b == b'#'), rest),
        preceded(tag("<!--"), rest).map(|b: &[u8]| b.strip_suffix(b"-->").unwrap_or(b)),
        preceded(take_while1(|b| b == b';' || b == b'%' || b == b'!'), rest),
        preceded(tag("--"), rest),
        preceded(tag("\""), rest),
        rem_word,
    ))
    .parse(text);
    body.ok().map(|(_, b)| b)
}

/// Parses a comment's text (opener included, line ending excluded) as a marker.
/// Returns `None` when it is not a marker: no BEGIN/END keyword first, or no `MANAGED` word.
#[must_use]
pub(crate) fn parse(text: &[u8]) -> Option<Marker> {
    let body = strip_opener(trim(text))?;
    let body = trim(body);
    let (after_kw, kind) = keyword(body).ok()?;
    // The keyword must be a whole word: `BEGINNING` is not a marker.
    if !after_kw.is_empty() && !is_space(after_kw[0]) {
        return None;
    }
    let (_, ws) = words(after_kw).ok()?;
    let managed = ws.iter().position(|w| w.eq_ignore_ascii_case(b"MANAGED"))?;
    if managed > 3 {
        return None;
    }
    let owner = join(&ws[..managed]);
    let mut i = managed + 1;
    let mut name_words = Vec::new();
    while i < ws.len() && !is_attr(ws[i]) && !is_note_dash(ws[i]) {
        name_words.push(ws[i]);
        i += 1;
    }
    let mut attrs = Vec::new();
    while i < ws.len() && is_attr(ws[i]) {
        let w = String::from_utf8_lossy(ws[i]);
        if let Some((k, v)) = w.split_once('=') {
            attrs.push((k.to_owned(), v.to_owned()));
        }
        i += 1;
    }
    let (mut note, mut note_dash) = (None, None);
    if i < ws.len() {
        // A note: a dash word then free text; anything else left over is kept as a note too
        // (so no byte of the marker is dropped when it is rewritten).
        if is_note_dash(ws[i]) {
            note_dash = Some(String::from_utf8_lossy(ws[i]).into_owned());
            i += 1;
        }
        note = Some(join(&ws[i..]));
    }
    Some(Marker {
        kind,
        owner,
        name: join(&name_words),
        attrs,
        note,
        note_dash,
    })
}

fn join(ws: &[&[u8]]) -> String {
    ws.iter()
        .map(|w| String::from_utf8_lossy(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// A comment that is almost a marker, with the marker it was most likely meant to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NearMiss {
    /// The marker the comment would be once corrected.
    pub fixed: Marker,
    /// What is wrong, for a person ("`BEGN` is not a keyword", ...).
    pub what: String,
}

fn close_to(word: &[u8], target: &str, max: usize) -> bool {
    let w = String::from_utf8_lossy(word).to_ascii_uppercase();
    w != target && strsim::damerau_levenshtein(&w, target) <= max
}

/// Recognizes a near miss: a misspelled keyword (`BEGN`, `ENDD`) or `MANAGED` (`MANGED`), a
/// missing space (`BEGINZYLOS`, `ZYLOSMANAGED`), given the comment's text with its opener.
/// Returns `None` for real markers and for comments that are not close to one.
#[must_use]
pub(crate) fn near_miss(text: &[u8]) -> Option<NearMiss> {
    // Cheap gate first: a near miss has a word close to MANAGED, which keeps at least one of
    // its three-letter pieces (one or two typos leave some intact); most comments have none.
    let close_to_managed = text.windows(3).any(|w| {
        let w = [w[0] | 0x20, w[1] | 0x20, w[2] | 0x20];
        matches!(&w, b"man" | b"ana" | b"nag" | b"age" | b"ged")
    });
    if !close_to_managed || parse(text).is_some() {
        return None;
    }
    let body = trim(strip_opener(trim(text))?);
    let (_, ws) = words_from(body).ok()?;
    let mut fixed: Vec<Vec<u8>> = Vec::with_capacity(ws.len() + 2);
    let mut what = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let upper = w.to_ascii_uppercase();
        if i == 0 && close_to(w, "BEGIN", 2) && w.len() > 2 {
            what.push(format!(
                "`{}` should be `BEGIN`",
                String::from_utf8_lossy(w)
            ));
            fixed.push(b"BEGIN".to_vec());
        } else if i == 0 && close_to(w, "END", 1) && w.len() > 1 {
            what.push(format!("`{}` should be `END`", String::from_utf8_lossy(w)));
            fixed.push(b"END".to_vec());
        } else if i == 0 && (upper.starts_with(b"BEGIN") || upper.starts_with(b"END")) {
            // A missing space after the keyword: `BEGINZYLOS`.
            let k = if upper.starts_with(b"BEGIN") { 5 } else { 3 };
            what.push(format!(
                "a space is missing after `{}`",
                String::from_utf8_lossy(&w[..k])
            ));
            fixed.push(w[..k].to_vec());
            fixed.push(w[k..].to_vec());
        } else if i > 0 && close_to(w, "MANAGED", 2) && w.len() > 4 {
            what.push(format!(
                "`{}` should be `MANAGED`",
                String::from_utf8_lossy(w)
            ));
            fixed.push(b"MANAGED".to_vec());
        } else if i > 0 && upper.len() > 7 && memchr::memmem::find(&upper, b"MANAGED").is_some() {
            // A missing space around MANAGED: `ZYLOSMANAGED`, `MANAGEDhooks`.
            let at = memchr::memmem::find(&upper, b"MANAGED").unwrap_or(0);
            what.push(format!(
                "spaces are missing around `MANAGED` in `{}`",
                String::from_utf8_lossy(w)
            ));
            for part in [&w[..at], &w[at..at + 7], &w[at + 7..]] {
                if !part.is_empty() {
                    fixed.push(part.to_vec());
                }
            }
        } else {
            fixed.push(w.to_vec());
        }
    }
    if what.is_empty() {
        return None;
    }
    let line = [b"# ".as_slice(), &fixed.join(&b' ')].concat();
    let m = parse(&line)?;
    Some(NearMiss {
        fixed: m,
        what: what.join(", "),
    })
}

fn words_from(b: &[u8]) -> IResult<&[u8], Vec<&[u8]>> {
    let (i, first) = opt(take_while(|c: u8| !is_space(c))).parse(b)?;
    let (i, mut more) = words(i)?;
    if let Some(f) = first.filter(|f| !f.is_empty()) {
        more.insert(0, f);
    }
    Ok((i, more))
}

#[cfg(test)]
mod tests {

    #[test]
    fn identity_written_form_parses_back() {
        for (owner, name) in [
            ("ZYLOS", "hooks"),
            ("", "conda initialize"),
            ("A B", ""),
            ("", ""),
        ] {
            let id = Identity::new(owner, name);
            assert_eq!(id.to_string().parse::<Identity>(), Ok(id));
        }
        assert!("no keyword here".parse::<Identity>().is_err());
    }

    use super::*;

    fn p(s: &str) -> Marker {
        parse(s.as_bytes()).unwrap_or_else(|| panic!("not a marker: {s}"))
    }

    #[test]
    fn production_marker_begin_with_owner_name_hash() {
        let m = p("# BEGIN ZYLOS MANAGED hooks hash=3f2a9c1b0d4e");
        assert_eq!(m.kind, Kind::Begin);
        assert_eq!(m.owner, "ZYLOS");
        assert_eq!(m.name, "hooks");
        assert_eq!(m.hash(), Some("3f2a9c1b0d4e"));
        assert_eq!(m.identity().to_string(), "ZYLOS MANAGED hooks");
    }

    #[test]
    fn production_keyword_any_case_and_no_space_after_opener() {
        let m = p("#begin zylos Managed hooks");
        assert_eq!(m.kind, Kind::Begin);
        assert_eq!(m.owner, "zylos");
        let e = p("#End ZYLOS MANAGED hooks");
        assert_eq!(e.kind, Kind::End);
    }

    #[test]
    fn production_owner_is_optional_and_at_most_three_words() {
        let m = p("# END MANAGED x");
        assert_eq!(m.owner, "");
        assert_eq!(m.name, "x");
        assert_eq!(p("# BEGIN A B C MANAGED x").owner, "A B C");
        assert!(parse(b"# BEGIN A B C D MANAGED x").is_none());
    }

    #[test]
    fn production_name_is_optional_and_multi_word() {
        assert_eq!(p("# BEGIN ANSIBLE MANAGED BLOCK").name, "BLOCK");
        assert_eq!(p("# BEGIN X MANAGED").name, "");
        assert_eq!(p("# BEGIN X MANAGED  two   words ").name, "two words");
    }

    #[test]
    fn production_attr_unknown_kept_in_order() {
        let mut m = p("# BEGIN X MANAGED n v=2 hash=abc");
        assert_eq!(
            m.attrs,
            vec![("v".into(), "2".into()), ("hash".into(), "abc".into())]
        );
        m.set_hash(Some("def"));
        assert_eq!(m.render("#"), "# BEGIN X MANAGED n v=2 hash=def");
    }

    #[test]
    fn production_note_with_each_dash() {
        for dash in ["--", "—", "–"] {
            let m = p(&format!("# BEGIN X MANAGED n hash=1 {dash} do not edit"));
            assert_eq!(m.note.as_deref(), Some("do not edit"));
            assert_eq!(m.identity().to_string(), "X MANAGED n");
            assert_eq!(
                m.render("#"),
                format!("# BEGIN X MANAGED n hash=1 {dash} do not edit")
            );
        }
    }

    #[test]
    fn production_opener_variants() {
        assert_eq!(p("// BEGIN X MANAGED n").name, "n");
        assert_eq!(p("/* END X MANAGED n */").name, "n");
        assert_eq!(p("/* END X MANAGED n */  ").name, "n");
        assert_eq!(p("## BEGIN X MANAGED n").name, "n");
    }

    #[test]
    fn not_markers() {
        for s in [
            "# BEGINNING X MANAGED n",
            "# just a comment",
            "# BEGIN something",
            "#",
            "",
            "# MANAGED BEGIN x",
        ] {
            assert!(parse(s.as_bytes()).is_none(), "{s}");
        }
    }

    #[test]
    fn canonical_render_collapses_spacing() {
        let m = p("#   begin   ZYLOS   managed   hooks   hash=00");
        assert_eq!(m.render("#"), "# BEGIN ZYLOS MANAGED hooks hash=00");
        let e = Marker::end(&m.identity());
        assert_eq!(e.render("//"), "// END ZYLOS MANAGED hooks");
    }

    #[test]
    fn non_utf8_bytes_do_not_panic() {
        let m = parse(b"# BEGIN Z MANAGED caf\xe9").map(|m| m.name);
        assert_eq!(m.as_deref(), Some("caf\u{fffd}"));
    }

    #[test]
    fn near_miss_candidates() {
        assert!(near_miss(b"# BEGN ZYLOS MANAGED x").is_some());
        assert!(near_miss(b"# BEGIN ZYLOS MANGED x").is_some());
        assert!(near_miss(b"# a plain comment").is_none());
        assert!(near_miss(b"# BEGIN ZYLOS MANAGED x").is_none());
        assert!(near_miss(b"# Begin the managed section below").is_none());
    }

    #[test]
    fn near_miss_fixes() {
        let fix = |s: &str| near_miss(s.as_bytes()).map(|n| n.fixed.render("#"));
        assert_eq!(
            fix("# BEGN ZYLOS MANAGED x hash=ab"),
            Some("# BEGIN ZYLOS MANAGED x hash=ab".into())
        );
        assert_eq!(
            fix("# ENDD ZYLOS MANAGED x"),
            Some("# END ZYLOS MANAGED x".into())
        );
        assert_eq!(
            fix("# BEGIN ZYLOS MANGED x"),
            Some("# BEGIN ZYLOS MANAGED x".into())
        );
        assert_eq!(
            fix("# BEGINZYLOS MANAGED x"),
            Some("# BEGIN ZYLOS MANAGED x".into())
        );
        assert_eq!(
            fix("# END ZYLOSMANAGED x"),
            Some("# END ZYLOS MANAGED x".into())
        );
        assert_eq!(fix("# BEGIN ZYLOS MANAGED x"), None);
        assert_eq!(fix("# some comment"), None);
    }
}
