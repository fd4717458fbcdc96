//! The passes: the forward pass (template entries into the file), the reverse pass (entries
//! the template no longer has, or all of an owner's entries on removal) and the listing.
//!
//! The template and the registry are merged into one tree of wanted entries; the tree is
//! walked together with the file, looking only inside the containers it names, and every
//! decision becomes a splice (see `splice`).

use std::borrow::Cow;
use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::error::{EntryError, EntryWarning, Input, Location, SyntaxKind, WarningKind};
use super::keys::{self, Field, KeyRule, KeyRules, PathNorm, Seg};
use super::registry::{RegisteredEntry, Registry};
use super::scan::{self, ContainerSpan, Layout, ScanError};
use super::splice::{self, Edit, NewItem};
use super::value::Json;
use super::{EntryAction, EntryOptions, EntryReport, EntryState, OnDrift};

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

struct Entry {
    template: Option<Json>,
    seed: bool,
    reg: Option<RegisteredEntry>,
    /// Registered entries and created containers below this key: the template turned a
    /// container the owner wrote into a plain value.
    below: Vec<(String, RegisteredEntry)>,
    below_containers: Vec<String>,
}

impl Entry {
    fn new(template: Option<Json>, seed: bool, reg: Option<RegisteredEntry>) -> Entry {
        Entry {
            template,
            seed,
            reg,
            below: Vec::new(),
            below_containers: Vec::new(),
        }
    }

    /// The value the owner left at this key when it was a container of its own: rebuilt from
    /// the registered entries below it (object members only); `None` when it was not.
    fn owned_container(&self, key: &str) -> Option<Json> {
        if !self.below_containers.iter().any(|c| c == key) {
            return None;
        }
        let mut root = Json::Obj(Vec::new());
        let rel = |k: &str| -> Option<Vec<String>> {
            keys::parse_key(k.strip_prefix(key)?)?
                .into_iter()
                .map(|s| match s {
                    Seg::Key(k) => Some(k),
                    Seg::Elem { .. } => None,
                })
                .collect()
        };
        for c in &self.below_containers {
            insert_path(&mut root, &rel(c)?, None);
        }
        for (k, r) in &self.below {
            insert_path(&mut root, &rel(k)?, Some(Json::from_serde(&r.base)));
        }
        Some(root)
    }
}

fn insert_path(root: &mut Json, path: &[String], value: Option<Json>) {
    let Some((first, rest)) = path.split_first() else {
        if let Some(v) = value {
            *root = v;
        }
        return;
    };
    let Json::Obj(members) = root else { return };
    let i = match members.iter().position(|(k, _)| k == first) {
        Some(i) => i,
        None => {
            members.push((first.clone(), Json::Obj(Vec::new())));
            members.len() - 1
        }
    };
    insert_path(&mut members[i].1, rest, value);
}

enum Item {
    Entry(Entry),
    Node(Node),
}

struct Child {
    seg: Seg,
    key: String,
    item: Item,
}

#[derive(Clone)]
enum Kind {
    Object,
    Keyed(KeyRule),
    /// A container known only from the registry's list of created containers.
    Any,
}

struct Node {
    kind: Kind,
    in_template: bool,
    created: bool,
    /// For an element of a keyed array: the identifying member (name, template value and
    /// its position among the template's members, when the template has it).
    ident_field: Option<String>,
    ident: Option<(Json, usize)>,
    /// A registered plain value at this key (the template turned it into a container).
    leaf_reg: Option<RegisteredEntry>,
    children: Vec<Child>,
    index: HashMap<Seg, usize>,
}

