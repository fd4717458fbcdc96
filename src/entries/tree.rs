//! The tree of wanted entries: the template's entries, with the owner's registry attached.
//!
//! Objects and keyed arrays of the template are nodes; leaf members and keyed elements are
//! entries. Registered keys the template no longer has are added as entries without a
//! template value (for the reverse pass), creating nodes outside the template where needed;
//! containers the owner created are marked on their nodes.

use std::collections::HashMap;

use super::error::EntryError;
use super::keys::{self, Field, KeyRule, KeyRules, PathNorm, Seg};
use super::registry::RegisteredEntry;
use super::value::Json;

pub(crate) struct Entry {
    pub(crate) template: Option<Json>,
    pub(crate) seed: bool,
    pub(crate) reg: Option<RegisteredEntry>,
    /// Registered entries and created containers below this key: the template turned a
    /// container the owner wrote into a plain value.
    pub(crate) below: Below,
}

impl Entry {
    fn new(template: Option<Json>, seed: bool, reg: Option<RegisteredEntry>) -> Entry {
        Entry {
            template,
            seed,
            reg,
            below: Below::default(),
        }
    }
}

/// What the owner registered below a key whose shape the template changed (a container
/// that became a plain value, an array that became an object or the other way round).
#[derive(Default)]
pub(crate) struct Below {
    entries: Vec<(String, RegisteredEntry)>,
    containers: Vec<String>,
}

impl Below {
    /// The value the owner left at `key` when it was a container of its own, rebuilt from
    /// the registered entries below it; `None` when the owner did not create it (`created`:
    /// known to be created otherwise). An empty
    /// container the owner created matches any empty container.
    pub(crate) fn owned(&self, key: &str, created: bool) -> Option<Owned> {
        if !created && !self.containers.iter().any(|c| c == key) {
            return None;
        }
        Some(Owned(rebuild(key, &self.containers, &self.entries)))
    }
}

/// The value at `key` rebuilt from the registered entries and created containers below it
/// (keys that are not below it are left out).
pub(crate) fn rebuild(
    key: &str,
    containers: &[String],
    entries: &[(String, RegisteredEntry)],
) -> Json {
    let rel = |k: &str| keys::parse_key(k.strip_prefix(key)?);
    let mut root = unknown_empty();
    for c in containers {
        if let Some(path) = rel(c) {
            insert_path(&mut root, &path, None);
        }
    }
    for (k, r) in entries {
        if let Some(path) = rel(k) {
            insert_path(&mut root, &path, Some(Json::from_serde(&r.base)));
        }
    }
    // An element keyed by a member holds that member, which no entry registers.
    let last = keys::parse_key(key).and_then(|p| p.last().cloned());
    if let (Some(Seg::Elem { field, key }), Json::Obj(members)) = (last, &mut root)
        && field != "."
        && !members.iter().any(|(m, _)| *m == field)
    {
        members.insert(0, (field, Json::Str(key)));
    }
    root
}

/// A container the owner wrote, as rebuilt.
pub(crate) struct Owned(Json);

/// Stands, in a rebuilt value, for a container the owner created whose kind is not known
/// (nothing registered inside it): it matches an empty object or array. No parsed value is
/// a number without digits.
fn unknown_empty() -> Json {
    Json::Num(String::new())
}

impl Owned {
    /// True when the file's value is what the owner wrote.
    pub(crate) fn is(&self, v: &Json) -> bool {
        matches_owned(&self.0, v)
    }
}

fn matches_owned(mine: &Json, v: &Json) -> bool {
    match (mine, v) {
        (Json::Num(n), Json::Obj(m)) if n.is_empty() => m.is_empty(),
        (Json::Num(n), Json::Arr(a)) if n.is_empty() => a.is_empty(),
        (Json::Obj(a), Json::Obj(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.iter().any(|(l, y)| k == l && matches_owned(x, y)))
        }
        (Json::Arr(a), Json::Arr(b)) => {
            // Elements compared as a set: the owner's may stand in another order.
            let mut used = vec![false; b.len()];
            a.len() == b.len()
                && a.iter().all(|x| {
                    let hit = (0..b.len()).find(|&i| !used[i] && matches_owned(x, &b[i]));
                    hit.map(|i| used[i] = true).is_some()
                })
        }
        (mine, v) => mine.same(v),
    }
}

