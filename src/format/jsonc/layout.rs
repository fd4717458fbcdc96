//! Where a region goes and how its body is laid out: placement in a container (start, end,
//! a JSON Pointer), indentation, commas, and what a removal takes back.

use super::lexer::{TokenKind, Tokens};
use std::sync::Arc;

use super::scan::{self, Container, Kind, Member, Members, Scan, Want};
use crate::document::{Document, Region, line_end};

use crate::format::{Created, Fitted, Placement, Step};
use crate::lex::Span;

/// The structure of a document, with the file's indent unit and comma style.
pub(crate) struct View<'a> {
    src: &'a [u8],
    /// The scan with its container table.
    pub scan: Arc<Scan>,
    /// One level of indentation (`"  "`, `"    "`, `"\t"`).
    pub unit: Vec<u8>,
    /// True when the file has a trailing comma (a region's own, written because the file
    /// had one, included).
    pub trailing: bool,
}

/// Which end of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// Before the first member.
    Start,
    /// After the last member.
    End,
}

const fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The leading spaces and tabs of the line holding `offset`.
fn line_indent(src: &[u8], offset: usize) -> &[u8] {
    let mut ls = crate::document::line_start(src, offset);
    if ls == 0 && src.starts_with(b"\xef\xbb\xbf") {
        ls = 3;
    }
    let n = src[ls..].iter().take_while(|b| is_blank(**b)).count();
    &src[ls..ls + n]
}

/// True when only spaces and tabs precede `offset` on its line.
fn first_on_line(src: &[u8], offset: usize) -> bool {
    let mut k = offset;
    while k > 0 && is_blank(src[k - 1]) {
        k -= 1;
    }
    k == 0 || src[k - 1] == b'\n' || (k == 3 && src.starts_with(b"\xef\xbb\xbf"))
}

/// The file's indent unit: the most common step between a container's line and its first
/// member's line; a tab when that step is a tab; two spaces when nothing tells.
#[must_use]
pub(crate) fn indent_unit(src: &[u8], containers: &[Container]) -> Vec<u8> {
    shown_unit(src, containers).unwrap_or_else(|| b"  ".to_vec())
}

/// The indent unit the file shows, if any (see [`indent_unit`]).
#[must_use]
pub(crate) fn shown_unit(src: &[u8], containers: &[Container]) -> Option<Vec<u8>> {
    let mut counts = [0usize; 9];
    let mut tabs = 0usize;
    let mut seen = 0;
    for c in containers.iter().filter(|c| c.kind != Kind::Top) {
        let Some(first) = c.first else { continue };
        if !first_on_line(src, first) || memchr::memchr(b'\n', &src[c.open..first]).is_none() {
            continue;
        }
        let outer = line_indent(src, c.open);
        let inner = line_indent(src, first);
        let Some(step) = inner.strip_prefix(outer) else {
            continue;
        };
        if step.first() == Some(&b'\t') {
            tabs += 1;
        } else if !step.is_empty() && step.len() < counts.len() && step.iter().all(|b| *b == b' ') {
            counts[step.len()] += 1;
        } else {
            continue;
        }
        seen += 1;
        if seen >= 256 {
            break;
        }
    }
    let (best, n) = counts
        .iter()
        .enumerate()
        .max_by_key(|(w, n)| (**n, usize::MAX - *w))
        .map_or((2, 0), |(w, n)| (w, *n));
    if tabs > n {
        Some(b"\t".to_vec())
    } else if n == 0 {
        None
    } else {
        Some(vec![b' '; best])
    }
}

impl<'a> View<'a> {
    /// The structure of `doc`, with the members `members` selects: the table its parse
    /// carries (made on first use), or a scan of its own.
    #[must_use]
    pub(crate) fn new(doc: &Document<'a>, members: Members) -> Self {
        let scan = match super::carried(doc) {
            Some(c) => c.structure(doc.src, members),
            None => Arc::new(scan::scan(
                doc.src,
                Want {
                    structure: true,
                    members,
                    ..Want::default()
                },
            )),
        };
        Self::from_scan(doc, scan)
    }