impl Node {
    fn new(kind: Kind, in_template: bool) -> Node {
        Node {
            kind,
            in_template,
            created: false,
            ident_field: None,
            ident: None,
            leaf_reg: None,
            children: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn push(&mut self, child: Child) {
        self.index.insert(child.seg.clone(), self.children.len());
        self.children.push(child);
    }
}

/// The template and registry merged into one tree.
pub(crate) struct Wanted {
    root: Node,
    template_keys: Vec<String>,
}

/// Builds the tree of wanted entries from the template's top-level members.
pub(crate) fn wanted(
    template: &[(String, Json)],
    rules: &KeyRules,
    seeds: &[String],
    norm: &mut PathNorm<'_>,
) -> Result<Wanted, EntryError> {
    let mut b = Builder {
        rules,
        seeds,
        norm,
        keys: Vec::new(),
    };
    let mut path = Vec::new();
    let root = b.object(template, &mut path)?;
    Ok(Wanted {
        root,
        template_keys: b.keys,
    })
}

struct Builder<'r, 'n, 'o> {
    rules: &'r KeyRules,
    seeds: &'r [String],
    norm: &'n mut PathNorm<'o>,
    keys: Vec<String>,
}

impl Builder<'_, '_, '_> {
    fn entry(&mut self, key: &str, v: &Json) -> Item {
        self.keys.push(key.to_owned());
        let seed = self.seeds.iter().any(|s| keys::under(key, s));
        Item::Entry(Entry::new(Some(v.clone()), seed, None))
    }

    fn object(
        &mut self,
        members: &[(String, Json)],
        path: &mut Vec<Seg>,
    ) -> Result<Node, EntryError> {
        let mut node = Node::new(Kind::Object, true);
        for (name, v) in members {
            path.push(Seg::Key(name.clone()));
            let key = keys::format_key(path);
            let item = match v {
                Json::Obj(m) => Item::Node(self.object(m, path)?),
                Json::Arr(a) => match self.rules.rule_for(path) {
                    Some(rule) => Item::Node(self.keyed(a, rule.clone(), path)?),
                    None => self.entry(&key, v),
                },
                _ => self.entry(&key, v),
            };
            let seg = path.pop().unwrap_or(Seg::Key(String::new()));
            node.push(Child { seg, key, item });
        }
        Ok(node)
    }

    fn keyed(
        &mut self,
        elems: &[Json],
        rule: KeyRule,
        path: &mut Vec<Seg>,
    ) -> Result<Node, EntryError> {
        let mut node = Node::new(Kind::Keyed(rule.clone()), true);
        for e in elems {
            let fv = match &rule.field {
                Field::Itself => Some(e),
                Field::Member(f) => e.get(f),
            };
            let seg = Seg::Elem {
                field: rule.field_name().to_owned(),
                key: self.norm.element_key(&rule, fv),
            };
            path.push(seg.clone());
            let key = keys::format_key(path);
            if node.index.contains_key(&seg) {
                return Err(EntryError::TemplateDuplicate { key });
            }
            let item = match (&rule.field, e) {
                (Field::Member(f), Json::Obj(m)) if self.rules.any_below(path) => {
                    let pos = m.iter().position(|(n, _)| n == f);
                    let rest: Vec<(String, Json)> =
                        m.iter().filter(|(n, _)| n != f).cloned().collect();
                    let mut n = self.object(&rest, path)?;
                    n.ident_field = Some(f.clone());
                    n.ident = pos.map(|p| (m[p].1.clone(), p));
                    Item::Node(n)
                }
                _ => self.entry(&key, e),
            };
            path.pop();
            node.push(Child { seg, key, item });
        }
        Ok(node)
    }
}

impl Wanted {
    /// Canonical keys of the template's entries.
    pub(crate) fn template_keys(&self) -> &[String] {
        &self.template_keys
    }

    /// Attaches a registered entry; a key that no longer fits the tree is reported.
    pub(crate) fn attach(&mut self, key: &str, reg: RegisteredEntry, rules: &KeyRules) -> bool {
        let Some(path) = keys::parse_key(key) else {
            return false;
        };
        let Some(last) = path.last() else {
            return false;
        };
        let node = match descend(&mut self.root, &path, path.len() - 1, rules) {
            Landing::Node(n) => n,
            Landing::UnderEntry(e) => {
                e.below.push((key.to_owned(), reg));
                return true;
            }
            Landing::Lost => return false,
        };
        match node.index.get(last).copied() {
            Some(i) => match &mut node.children[i].item {
                Item::Entry(e) => {
                    e.reg = Some(reg);
                    true
                }
                Item::Node(n) => {
                    n.leaf_reg = Some(reg);
                    true
                }
            },
            None => {
                if !fits(node, last) {
                    return false;
                }
                node.push(Child {
                    seg: last.clone(),
                    key: key.to_owned(),
                    item: Item::Entry(Entry::new(None, reg.seed, Some(reg))),
                });
                true
            }
        }
    }

