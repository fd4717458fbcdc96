//! The passes: the forward pass (template entries into the file), the reverse pass (entries
//! the template no longer has, or all of an owner's entries on removal) and the listing.
//!
//! The template and the registry are merged into one tree of wanted entries; the tree is
//! walked together with the file, looking only inside the containers it names, and every
//! decision becomes a splice (see `splice`). The rules for one entry are in `decide`.

mod decide;

use decide::Op;

use std::borrow::Cow;
use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::error::{EntryError, EntryWarning, Input, Location, SyntaxKind, WarningKind};
use super::keys::{Field, KeyRule, PathNorm, Seg};
use super::registry::{RegisteredEntry, Registry};
use super::scan::{self, ContainerSpan, Layout, ScanError};
use super::splice::{self, At, Edit, NewItem};
use super::tree::{Item, Kind, Node, Wanted};
use super::value::Json;
use super::{EntryAction, EntryOptions, EntryReport, EntryState};

/// What a walk does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Forward and reverse pass against a template.
    Sync,
    /// Uninstall: every entry of the owner goes through the reverse pass.
    Remove,
    /// Report states only.
    List,
}

/// Where an element of a keyed array stands before the write.
enum Place {
    /// Item `i` of the array as read.
    Existing(usize),
    /// The `k`-th element appended (or that would be).
    Appended(usize),
}

/// What becomes of a container value after its walk.
enum Fate {
    Keep,
    Gone,
    Replace(Json),
}

/// The result of a walk.
pub(crate) struct Outcome {
    pub(crate) new: Vec<u8>,
    pub(crate) registry: Registry,
    pub(crate) entries: Vec<EntryReport>,
    pub(crate) warnings: Vec<EntryWarning>,
    /// Containers the owner created that it no longer wants but that stay, not empty: they
    /// are handed to another owner with entries inside (see `super::hand_over`).
    pub(crate) orphans: Vec<String>,
}

pub(crate) struct Walk<'a, 'o> {
    src: &'a [u8],
    layout: Layout,
    mode: Mode,
    opts: &'a EntryOptions<'o>,
    owner: &'a str,
    have_registry: bool,
    norm: PathNorm<'a>,
    edits: Vec<Edit>,
    reports: Vec<EntryReport>,
    warnings: Vec<(WarningKind, String, Option<usize>)>,
    reg: Registry,
    drift: Vec<String>,
    removals: usize,
    orphans: Vec<String>,
    /// Containers other owners registered whole (an element of an array keyed by its
    /// whole value, an object member): the hash of the value, and the owner. A sync never
    /// writes inside one (it adds its own element beside it, or refuses).
    theirs: FxHashMap<String, String>,
}

fn scan_err(src: &[u8], e: ScanError) -> EntryError {
    EntryError::Syntax {
        input: Input::Target,
        location: scan::location(src, e.at),
        kind: SyntaxKind::Other("unexpected text".to_owned()),
    }
}

fn pointer_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

impl<'a, 'o> Walk<'a, 'o> {
    pub(crate) fn new(
        src: &'a [u8],
        mode: Mode,
        opts: &'a EntryOptions<'o>,
        owner: &'a str,
        have_registry: bool,
    ) -> Walk<'a, 'o> {
        Walk {
            src,
            layout: scan::layout(src, None),
            mode,
            opts,
            owner,
            have_registry,
            norm: PathNorm::new(opts.home.as_deref(), opts.resolve),
            edits: Vec::new(),
            reports: Vec::new(),
            warnings: Vec::new(),
            reg: Registry::default(),
            drift: Vec::new(),
            removals: 0,
            orphans: Vec::new(),
            theirs: FxHashMap::default(),
        }
    }

    /// The containers other owners registered whole (see `theirs`).
    pub(crate) fn with_theirs(mut self, others: &[(String, Registry)]) -> Self {
        for (other, reg) in others.iter().filter(|(o, _)| o != self.owner) {
            for r in reg.entries.values() {
                if matches!(
                    r.base,
                    serde_json::Value::Object(_) | serde_json::Value::Array(_)
                ) {
                    self.theirs.insert(r.hash.clone(), other.clone());
                }
            }
        }
        self
    }