    /// The view of `doc` with the members of the container that holds `offset`.
    #[must_use]
    pub(crate) fn at_offset(doc: &Document<'a>, offset: usize) -> Self {
        // With every container closed, a table the document already carries answers where
        // `offset` is as a probing scan would.
        if doc.lexed.unclosed.is_none()
            && let Some(s) = super::carried(doc).and_then(scan::Carried::any_structure)
        {
            let id = scan::container_at(&s.containers, doc.src.len(), offset);
            return Self::new(doc, Members::Of(id));
        }
        let probe = scan::scan(
            doc.src,
            Want {
                probe: Some(offset),
                ..Want::default()
            },
        )
        .probe;
        Self::new(doc, Members::Of(probe))
    }

    /// A view over an existing scan (which must record structure).
    #[must_use]
    pub(crate) fn from_scan(doc: &Document<'a>, scan: Arc<Scan>) -> Self {
        let unit = indent_unit(doc.src, &scan.containers);
        let trailing = !scan.trailing_commas.is_empty();
        Self {
            src: doc.src,
            scan,
            unit,
            trailing,
        }
    }

    /// The container with this id.
    #[must_use]
    pub(crate) fn container(&self, id: u32) -> Option<&Container> {
        self.scan.containers.get(id as usize)
    }

    /// The innermost object or array strictly containing `offset`, else the top level.
    #[must_use]
    pub(crate) fn container_at(&self, offset: usize) -> u32 {
        scan::container_at(&self.scan.containers, self.src.len(), offset)
    }

    /// The id of the root object or array.
    #[must_use]
    pub(crate) fn root(&self) -> Option<u32> {
        self.scan.containers.first()?.members.first()?.child
    }

    /// The offset where a new region goes at `edge` of container `id`, never inside a
    /// region of `doc`.
    ///
    /// # Errors
    /// When the container has no closing bracket.
    pub(crate) fn edge_offset(
        &self,
        doc: &Document<'_>,
        id: u32,
        edge: Edge,
    ) -> Result<usize, String> {
        let src = self.src;
        let c = self.container(id).ok_or("no such container")?;
        let close = c.close.ok_or_else(|| {
            "the container is never closed, so nothing can be placed in it".to_owned()
        })?;
        let (p, n) = match edge {
            Edge::Start => (c.open + 1, c.members.first().map_or(close, |m| m.start)),
            Edge::End => match c.members.last() {
                Some(m) => (m.comma.map_or(m.end, |k| k + 1), close),
                None => (c.open + 1, close),
            },
        };
        let le = line_end(src, p);
        if n < le || le > src.len() || src[le - 1] != b'\n' {
            return Ok(p);
        }
        let mut off = skip_inner(&self.scan, le);
        if off > n {
            return Ok(n);
        }
        if let Some(r) = doc
            .regions
            .iter()
            .find(|r| r.span().start < off && off < r.span().end)
        {
            off = match edge {
                Edge::Start => r.span().start,
                Edge::End => r.span().end,
            };
        }
        Ok(off)
    }

    /// Fits a new body at `offset`.
    #[must_use]
    pub(crate) fn fit_insert(&self, doc: &Document<'_>, offset: usize, body: &[u8]) -> Fitted {
        let src = self.src;
        let id = self.container_at(offset);
        let Some(c) = self.container(id) else {
            return Fitted {
                body: body.to_vec(),
                ..Fitted::default()
            };
        };
        let prev = c.members.iter().rev().find(|m| m.end <= offset);
        let next = c.members.iter().find(|m| m.start >= offset);
        let compact = offset > 0 && src[offset - 1] != b'\n';
        let indent = if c.kind == Kind::Top {
            Vec::new()
        } else {
            self.member_indent(c, next, prev)
        };
        let comma = c.kind != Kind::Top && (next.is_some() || self.trailing);
        let mut fitted = Fitted {
            body: self.fit_body(body, &indent, comma),
            indent,
            ..Fitted::default()
        };
        let eol = doc.eol.as_bytes();
        let missing_comma =
            c.kind != Kind::Top && next.is_none() && prev.is_some_and(|m| m.comma.is_none());
        if compact {
            if missing_comma {
                fitted.before.push(b',');
            }
            fitted.before.extend_from_slice(eol);
            match next {
                Some(_) => fitted.after.extend_from_slice(&fitted.indent),
                None => fitted.after.extend_from_slice(line_indent(src, c.open)),
            }
            let ws = src[offset..].iter().take_while(|b| is_blank(**b)).count();
            if ws > 0 {
                fitted
                    .extra
                    .push((Span::new(offset, offset + ws), Vec::new()));
            }
        } else if missing_comma && let Some(m) = prev {
            fitted.extra.push((Span::new(m.end, m.end), b",".to_vec()));
        }
        fitted
    }