/// Puts `value` (or an empty container, for `None`) at `path` below `root`, making the
/// objects and arrays on the way (`Null` is a container whose kind is not known yet).
fn insert_path(root: &mut Json, path: &[Seg], value: Option<Json>) {
    let Some((first, rest)) = path.split_first() else {
        if let Some(v) = value {
            *root = v;
        }
        return;
    };
    match first {
        Seg::Key(k) => {
            if *root == unknown_empty() {
                *root = Json::Obj(Vec::new());
            }
            let Json::Obj(members) = root else { return };
            let i = match members.iter().position(|(m, _)| m == k) {
                Some(i) => i,
                None => {
                    members.push((k.clone(), unknown_empty()));
                    members.len() - 1
                }
            };
            insert_path(&mut members[i].1, rest, value);
        }
        Seg::Elem { field, key } => {
            if *root == unknown_empty() {
                *root = Json::Arr(Vec::new());
            }
            let Json::Arr(elems) = root else { return };
            if field == "." {
                if rest.is_empty()
                    && let Some(v) = value
                {
                    elems.push(v);
                }
                return;
            }
            let same = |e: &Json| match e.get(field) {
                Some(Json::Str(s)) => s == key,
                Some(other) => other.canonical() == *key,
                None => key.is_empty(),
            };
            let i = match elems.iter().position(same) {
                Some(i) => i,
                None => {
                    elems.push(Json::Obj(vec![(field.clone(), Json::Str(key.clone()))]));
                    elems.len() - 1
                }
            };
            if rest.is_empty() {
                if let Some(v) = value {
                    elems[i] = v;
                }
            } else {
                insert_path(&mut elems[i], rest, value);
            }
        }
    }
}

pub(crate) enum Item {
    Entry(Entry),
    Node(Node),
}

pub(crate) struct Child {
    pub(crate) seg: Seg,
    pub(crate) key: String,
    pub(crate) item: Item,
}

#[derive(Clone)]
pub(crate) enum Kind {
    Object,
    Keyed(KeyRule),
    /// A container known only from the registry's list of created containers.
    Any,
}

pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) in_template: bool,
    pub(crate) created: bool,
    /// For an element of a keyed array: the identifying member (name, template value and
    /// its position among the template's members, when the template has it).
    pub(crate) ident_field: Option<String>,
    pub(crate) ident: Option<(Json, usize)>,
    /// A registered plain value at this key (the template turned it into a container).
    pub(crate) leaf_reg: Option<RegisteredEntry>,
    /// Registered entries below this key that do not fit its kind (the template turned the
    /// owner's array into an object, or the other way round).
    pub(crate) below: Below,
    pub(crate) children: Vec<Child>,
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
            below: Below::default(),
            children: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn push(&mut self, child: Child) {
        self.index.insert(child.seg.clone(), self.children.len());
        self.children.push(child);
    }

    /// The value the owner wrote at `key` when it created this container, rebuilt from the
    /// registered entries and created containers below it; `None` when it did not create
    /// it, or registered nothing inside (which would tell no two elements apart).
    pub(crate) fn owned(&self, key: &str) -> Option<Owned> {
        if !self.created {
            return None;
        }
        let mut containers = Vec::new();
        let mut entries = Vec::new();
        self.collect(&mut containers, &mut entries);
        if entries.is_empty() {
            return None;
        }
        Some(Owned(rebuild(key, &containers, &entries)))
    }

    fn collect(&self, containers: &mut Vec<String>, entries: &mut Vec<(String, RegisteredEntry)>) {
        containers.extend(self.below.containers.iter().cloned());
        entries.extend(self.below.entries.iter().cloned());
        for child in &self.children {
            match &child.item {
                Item::Entry(e) => {
                    if let Some(r) = &e.reg {
                        entries.push((child.key.clone(), r.clone()));
                    }
                }
                Item::Node(n) => {
                    if n.created {
                        containers.push(child.key.clone());
                    }
                    if let Some(r) = &n.leaf_reg {
                        entries.push((child.key.clone(), r.clone()));
                    }
                    n.collect(containers, entries);
                }
            }
        }
    }
}