    /// The other owner that registered the container value at `start` whole, if any.
    fn registered_whole_by(&self, start: usize) -> Result<Option<String>, EntryError> {
        if self.theirs.is_empty() || self.mode != Mode::Sync {
            return Ok(None);
        }
        if !matches!(self.src.get(start), Some(b'{' | b'[')) {
            return Ok(None);
        }
        Ok(self.theirs.get(&self.file_value(start)?.hash()).cloned())
    }

    /// Runs the walk over the whole document.
    pub(crate) fn run(mut self, wanted: &Wanted) -> Result<Outcome, EntryError> {
        let src = self.src;
        let new = match scan::root_start(src) {
            None => {
                let json = self.build_new(&wanted.root, "", "");
                let bom = if src.starts_with(scan::BOM) {
                    scan::BOM
                } else {
                    &[]
                };
                match json {
                    Some(Json::Obj(members)) if !members.is_empty() => {
                        let items: Vec<NewItem> = members
                            .into_iter()
                            .map(|(k, v)| NewItem::Member(k, v))
                            .collect();
                        let mut out = bom.to_vec();
                        out.extend_from_slice(
                            splice::new_document(&self.layout, &items).as_bytes(),
                        );
                        out
                    }
                    _ => src.to_vec(),
                }
            }
            Some(i) if src[i] == b'{' => {
                let root = scan::container(src, i).map_err(|e| scan_err(src, e))?;
                self.layout = scan::layout(src, Some(&root));
                self.reg.blanks.clone_from(&wanted.blanks);
                self.walk_object(&wanted.root, &root, "", "")?;
                let edits = std::mem::take(&mut self.edits);
                splice::apply(src, edits)
                    .ok_or_else(|| EntryError::InvalidOutput("overlapping edits".to_owned()))?
            }
            Some(i) => {
                return Err(EntryError::NotAnObject {
                    input: Input::Target,
                    location: scan::location(src, i),
                });
            }
        };
        if !self.drift.is_empty() {
            return Err(EntryError::Drift(self.drift));
        }
        if new != src
            && let Err((_, loc, kind)) = scan::validate(&new, Input::Target)
        {
            return Err(EntryError::InvalidOutput(format!("{loc}: {kind}")));
        }
        let lines = LineIndex::new(src, self.warnings.iter().any(|w| w.2.is_some()));
        let warnings = self
            .warnings
            .into_iter()
            .map(|(kind, key, at)| EntryWarning {
                kind,
                key,
                location: at.map(|a| lines.location(src, a)),
            })
            .collect();
        Ok(Outcome {
            new,
            registry: self.reg,
            entries: self.reports,
            warnings,
            orphans: self.orphans,
        })
    }

    fn warn(&mut self, kind: WarningKind, key: &str, at: Option<usize>) {
        self.warnings.push((kind, key.to_owned(), at));
    }

    fn report(&mut self, key: &str, pointer: &str, state: EntryState, action: EntryAction) {
        self.reports.push(EntryReport {
            owner: self.owner.to_owned(),
            key: key.to_owned(),
            pointer: pointer.to_owned(),
            state,
            action,
        });
    }

    fn keep(&mut self, key: &str, r: RegisteredEntry) {
        self.reg.entries.insert(key.to_owned(), r);
    }