    /// Fits a replacement body to `region`.
    #[must_use]
    pub(crate) fn fit_update(&self, region: &Region, body: &[u8]) -> Vec<u8> {
        let src = self.src;
        let indent = line_indent(
            src,
            region.begin.line().start + 1.min(region.begin.line().len()),
        )
        .to_vec();
        let comma = match self.container(region.begin.context()) {
            Some(c) if c.kind != Kind::Top => {
                self.trailing || c.members.iter().any(|m| m.start >= region.span().end)
            }
            _ => false,
        };
        self.fit_body(body, &indent, comma)
    }

    /// The comma a removal takes back: the one after the member before `region`, when
    /// nothing follows the region in its container and the file has no trailing commas.
    #[must_use]
    pub(crate) fn on_remove(&self, region: &Region) -> Vec<(Span, Vec<u8>)> {
        let Some(c) = self.container(region.begin.context()) else {
            return Vec::new();
        };
        if c.kind == Kind::Top || self.trailing {
            return Vec::new();
        }
        let span = region.span();
        if c.members.iter().any(|m| m.start >= span.end) {
            return Vec::new();
        }
        match c.members.iter().rev().find(|m| m.end <= span.start) {
            Some(Member { comma: Some(k), .. }) if *k < span.start => {
                vec![(Span::new(*k, *k + 1), Vec::new())]
            }
            _ => Vec::new(),
        }
    }

    fn member_indent(
        &self,
        c: &Container,
        next: Option<&Member>,
        prev: Option<&Member>,
    ) -> Vec<u8> {
        let src = self.src;
        let on_line = |m: &&Member| first_on_line(src, m.start);
        if let Some(m) = next.filter(on_line).or_else(|| prev.filter(on_line)) {
            return line_indent(src, m.start).to_vec();
        }
        if let Some(m) = c.members.iter().find(|m| first_on_line(src, m.start)) {
            return line_indent(src, m.start).to_vec();
        }
        let mut v = line_indent(src, c.open).to_vec();
        v.extend_from_slice(&self.unit);
        v
    }

    /// Re-indents `body` under `indent` and arranges its commas: none before a closing
    /// bracket unless the file uses trailing commas, and one after its last value exactly
    /// when `comma`.
    #[must_use]
    pub(crate) fn fit_body(&self, body: &[u8], indent: &[u8], comma: bool) -> Vec<u8> {
        let body = reindent(body, indent, &self.unit);
        fix_commas(&body, comma, self.trailing)
    }
}

/// The first line start at or after `offset` that does not begin inside a block comment.
fn skip_inner(scan: &Scan, offset: usize) -> usize {
    let inner = &scan.lexed.inner_lines;
    let i = inner.partition_point(|s| s.end <= offset);
    match inner.get(i) {
        Some(s) if s.start <= offset => s.end,
        _ => offset,
    }
}