    /// Marks a container as created by the owner.
    pub(crate) fn mark_created(&mut self, key: &str, rules: &KeyRules) {
        let Some(path) = keys::parse_key(key) else {
            return;
        };
        let Some(last) = path.last() else { return };
        let node = match descend(&mut self.root, &path, path.len() - 1, rules) {
            Landing::Node(n) => n,
            Landing::UnderEntry(e) => {
                e.below_containers.push(key.to_owned());
                return;
            }
            Landing::Lost => return,
        };
        let i = match node.index.get(last).copied() {
            Some(i) => i,
            None => {
                if !fits(node, last) {
                    return;
                }
                let mut n = Node::new(Kind::Any, false);
                if let (Seg::Elem { field, .. }, Kind::Keyed(_)) = (last, &node.kind) {
                    n.ident_field = Some(field.clone());
                }
                node.push(Child {
                    seg: last.clone(),
                    key: key.to_owned(),
                    item: Item::Node(n),
                });
                node.children.len() - 1
            }
        };
        match &mut node.children[i].item {
            Item::Node(n) => n.created = true,
            Item::Entry(e) => e.below_containers.push(key.to_owned()),
        }
    }
}

fn fits(node: &Node, seg: &Seg) -> bool {
    match (&node.kind, seg) {
        (Kind::Object, Seg::Key(_)) => true,
        (Kind::Keyed(rule), Seg::Elem { field, .. }) => rule.field_name() == field,
        _ => false,
    }
}

/// The node at `path[..depth]`, created (as not in the template) where missing.
/// The kind of the container at `path[..=i]`, from the step that follows it.
fn kind_for(path: &[Seg], i: usize, rules: &KeyRules) -> Option<Kind> {
    match path.get(i + 1) {
        Some(Seg::Elem { field, .. }) => rules
            .rule_for(&path[..=i])
            .filter(|r| r.field_name() == field)
            .cloned()
            .or_else(|| KeyRule::new("/", field).ok())
            .map(Kind::Keyed),
        _ => Some(Kind::Object),
    }
}

enum Landing<'n> {
    Node(&'n mut Node),
    /// The path passes through a template entry (a plain value now).
    UnderEntry(&'n mut Entry),
    Lost,
}

fn descend<'n>(
    mut node: &'n mut Node,
    path: &[Seg],
    depth: usize,
    rules: &KeyRules,
) -> Landing<'n> {
    for (i, seg) in path.iter().enumerate().take(depth) {
        if !fits(node, seg) {
            return Landing::Lost;
        }
        let idx = match node.index.get(seg).copied() {
            Some(idx) => idx,
            None => {
                let Some(kind) = kind_for(path, i, rules) else {
                    return Landing::Lost;
                };
                let mut n = Node::new(kind, false);
                if let (Seg::Elem { field, .. }, Kind::Keyed(_)) = (seg, &node.kind) {
                    n.ident_field = Some(field.clone());
                }
                let key = keys::format_key(&path[..=i]);
                node.push(Child {
                    seg: seg.clone(),
                    key,
                    item: Item::Node(n),
                });
                node.children.len() - 1
            }
        };
        node = match &mut node.children[idx].item {
            Item::Node(n) => {
                // A container known only as created learns its kind from the path.
                if matches!(n.kind, Kind::Any) {
                    match kind_for(path, i, rules) {
                        Some(kind) => n.kind = kind,
                        None => return Landing::Lost,
                    }
                }
                n
            }
            Item::Entry(e) => return Landing::UnderEntry(e),
        };
    }
    Landing::Node(node)
}

/// What becomes of a container value after its walk.
enum Fate {
    Keep,
    Gone,
    Replace(Json),
}

/// What to do with one entry's place in the file.
enum Op {
    Keep,
    Replace(Json),
    Remove,
    Insert(Json),
}