    /// Builds the value of a container the file does not have; `None` when nothing of it is
    /// to be written.
    fn build_new(&mut self, node: &Node, key: &str, ptr: &str) -> Option<Json> {
        let mut members: Vec<(String, Json)> = Vec::new();
        let mut elems: Vec<Json> = Vec::new();
        for child in &node.children {
            // A new element's pointer is the index it takes (or would take) in the new array.
            let cptr = match &child.seg {
                Seg::Key(k) => format!("{ptr}/{}", pointer_segment(k)),
                Seg::Elem { .. } => format!("{ptr}/{}", elems.len()),
            };
            let value = match &child.item {
                Item::Entry(e) => match self.decide(e, &child.key, &cptr, None) {
                    Op::Insert(j) => Some(j),
                    _ => None,
                },
                Item::Node(n) => self.build_new(n, &child.key, &cptr),
            };
            if let Some(v) = value {
                match &child.seg {
                    Seg::Key(k) => members.push((k.clone(), v)),
                    Seg::Elem { .. } => elems.push(v),
                }
            }
        }
        let wanted_empty = node.in_template && node.children.is_empty() && self.mode == Mode::Sync;
        if members.is_empty() && elems.is_empty() && !wanted_empty {
            return None;
        }
        if !key.is_empty() {
            self.reg.containers.insert(key.to_owned());
        }
        match node.kind {
            Kind::Keyed(_) => Some(Json::Arr(elems)),
            Kind::Object | Kind::Any => {
                if let (Some(field), Some((v, pos))) = (&node.ident_field, &node.ident) {
                    members.insert((*pos).min(members.len()), (field.clone(), v.clone()));
                }
                Some(Json::Obj(members))
            }
        }
    }

    /// Keeps the registered entries under a node the walk cannot enter.
    fn carry(&mut self, node: &Node) {
        for child in &node.children {
            match &child.item {
                Item::Entry(e) => {
                    if let Some(r) = &e.reg {
                        self.keep(&child.key, r.clone());
                    }
                }
                Item::Node(n) => {
                    if n.created {
                        self.reg.containers.insert(child.key.clone());
                    }
                    self.carry(n);
                }
            }
        }
    }

    /// Walks the container value at `start` for `node`; true when the container itself is
    /// to be removed (created by the owner, no longer wanted, and left empty).
    fn walk_value(
        &mut self,
        node: &Node,
        key: &str,
        ptr: &str,
        start: usize,
    ) -> Result<Fate, EntryError> {
        let src = self.src;
        let first = src.get(start).copied();
        let edits_before = self.edits.len();
        let removals_before = self.removals;
        if let Some(r) = &node.leaf_reg
            && self.mode == Mode::Sync
            && node.in_template
            && matches!(first, Some(b'{' | b'['))
            && self.file_value(start)?.hash() == r.hash
        {
            // A whole value this owner wrote, untouched, that the template now holds as
            // structure (an array of repeated values that became a set): written anew.
            self.report(key, ptr, EntryState::Pristine, EntryAction::Pruned);
            return Ok(match self.build_new(node, key, ptr) {
                Some(j) => Fate::Replace(j),
                None => Fate::Gone,
            });
        }
        let remaining = match (&node.kind, first) {
            (Kind::Object, Some(b'{')) => {
                let c = scan::container(src, start).map_err(|e| scan_err(src, e))?;
                self.walk_object(node, &c, key, ptr)?
            }
            (Kind::Keyed(rule), Some(b'[')) => {
                let c = scan::container(src, start).map_err(|e| scan_err(src, e))?;
                self.walk_array(node, rule, &c, key, ptr)?
            }
            (Kind::Any, Some(b'{' | b'[')) => {
                let c = scan::container(src, start).map_err(|e| scan_err(src, e))?;
                let ident = node.ident_field.as_deref();
                c.items
                    .iter()
                    .filter(|i| i.key.is_none() || i.key.as_deref() != ident)
                    .count()
            }
            _ => {
                let mine = match (&node.leaf_reg, node.below.owned(key, node.created)) {
                    (Some(r), _) => self.file_value(start)?.hash() == r.hash,
                    (None, Some(owned)) => owned.is(&self.file_value(start)?),
                    (None, None) => false,
                };
                if mine && self.mode == Mode::Sync && node.in_template {
                    // A plain value this owner wrote, untouched, that the template made a
                    // container: replaced by the container.
                    self.report(key, ptr, EntryState::Pristine, EntryAction::Pruned);
                    return Ok(match self.build_new(node, key, ptr) {
                        Some(j) => Fate::Replace(j),
                        None => Fate::Gone,
                    });
                }
                let expected = if matches!(node.kind, Kind::Keyed(_)) {
                    "array"
                } else {
                    "object"
                };
                self.warn(WarningKind::ShapeMismatch { expected }, key, Some(start));
                if node.created {
                    self.reg.containers.insert(key.to_owned());
                }
                self.carry(node);
                return Ok(Fate::Keep);
            }
        };
        let unwanted = self.mode == Mode::Remove || !node.in_template;
        // A container goes with the owner's last entry in it when the owner created it, or,
        // when co-owned entries are pruned, when entries were removed from it just now.
        let emptied = self.opts.prune_adopted && self.removals > removals_before;
        let gone =
            (node.created || emptied) && unwanted && remaining == 0 && self.mode != Mode::List;
        if gone {
            self.edits.truncate(edits_before);
            return Ok(Fate::Gone);
        }
        if node.created && (!unwanted || self.mode == Mode::List) {
            self.reg.containers.insert(key.to_owned());
        } else if node.created && remaining > 0 {
            self.orphans.push(key.to_owned());
        }
        Ok(Fate::Keep)
    }