/// Re-indents each line of `body`: `indent`, then one `unit` per container open at the
/// line's start (a line starting with closing brackets counts them as closed). Lines that
/// start inside a block comment are kept as they are; blank lines get no indentation.
#[must_use]
pub(crate) fn reindent(body: &[u8], indent: &[u8], unit: &[u8]) -> Vec<u8> {
    // Depth at each line start, and whether the line starts inside a block comment.
    let mut lines: Vec<(usize, usize, bool)> = vec![(0, 0, false)];
    let mut depth = 0usize;
    for t in Tokens::new(body) {
        match t.kind {
            TokenKind::LBrace | TokenKind::LBracket => depth += 1,
            TokenKind::RBrace | TokenKind::RBracket => depth = depth.saturating_sub(1),
            _ => {}
        }
        let text = t.span.of(body);
        let multi = matches!(
            t.kind,
            TokenKind::BlockComment | TokenKind::OpenBlockComment
        );
        for k in memchr::memchr_iter(b'\n', text) {
            let at = t.span.start + k + 1;
            if at < body.len() {
                lines.push((at, depth, multi && at < t.span.end));
            }
        }
    }
    let mut out = Vec::with_capacity(body.len() + lines.len() * (indent.len() + 4));
    for (i, &(start, depth, inner)) in lines.iter().enumerate() {
        let end = lines.get(i + 1).map_or(body.len(), |l| l.0);
        let line = &body[start..end];
        if inner {
            out.extend_from_slice(line);
            continue;
        }
        let ws = line.iter().take_while(|b| is_blank(**b)).count();
        let content = &line[ws..];
        if matches!(content.first(), None | Some(b'\r' | b'\n')) {
            out.extend_from_slice(content);
            continue;
        }
        let closers = Tokens::new(content)
            .take_while(|t| {
                matches!(
                    t.kind,
                    TokenKind::Ws | TokenKind::RBrace | TokenKind::RBracket
                )
            })
            .filter(|t| t.kind != TokenKind::Ws)
            .count();
        out.extend_from_slice(indent);
        for _ in 0..depth.saturating_sub(closers) {
            out.extend_from_slice(unit);
        }
        out.extend_from_slice(content);
    }
    out
}

/// Removes commas right before a closing bracket (unless `trailing`) and gives the body's
/// last value a comma exactly when `comma`.
#[must_use]
pub(crate) fn fix_commas(body: &[u8], comma: bool, trailing: bool) -> Vec<u8> {
    let sig: Vec<_> = Tokens::new(body).filter(|t| !t.kind.is_trivia()).collect();
    let mut drop: Vec<usize> = Vec::new();
    for w in sig.windows(2) {
        if w[0].kind == TokenKind::Comma
            && matches!(w[1].kind, TokenKind::RBrace | TokenKind::RBracket)
            && !trailing
        {
            drop.push(w[0].span.start);
        }
    }
    let mut add = None;
    match sig.last() {
        Some(t) if t.kind == TokenKind::Comma && !comma => drop.push(t.span.start),
        Some(t) if t.kind == TokenKind::Comma => {}
        Some(t) if comma => add = Some(t.span.end),
        _ => {}
    }
    let mut out = Vec::with_capacity(body.len() + 1);
    for (i, b) in body.iter().enumerate() {
        if drop.contains(&i) {
            continue;
        }
        out.push(*b);
        if add == Some(i + 1) {
            out.push(b',');
        }
    }
    out
}