/// The result of a walk.
pub(crate) struct Outcome {
    pub(crate) new: Vec<u8>,
    pub(crate) registry: Registry,
    pub(crate) entries: Vec<EntryReport>,
    pub(crate) warnings: Vec<EntryWarning>,
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

fn written(t: &Json, adopted: bool, seed: bool) -> RegisteredEntry {
    RegisteredEntry {
        hash: t.hash(),
        base: t.to_serde(),
        adopted,
        seed,
    }
}

/// Three-way merge of object members: the user's changes and the template's changes to
/// different members both arrive; a member both changed keeps the user's value.
fn merge3(v: &Json, b: &Json, t: &Json) -> Option<(Json, Vec<String>)> {
    let (Json::Obj(vm), Json::Obj(_), Json::Obj(tm)) = (v, b, t) else {
        return None;
    };
    let same = |x: Option<&Json>, y: Option<&Json>| match (x, y) {
        (Some(x), Some(y)) => x.same(y),
        (None, None) => true,
        _ => false,
    };
    let mut out = Vec::new();
    let mut conflicts = Vec::new();
    for (k, vv) in vm {
        let (bb, tt) = (b.get(k), t.get(k));
        if same(Some(vv), bb) {
            if let Some(tt) = tt {
                out.push((k.clone(), tt.clone()));
            }
        } else {
            if !same(tt, bb) && !same(Some(vv), tt) {
                conflicts.push(k.clone());
            }
            out.push((k.clone(), vv.clone()));
        }
    }
    for (k, tt) in tm {
        if v.get(k).is_some() {
            continue;
        }
        match b.get(k) {
            None => out.push((k.clone(), tt.clone())),
            Some(bb) if bb.same(tt) => {}
            Some(_) => conflicts.push(k.clone()),
        }
    }
    Some((Json::Obj(out), conflicts))
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
        }
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
                self.walk_object(&wanted.root, &root, "")?;
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