    /// Decides an entry the file already holds as item `i` of `c`: a replacement is spliced
    /// in; true when the item is to be removed.
    fn existing(
        &mut self,
        e: &crate::entries::tree::Entry,
        key: &str,
        ptr: &str,
        c: &ContainerSpan,
        i: usize,
    ) -> Result<bool, EntryError> {
        let start = c.items[i].value.start;
        let v = self.file_value(start)?;
        match self.decide(e, key, ptr, Some((&v, start))) {
            Op::Replace(j) => {
                if let Some(edit) = splice::replace_value(self.src, &self.layout, c, i, &j) {
                    self.edits.push(edit);
                }
                Ok(false)
            }
            Op::Remove => Ok(true),
            Op::Keep | Op::Insert(_) => Ok(false),
        }
    }

    fn file_value(&self, start: usize) -> Result<Json, EntryError> {
        Json::parse_at(self.src, start)
            .map(|(v, _)| v)
            .map_err(|e| scan_err(self.src, e))
    }

    /// Walks an object; returns how many members it has afterwards (its identifying member
    /// not counted).
    fn walk_object(
        &mut self,
        node: &Node,
        c: &ContainerSpan,
        key: &str,
        ptr: &str,
    ) -> Result<usize, EntryError> {
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(c.items.len());
        for (i, item) in c.items.iter().enumerate() {
            if let Some(k) = item.key.as_deref() {
                index.entry(k).or_insert(i);
            }
        }
        let mut removed = vec![false; c.items.len()];
        let mut appends = Vec::new();
        let mut at: Vec<Option<usize>> = vec![None; node.children.len()];
        let mut appended = Vec::new();
        for (ci, child) in node.children.iter().enumerate() {
            let Seg::Key(name) = &child.seg else { continue };
            let cptr = format!("{ptr}/{}", pointer_segment(name));
            let found = index.get(name.as_str()).copied();
            at[ci] = found;
            let before = appends.len();
            match (&child.item, found) {
                (Item::Entry(e), Some(i)) => {
                    if self.existing(e, &child.key, &cptr, c, i)? {
                        removed[i] = true;
                    }
                }
                (Item::Entry(e), None) => {
                    if let Op::Insert(j) = self.decide(e, &child.key, &cptr, None) {
                        appends.push(NewItem::Member(name.clone(), j));
                    }
                }
                (Item::Node(n), Some(i)) => {
                    let start = c.items[i].value.start;
                    let theirs = if n.created {
                        None
                    } else {
                        self.registered_whole_by(start)?
                    };
                    let edits_before = self.edits.len();
                    let fate = self.walk_value(n, &child.key, &cptr, start)?;
                    if let Some(other) = theirs
                        && (self.edits.len() > edits_before || !matches!(fate, Fate::Keep))
                    {
                        // Another owner's value, registered whole: not to be written into.
                        return Err(EntryError::Conflict(vec![super::error::Conflict {
                            key: child.key.clone(),
                            owner: self.owner.to_owned(),
                            other,
                        }]));
                    }
                    match fate {
                        Fate::Keep => {}
                        Fate::Gone => removed[i] = true,
                        Fate::Replace(j) => {
                            if let Some(edit) =
                                splice::replace_value(self.src, &self.layout, c, i, &j)
                            {
                                self.edits.push(edit);
                            }
                        }
                    }
                }
                (Item::Node(n), None) => {
                    if let Some(j) = self.build_new(n, &child.key, &cptr) {
                        appends.push(NewItem::Member(name.clone(), j));
                    }
                }
            }
            if appends.len() > before {
                appended.push(ci);
            }
        }
        let places = places(&at, &removed, &appended);
        self.container_edits(c, key, &removed, &appends, &places);
        let ident = node.ident_field.as_deref();
        let kept = c
            .items
            .iter()
            .zip(&removed)
            .filter(|(item, gone)| !**gone && (ident.is_none() || item.key.as_deref() != ident))
            .count();
        Ok(kept + appends.len())
    }