/// A JSON Pointer's reference tokens (`~1` is `/`, `~0` is `~`); `""` and `"/"` both name
/// the root.
#[must_use]
pub(crate) fn pointer_tokens(pointer: &str) -> Vec<String> {
    if pointer.is_empty() || pointer == "/" {
        return Vec::new();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The decoded text of a string token (quotes included).
#[must_use]
pub(crate) fn decode_key(token: &[u8]) -> Option<String> {
    serde_json::from_slice(token).ok()
}

/// Opening and closing text for objects created along `tokens` (as in `"a": {` … `}`).
#[must_use]
pub(crate) fn wrap(tokens: &[String], eol: &str) -> (Vec<u8>, Vec<u8>) {
    let mut pre = Vec::new();
    let mut post = Vec::new();
    for t in tokens {
        let key = serde_json::to_string(t).unwrap_or_else(|_| format!("\"{t}\""));
        pre.extend_from_slice(format!("{key}: {{{eol}").as_bytes());
        post.extend_from_slice(format!("}}{eol}").as_bytes());
    }
    (pre, post)
}

/// Resolves a placement for a new region inside the container at `pointer`, creating the
/// missing objects at its end as a wrap.
///
/// # Errors
/// A message when the pointer runs into a value that is not an object.
pub(crate) fn place_pointer(
    view: &View<'_>,
    doc: &Document<'_>,
    pointer: &str,
    edge: Edge,
) -> Result<Placement, String> {
    let src = doc.src;
    let root = view.root().ok_or_else(|| {
        "the file holds no JSON object or array to put the region in; write `{}` into it first"
            .to_owned()
    })?;
    let tokens = pointer_tokens(pointer);
    let mut id = root;
    let mut walked = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let c = view.container(id).ok_or("no such container")?;
        if let Some(r) = doc
            .regions
            .iter()
            .find(|r| r.body().start <= c.open && c.open < r.body().end)
        {
            // The path leads into a managed region: a region cannot go inside another, so
            // the new one goes before it, with the path created (a duplicate key then
            // refuses the edit unless --force).
            return Ok(Placement {
                offset: r.span().start,
                wrap: Some(wrap(&tokens[i.saturating_sub(1)..], doc.eol)),
                ..Placement::default()
            });
        }
        let found = match c.kind {
            Kind::Object => c
                .members
                .iter()
                .find(|m| m.key.and_then(|k| decode_key(k.of(src))).as_deref() == Some(t.as_str())),
            Kind::Array => {
                let idx = t
                    .parse::<usize>()
                    .ok()
                    .filter(|_| t == "0" || !t.starts_with('0'));
                match idx.and_then(|k| c.members.get(k)) {
                    Some(m) => Some(m),
                    None => {
                        return Err(format!(
                            "--at {pointer}: `{walked}` is an array without an element `{t}`; \
                             only objects are created along a pointer"
                        ));
                    }
                }
            }
            Kind::Top => None,
        };
        walked.push('/');
        walked.push_str(&t.replace('~', "~0").replace('/', "~1"));
        match found {
            Some(Member {
                child: Some(child), ..
            }) => id = *child,
            Some(_) => {
                return Err(format!(
                    "--at {pointer}: `{walked}` holds a value that is not an object or array"
                ));
            }
            None => {
                // A missing object is made as plain structure outside the region, one level
                // at a time (docs/reconcile.md, containers).
                let offset = view.edge_offset(doc, id, edge)?;
                let path: Vec<crate::format::Step> = tokens[..=i]
                    .iter()
                    .map(|k| crate::format::Step {
                        key: k.clone(),
                        ..crate::format::Step::default()
                    })
                    .collect();
                return Ok(create_member(view, doc, offset, &path[i], &path));
            }
        }
    }
    if let Some(c) = view.container(id)
        && let Some(r) = doc
            .regions
            .iter()
            .find(|r| r.body().start <= c.open && c.open < r.body().end)
    {
        let last = tokens.len().saturating_sub(1);
        return Ok(Placement {
            offset: r.span().start,
            wrap: (!tokens.is_empty()).then(|| wrap(&tokens[last..], doc.eol)),
            ..Placement::default()
        });
    }
    Ok(Placement {
        offset: view.edge_offset(doc, id, edge)?,
        wrap: None,
        ..Placement::default()
    })
}

/// Creates the member `step` (an empty object or array) at `offset` of its container, laid
/// out as a region's member would be.
pub(super) fn create_member(
    view: &View<'_>,
    doc: &Document<'_>,
    offset: usize,
    step: &Step,
    path: &[Step],
) -> Placement {
    let key = serde_json::to_string(&step.key).unwrap_or_else(|_| format!("\"{}\"", step.key));
    let value = if step.array { "[]" } else { "{}" };
    let body = format!("{key}: {value}{}", doc.eol);
    let fitted = view.fit_insert(doc, offset, body.as_bytes());
    let mut text = fitted.before;
    text.extend_from_slice(&fitted.body);
    text.extend_from_slice(&fitted.after);
    let mut create = vec![(Span::new(offset, offset), text)];
    create.extend(fitted.extra);
    let pointer: String = path
        .iter()
        .map(|s| format!("/{}", s.key.replace('~', "~0").replace('/', "~1")))
        .collect();
    Placement {
        offset,
        create,
        created: Some(Created {
            path: pointer,
            ..Created::default()
        }),
        ..Placement::default()
    }
}