    fn decide(&mut self, e: &Entry, key: &str, ptr: &str, file: Option<(&Json, usize)>) -> Op {
        let fv = file.map(|f| f.0);
        let at = file.map(|f| f.1);
        let state = match (&e.reg, fv) {
            (Some(r), Some(v)) if v.hash() == r.hash => EntryState::Pristine,
            (Some(_), Some(_)) => EntryState::Drifted,
            (None, Some(_)) => EntryState::User,
            (_, None) => EntryState::Missing,
        };
        if self.mode == Mode::List {
            if let Some(r) = &e.reg {
                self.keep(key, r.clone());
                self.report(key, ptr, state, EntryAction::Unchanged);
            }
            return Op::Keep;
        }
        match (&e.template, self.mode) {
            (Some(t), Mode::Sync) => self.forward(e, t, key, ptr, fv, at, state),
            _ => self.reverse(e, key, ptr, fv, at, state),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn forward(
        &mut self,
        e: &Entry,
        t: &Json,
        key: &str,
        ptr: &str,
        fv: Option<&Json>,
        at: Option<usize>,
        state: EntryState,
    ) -> Op {
        use EntryAction as A;
        let seed = e.seed || e.reg.as_ref().is_some_and(|r| r.seed);
        if seed {
            return match (&e.reg, fv) {
                (Some(r), _) => {
                    self.keep(key, r.clone());
                    self.report(key, ptr, state, A::Unchanged);
                    Op::Keep
                }
                (None, Some(_)) => {
                    self.report(key, ptr, state, A::KeptUser);
                    Op::Keep
                }
                (None, None) => {
                    self.keep(key, written(t, false, true));
                    self.report(key, ptr, state, A::Inserted);
                    Op::Insert(t.clone())
                }
            };
        }
        match (&e.reg, fv) {
            (Some(r), Some(v)) => {
                if v.same(t) {
                    self.keep(key, written(t, r.adopted, false));
                    self.report(key, ptr, state, A::Unchanged);
                    return Op::Keep;
                }
                if state == EntryState::Pristine {
                    self.keep(key, written(t, r.adopted, false));
                    self.report(key, ptr, state, A::Updated);
                    return Op::Replace(t.clone());
                }
                match self.opts.on_drift {
                    OnDrift::Keep => {
                        self.keep(key, r.clone());
                        self.warn(WarningKind::Drifted, key, at);
                        self.report(key, ptr, state, A::KeptDrifted);
                        Op::Keep
                    }
                    OnDrift::Overwrite => {
                        self.keep(key, written(t, r.adopted, false));
                        self.report(key, ptr, state, A::Updated);
                        Op::Replace(t.clone())
                    }
                    OnDrift::Fail => {
                        self.keep(key, r.clone());
                        self.drift.push(key.to_owned());
                        self.report(key, ptr, state, A::KeptDrifted);
                        Op::Keep
                    }
                    OnDrift::Merge => {
                        let base = Json::from_serde(&r.base);
                        match merge3(v, &base, t) {
                            Some((m, conflicts)) => {
                                for member in conflicts {
                                    self.warn(WarningKind::MergeConflict { member }, key, at);
                                }
                                self.keep(key, written(t, r.adopted, false));
                                if m.same(v) {
                                    self.report(key, ptr, state, A::KeptDrifted);
                                    Op::Keep
                                } else {
                                    self.report(key, ptr, state, A::Updated);
                                    Op::Replace(m)
                                }
                            }
                            None => {
                                self.keep(key, r.clone());
                                self.warn(WarningKind::Drifted, key, at);
                                self.report(key, ptr, state, A::KeptDrifted);
                                Op::Keep
                            }
                        }
                    }
                }
            }
            (Some(r), None) => {
                if self.opts.respect_removals {
                    self.keep(key, r.clone());
                    self.report(key, ptr, state, A::Unchanged);
                    Op::Keep
                } else {
                    self.keep(key, written(t, false, false));
                    self.report(key, ptr, state, A::Inserted);
                    Op::Insert(t.clone())
                }
            }
            (None, Some(v)) if e.owned_container(key).is_some_and(|mine| mine.same(v)) => {
                // A container this owner wrote, untouched, that the template made a value.
                self.keep(key, written(t, false, false));
                self.report(key, ptr, EntryState::Pristine, A::Updated);
                Op::Replace(t.clone())
            }
            (None, Some(v)) => {
                let equal = v.same(t);
                if !self.have_registry && equal {
                    self.keep(key, written(t, true, false));
                    self.report(key, ptr, state, A::Adopted);
                } else {
                    if !equal {
                        self.warn(WarningKind::UserValue, key, at);
                    }
                    self.report(key, ptr, state, A::KeptUser);
                }
                Op::Keep
            }
            (None, None) => {
                self.keep(key, written(t, false, false));
                self.report(key, ptr, state, A::Inserted);
                Op::Insert(t.clone())
            }
        }
    }

    fn reverse(
        &mut self,
        e: &Entry,
        key: &str,
        ptr: &str,
        fv: Option<&Json>,
        at: Option<usize>,
        state: EntryState,
    ) -> Op {
        use EntryAction as A;
        let Some(r) = &e.reg else { return Op::Keep };
        match (fv, state) {
            (None, _) => {
                self.report(key, ptr, state, A::Unchanged);
                Op::Keep
            }
            (Some(_), EntryState::Pristine) => {
                if r.seed {
                    self.report(key, ptr, state, A::Left);
                    Op::Keep
                } else if r.adopted && !self.opts.prune_adopted {
                    self.warn(WarningKind::LeftCoOwned, key, at);
                    self.report(key, ptr, state, A::Left);
                    Op::Keep
                } else {
                    let action = if self.mode == Mode::Remove {
                        A::Removed
                    } else {
                        A::Pruned
                    };
                    self.report(key, ptr, state, action);
                    self.removals += 1;
                    Op::Remove
                }
            }
            (Some(_), _) => {
                let kind = if self.mode == Mode::Remove {
                    WarningKind::EditedNotRemoved
                } else {
                    WarningKind::NoLongerShipped
                };
                if !r.seed {
                    self.warn(kind, key, at);
                }
                self.report(
                    key,
                    ptr,
                    state,
                    if r.seed { A::Left } else { A::KeptDrifted },
                );
                Op::Keep
            }
        }
    }

    /// Builds the value of a container the file does not have; `None` when nothing of it is
    /// to be written.
    fn build_new(&mut self, node: &Node, key: &str, ptr: &str) -> Option<Json> {
        let mut members: Vec<(String, Json)> = Vec::new();
        let mut elems: Vec<Json> = Vec::new();
        for child in &node.children {
            let cptr = match &child.seg {
                Seg::Key(k) => format!("{ptr}/{}", pointer_segment(k)),
                Seg::Elem { .. } => format!("{ptr}/-"),
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
        let remaining = match (&node.kind, first) {
            (Kind::Object, Some(b'{')) => {
                let c = scan::container(src, start).map_err(|e| scan_err(src, e))?;
                self.walk_object(node, &c, ptr)?
            }
            (Kind::Keyed(rule), Some(b'[')) => {
                let c = scan::container(src, start).map_err(|e| scan_err(src, e))?;
                self.walk_array(node, rule, &c, ptr)?
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
                if let Some(r) = &node.leaf_reg
                    && self.mode == Mode::Sync
                    && node.in_template
                    && self.file_value(start)?.hash() == r.hash
                {
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
        }
        Ok(Fate::Keep)
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
        for child in &node.children {
            let Seg::Key(name) = &child.seg else { continue };
            let cptr = format!("{ptr}/{}", pointer_segment(name));
            let found = index.get(name.as_str()).copied();
            match (&child.item, found) {
                (Item::Entry(e), Some(i)) => {
                    let start = c.items[i].value.start;
                    let v = self.file_value(start)?;
                    match self.decide(e, &child.key, &cptr, Some((&v, start))) {
                        Op::Replace(j) => {
                            if let Some(edit) =
                                splice::replace_value(self.src, &self.layout, c, i, &j)
                            {
                                self.edits.push(edit);
                            }
                        }
                        Op::Remove => removed[i] = true,
                        Op::Keep | Op::Insert(_) => {}
                    }
                }
                (Item::Entry(e), None) => {
                    if let Op::Insert(j) = self.decide(e, &child.key, &cptr, None) {
                        appends.push(NewItem::Member(name.clone(), j));
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
                        appends.push(NewItem::Member(name.clone(), j));
                    }
                }
            }
        }
        splice::container_edits(
            self.src,
            &self.layout,
            c,
            &removed,
            &appends,
            &mut self.edits,
        );
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
        ptr: &str,
    ) -> Result<usize, EntryError> {
        // Only the keys the tree asks for are looked up; other elements cost one key each.
        let mut wanted: FxHashMap<&[u8], usize> = FxHashMap::default();
        for (ci, child) in node.children.iter().enumerate() {
            if let Seg::Elem { key, .. } = &child.seg {
                wanted.insert(key.as_bytes(), ci);
            }
        }
        let mut at: Vec<Option<usize>> = vec![None; node.children.len()];
        let mut dup = vec![false; node.children.len()];
        if !wanted.is_empty() {
            for (i, item) in c.items.iter().enumerate() {
                let k = self.element_key(rule, item.value.start)?;
                if let Some(&ci) = wanted.get(k.as_ref()) {
                    if at[ci].is_some() {
                        dup[ci] = true;
                    } else {
                        at[ci] = Some(i);
                    }
                }
            }
        }
        let mut removed = vec![false; c.items.len()];
        let mut appends = Vec::new();
        for (ci, child) in node.children.iter().enumerate() {
            let found = at[ci];
            if dup[ci] {
                let at = found.map(|i| c.items[i].value.start);
                self.warn(WarningKind::DuplicateElement, &child.key, at);
            }
            let cptr = match found {
                Some(i) => format!("{ptr}/{i}"),
                None => format!("{ptr}/-"),
            };
            match (&child.item, found) {
                (Item::Entry(e), Some(i)) => {
                    let start = c.items[i].value.start;
                    let v = self.file_value(start)?;
                    match self.decide(e, &child.key, &cptr, Some((&v, start))) {
                        Op::Replace(j) => {
                            if let Some(edit) =
                                splice::replace_value(self.src, &self.layout, c, i, &j)
                            {
                                self.edits.push(edit);
                            }
                        }
                        Op::Remove => removed[i] = true,
                        Op::Keep | Op::Insert(_) => {}
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
        }
        splice::container_edits(
            self.src,
            &self.layout,
            c,
            &removed,
            &appends,
            &mut self.edits,
        );
        Ok(removed.iter().filter(|r| !**r).count() + appends.len())
    }
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