    /// The key of the element at `start`, borrowed from the source when no normalization or
    /// unescaping is needed (the common case for large arrays).
    fn element_key(&mut self, rule: &KeyRule, start: usize) -> Result<Cow<'a, [u8]>, EntryError> {
        let src: &'a [u8] = self.src;
        let value_at = match &rule.field {
            Field::Itself => Some(start),
            Field::Member(f) => scan::find_member(src, start, f).map_err(|e| scan_err(src, e))?,
        };
        let Some(at) = value_at else {
            return Ok(Cow::Borrowed(b""));
        };
        if !rule.path && src.get(at) == Some(&b'"') {
            let end = scan::string_end(src, at).map_err(|e| scan_err(src, e))?;
            let raw = &src[at + 1..end - 1];
            if !raw.contains(&b'\\') {
                // Validated strict JSON: the raw bytes are the string's UTF-8.
                return Ok(Cow::Borrowed(raw));
            }
        }
        let v = self.file_value(at)?;
        Ok(Cow::Owned(
            self.norm.element_key(rule, Some(&v)).into_bytes(),
        ))
    }

    fn walk_array(
        &mut self,
        node: &Node,
        rule: &KeyRule,
        c: &ContainerSpan,
        key: &str,
        ptr: &str,
    ) -> Result<usize, EntryError> {
        // Only the keys the tree asks for are looked up; other elements cost one key each.
        let mut wanted: FxHashMap<&[u8], usize> = FxHashMap::default();
        for (ci, child) in node.children.iter().enumerate() {
            if let Seg::Elem { key, .. } = &child.seg {
                wanted.insert(key.as_bytes(), ci);
            }
        }
        // `:path` keys are matched by their stable form, then by their resolved form.
        let mut resolved: FxHashMap<String, usize> = FxHashMap::default();
        if rule.path {
            for (ci, child) in node.children.iter().enumerate() {
                if let Seg::Elem { key, .. } = &child.seg {
                    resolved.entry(self.norm.resolved(key)).or_insert(ci);
                }
            }
        }
        let mut at: Vec<Option<usize>> = vec![None; node.children.len()];
        let mut dup = vec![false; node.children.len()];
        if !wanted.is_empty() {
            for (i, item) in c.items.iter().enumerate() {
                let k = self.element_key(rule, item.value.start)?;
                let hit = match wanted.get(k.as_ref()) {
                    Some(&ci) => Some(ci),
                    None if rule.path => {
                        let stable = String::from_utf8_lossy(&k).into_owned();
                        resolved.get(&self.norm.resolved(&stable)).copied()
                    }
                    None => None,
                };
                // An element another owner registered whole is theirs: this owner's entries
                // go into an element of its own, never into it.
                let hit = match hit {
                    Some(ci) if self.registered_whole_by(item.value.start)?.is_some() => {
                        let mine = match &node.children[ci].item {
                            Item::Entry(e) => e.reg.is_some(),
                            Item::Node(n) => n.created,
                        };
                        mine.then_some(ci)
                    }
                    hit => hit,
                };
                if let Some(ci) = hit {
                    match at[ci] {
                        None => at[ci] = Some(i),
                        Some(first) => {
                            dup[ci] = true;
                            // Of two elements with one key, the one that holds what the
                            // owner wrote is the owner's: for an element it registered
                            // whole, its value; for one it created, what it registered
                            // inside (a release that added a key rule gives the owner's
                            // element the key of a user's element).
                            match &node.children[ci].item {
                                Item::Entry(e) => {
                                    if let Some(r) = &e.reg
                                        && self.file_value(c.items[first].value.start)?.hash()
                                            != r.hash
                                        && self.file_value(item.value.start)?.hash() == r.hash
                                    {
                                        at[ci] = Some(i);
                                    }
                                }
                                Item::Node(n) => {
                                    if let Some(owned) = n.owned(&node.children[ci].key)
                                        && !owned.is(&self.file_value(c.items[first].value.start)?)
                                        && owned.is(&self.file_value(item.value.start)?)
                                    {
                                        at[ci] = Some(i);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut removed = vec![false; c.items.len()];
        let mut appends = Vec::new();
        let mut appended = Vec::new();
        // The reports each child made, with its place, to be pointed at the element's index
        // after the write once every removal and append of this array is known.
        let mut places: Vec<(usize, usize, String, Place)> = Vec::new();
        for (ci, child) in node.children.iter().enumerate() {
            let found = at[ci];
            if dup[ci] {
                let at = found.map(|i| c.items[i].value.start);
                self.warn(WarningKind::DuplicateElement, &child.key, at);
            }
            let (cptr, place) = match found {
                Some(i) => (format!("{ptr}/{i}"), Place::Existing(i)),
                None => (format!("{ptr}/-"), Place::Appended(appends.len())),
            };
            let first_report = self.reports.len();
            let before = appends.len();
            match (&child.item, found) {
                (Item::Entry(e), Some(i)) => {
                    if self.existing(e, &child.key, &cptr, c, i)? {
                        removed[i] = true;
                    }
                }
                (Item::Entry(e), None) => {
                    if let Op::Insert(j) = self.decide(e, &child.key, &cptr, None) {
                        appends.push(NewItem::Elem(j));
                    }
                }
                (Item::Node(n), Some(i)) => {
                    match self.walk_value(n, &child.key, &cptr, c.items[i].value.start)? {
                        Fate::Keep => {}
                        Fate::Gone => removed[i] = true,
                        Fate::Replace(j) => {
                            if let Some(edit) =
                                splice::replace_value(self.src, &self.layout, c, i, &j)
                            {
                                self.edits.push(edit);
                            }
                        }
                    }
                }
                (Item::Node(n), None) => {
                    if let Some(j) = self.build_new(n, &child.key, &cptr) {
                        appends.push(NewItem::Elem(j));
                    }
                }
            }
            if appends.len() > before {
                appended.push(ci);
            }
            places.push((first_report, self.reports.len(), cptr, place));
        }
        let slots = self::places(&at, &removed, &appended);
        self.container_edits(c, key, &removed, &appends, &slots);
        let (old_index, new_index) = final_indexes(&removed, &slots);
        let kept = removed.iter().filter(|r| !**r).count();
        for (from, to, old, place) in places {
            let index = match place {
                Place::Existing(i) => old_index[i],
                Place::Appended(k) => new_index[k],
            };
            self.repoint(from..to, &old, &format!("{ptr}/{index}"));
        }
        Ok(kept + appends.len())
    }

    /// The splices of one container's removals and appends. The whitespace inside an empty
    /// container the owner fills is remembered, and comes back when the owner's removals
    /// leave it empty again (`{ }`, `{\n}` round-trip byte for byte).
    fn container_edits(
        &mut self,
        c: &ContainerSpan,
        key: &str,
        removed: &[bool],
        appends: &[NewItem],
        places: &[At],
    ) {
        let inside = &self.src[c.open + 1..c.close];
        if c.items.is_empty() && !appends.is_empty() && !inside.is_empty() {
            let blank = String::from_utf8_lossy(inside).into_owned();
            self.reg.blanks.insert(key.to_owned(), blank);
        }
        let emptied = !c.items.is_empty() && appends.is_empty() && removed.iter().all(|r| *r);
        let blank = if emptied {
            self.reg.blanks.remove(key).unwrap_or_default()
        } else {
            String::new()
        };
        splice::container_edits(
            self.src,
            &self.layout,
            c,
            removed,
            appends,
            places,
            &blank,
            &mut self.edits,
        );
    }

    /// Points the reports in `range` that are at or below `old` at `new` instead.
    fn repoint(&mut self, range: std::ops::Range<usize>, old: &str, new: &str) {
        for r in &mut self.reports[range] {
            if r.pointer == old {
                r.pointer = new.to_owned();
            } else if let Some(rest) = r.pointer.strip_prefix(old)
                && rest.starts_with('/')
            {
                r.pointer = format!("{new}{rest}");
            }
        }
    }
}

/// Where each new item of a container goes: right after the nearest preceding sibling (in
/// the template's order) that the file has and keeps, else right before the nearest
/// following one, else at the end. `at` is the file item of each child, `appended` the
/// children that are new, in order.
fn places(at: &[Option<usize>], removed: &[bool], appended: &[usize]) -> Vec<At> {
    let kept = |i: &usize| !removed.get(*i).copied().unwrap_or(true);
    appended
        .iter()
        .map(|&ci| {
            let before = at.get(..ci).unwrap_or(&[]);
            if let Some(&i) = before.iter().rev().flatten().find(|i| kept(i)) {
                return At::After(i);
            }
            let after = at.get(ci + 1..).unwrap_or(&[]);
            match after.iter().flatten().find(|j| kept(j)) {
                Some(&j) => match (0..j).rev().find(kept) {
                    Some(k) => At::After(k),
                    None => At::Front,
                },
                None => At::End,
            }
        })
        .collect()
}

/// The index after the write of each item of a container that stays, and of each new item
/// placed by `places` (as `splice::container_edits` places them).
fn final_indexes(removed: &[bool], places: &[At]) -> (Vec<usize>, Vec<usize>) {
    let n = removed.len();
    let mut old = vec![0; n];
    let mut new = vec![0; places.len()];
    let last_kept = (0..n).rev().find(|&i| !removed[i]);
    let mut next = 0;
    let Some(last_kept) = last_kept else {
        for (k, slot) in new.iter_mut().enumerate() {
            *slot = k;
        }
        return (old, new);
    };
    for (k, p) in places.iter().enumerate() {
        if *p == At::Front {
            new[k] = next;
            next += 1;
        }
    }
    for i in 0..n {
        if removed[i] {
            continue;
        }
        old[i] = next;
        next += 1;
        for (k, p) in places.iter().enumerate() {
            let here = match p {
                At::After(a) => *a == i || (i == last_kept && (*a > last_kept || removed[*a])),
                At::End => i == last_kept,
                At::Front => false,
            };
            if here {
                new[k] = next;
                next += 1;
            }
        }
    }
    (old, new)
}

/// Line starts, built only when a location is needed.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(src: &[u8], needed: bool) -> LineIndex {
        let mut starts = vec![0];
        if needed {
            starts.extend(memchr::memchr_iter(b'\n', src).map(|p| p + 1));
        }
        LineIndex { starts }
    }

    fn location(&self, src: &[u8], at: usize) -> Location {
        let line = self.starts.partition_point(|&s| s <= at).max(1);
        let start = self.starts[line - 1];
        let column = String::from_utf8_lossy(&src[start..at.min(src.len()).max(start)])
            .chars()
            .count()
            + 1;
        Location { line, column }
    }
}