/// The template and registry merged into one tree.
pub(crate) struct Wanted {
    pub(crate) root: Node,
    /// The registry's whitespace of containers the owner filled (see `Registry::blanks`).
    pub(crate) blanks: std::collections::BTreeMap<String, String>,
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
        blanks: std::collections::BTreeMap::new(),
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
                // An array is keyed by its rule, or else a set of whole values; one without a
                // rule that holds a value twice (`["-e", "A", "-e", "B"]`) is one value.
                Json::Arr(a) => match self.rules.rule_for(path) {
                    Some(rule) => Item::Node(self.keyed(a, rule.clone(), path)?),
                    None if distinct(a) => {
                        Item::Node(self.keyed(a, KeyRule::whole_values(), path)?)
                    }
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

/// True when no two elements are the same value.
fn distinct(elems: &[Json]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(elems.len());
    elems.iter().all(|e| seen.insert(e.canonical()))
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
            Landing::Below(b) => {
                b.entries.push((key.to_owned(), reg));
                return true;
            }
            Landing::Lost => return false,
        };
        if misfit(node, last) {
            node.below.entries.push((key.to_owned(), reg));
            return true;
        }
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
            Landing::Below(b) => {
                b.containers.push(key.to_owned());
                return;
            }
            Landing::Lost => return,
        };
        if misfit(node, last) {
            node.below.containers.push(key.to_owned());
            return;
        }
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
            Item::Entry(e) => e.below.containers.push(key.to_owned()),
        }
    }
}

/// True when `seg` is of the other kind than `node` holds (a member of an array, an
/// element of an object): the template changed the shape of what the owner wrote.
fn misfit(node: &Node, seg: &Seg) -> bool {
    matches!(
        (&node.kind, seg),
        (Kind::Object, Seg::Elem { .. }) | (Kind::Keyed(_), Seg::Key(_))
    )
}

fn fits(node: &Node, seg: &Seg) -> bool {
    match (&node.kind, seg) {
        (Kind::Object, Seg::Key(_)) => true,
        (Kind::Keyed(rule), Seg::Elem { field, .. }) => rule.field_name() == field,
        _ => false,
    }
}

/// The kind of the container at `path[..=i]`, from the step that follows it.
fn kind_for(path: &[Seg], i: usize, rules: &KeyRules) -> Option<Kind> {
    match path.get(i + 1) {
        Some(Seg::Elem { field, .. }) => Some(rules.array_rule(&path[..=i]))
            .filter(|r| r.field_name() == field)
            .or_else(|| KeyRule::new("/", field).ok())
            .map(Kind::Keyed),
        _ => Some(Kind::Object),
    }
}

enum Landing<'n> {
    Node(&'n mut Node),
    /// The path passes through a template entry (a plain value now) or a container of the
    /// other kind: the registered key goes below it.
    Below(&'n mut Below),
    Lost,
}

/// The node at `path[..depth]`, created (as not in the template) where missing.
fn descend<'n>(
    mut node: &'n mut Node,
    path: &[Seg],
    depth: usize,
    rules: &KeyRules,
) -> Landing<'n> {
    for (i, seg) in path.iter().enumerate().take(depth) {
        if misfit(node, seg) {
            return Landing::Below(&mut node.below);
        }
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
            Item::Entry(e) => return Landing::Below(&mut e.below),
        };
    }
    Landing::Node(node)
}
