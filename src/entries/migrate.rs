//! Key-rule changes: a registry written under other rules (a release added, removed or
//! changed a `--key`, or an older registry that held whole arrays or resolved `:path` keys)
//! is re-keyed to the current rules before anything is matched, so that the owner's
//! elements keep their owner under their new identities (same element, new key). Every run
//! goes through [`migrate`]; with unchanged rules it gives the registry back as it was.

use std::collections::{BTreeMap, BTreeSet};

use super::keys::{self, Field, KeyRules, PathNorm, Seg};
use super::registry::{RegisteredEntry, Registry};
use super::tree;
use super::value::Json;

/// The registry with every key re-keyed to `rules`.
pub(crate) fn migrate(reg: &Registry, rules: &KeyRules, norm: &mut PathNorm<'_>) -> Registry {
    let mut out = Registry {
        version: reg.version,
        entries: BTreeMap::new(),
        containers: BTreeSet::new(),
        blanks: reg.blanks.clone(),
    };
    // Elements whose identifying field the rules changed, with entries below them: rebuilt
    // whole from what the owner registered inside (when the owner created the element).
    let mut regroup: BTreeMap<String, Vec<(String, RegisteredEntry)>> = BTreeMap::new();
    for (key, r) in &reg.entries {
        let Some(path) = keys::parse_key(key) else {
            out.entries.insert(key.clone(), r.clone());
            continue;
        };
        match rekey(&path, Some(&Json::from_serde(&r.base)), rules, norm) {
            Rekeyed::Path(new) => expand(&new, r, rules, norm, &mut out),
            Rekeyed::Regroup(at) => {
                let prefix = keys::format_key(&path[..=at]);
                regroup
                    .entry(prefix)
                    .or_default()
                    .push((key.clone(), r.clone()));
            }
        }
    }
    for key in &reg.containers {
        let Some(path) = keys::parse_key(key) else {
            out.containers.insert(key.clone());
            continue;
        };
        match rekey(&path, None, rules, norm) {
            Rekeyed::Path(new) => {
                out.containers.insert(keys::format_key(&new));
            }
            Rekeyed::Regroup(at) => {
                let prefix = keys::format_key(&path[..=at]);
                regroup.entry(prefix).or_default();
            }
        }
    }
    for (prefix, inside) in regroup {
        let created = reg.containers.contains(&prefix);
        let Some(path) = keys::parse_key(&prefix) else {
            continue;
        };
        if !created {
            // Not the owner's element: what it registered inside keeps its old keys (and
            // is reported as no longer fitting).
            for (k, r) in inside {
                out.entries.insert(k, r);
            }
            continue;
        }
        let containers: Vec<String> = reg
            .containers
            .iter()
            .filter(|c| keys::under(c, &prefix))
            .cloned()
            .collect();
        let value = tree::rebuild(&prefix, &containers, &inside);
        let entry = RegisteredEntry {
            hash: value.hash(),
            base: value.to_serde(),
            adopted: inside.iter().any(|(_, r)| r.adopted),
            seed: inside.iter().any(|(_, r)| r.seed),
        };
        if let Rekeyed::Path(new) = rekey(&path, Some(&value), rules, norm) {
            expand(&new, &entry, rules, norm, &mut out);
        }
    }
    out
}

enum Rekeyed {
    /// The path under the current rules.
    Path(Vec<Seg>),
    /// The element at this index of the path is identified by another field now, and the
    /// key goes on below it.
    Regroup(usize),
}

/// A registered path under the current rules: the last element's key is computed again from
/// its value (when known); an element in the middle keeps its key when its field is the same
/// (normalized again for `:path`).
fn rekey(path: &[Seg], value: Option<&Json>, rules: &KeyRules, norm: &mut PathNorm<'_>) -> Rekeyed {
    let mut out: Vec<Seg> = Vec::with_capacity(path.len());
    for (i, seg) in path.iter().enumerate() {
        let Seg::Elem { field, key } = seg else {
            out.push(seg.clone());
            continue;
        };
        let rule = rules.array_rule(&out);
        let last = i + 1 == path.len();
        let new_key = match value {
            Some(v) if last => {
                let fv = match &rule.field {
                    Field::Itself => Some(v),
                    Field::Member(f) => v.get(f),
                };
                norm.element_key(&rule, fv)
            }
            _ if field != rule.field_name() => return Rekeyed::Regroup(i),
            _ if rule.path => norm.normalize(key),
            _ => key.clone(),
        };
        out.push(Seg::Elem {
            field: rule.field_name().to_owned(),
            key: new_key,
        });
    }
    Rekeyed::Path(out)
}

/// Registers `r` at `path`, or, when the current rules make its value structure (an array
/// of distinct values, an element with keyed arrays inside), the entries and containers its
/// value holds.
fn expand(
    path: &[Seg],
    r: &RegisteredEntry,
    rules: &KeyRules,
    norm: &mut PathNorm<'_>,
    out: &mut Registry,
) {
    let value = Json::from_serde(&r.base);
    let mut path = path.to_vec();
    let structure = match (&value, path.last()) {
        // As the template tree has it: an array is keyed by its rule, or a set when its
        // values are distinct.
        (Json::Arr(a), Some(Seg::Key(_))) => rules.rule_for(&path).is_some() || distinct(a),
        (Json::Obj(_), Some(Seg::Elem { field, .. })) => field != "." && rules.any_below(&path),
        _ => false,
    };
    if !structure || r.seed {
        out.entries.insert(keys::format_key(&path), r.clone());
        return;
    }
    walk(&mut path, &value, r, rules, norm, out);
}

fn distinct(a: &[Json]) -> bool {
    let mut seen = BTreeSet::new();
    a.iter().all(|e| seen.insert(e.canonical()))
}

/// Registers the entries of a value the owner wrote as one, now structure.
fn walk(
    path: &mut Vec<Seg>,
    value: &Json,
    r: &RegisteredEntry,
    rules: &KeyRules,
    norm: &mut PathNorm<'_>,
    out: &mut Registry,
) {
    let leaf = |v: &Json| RegisteredEntry {
        hash: v.hash(),
        base: v.to_serde(),
        adopted: r.adopted,
        seed: false,
    };
    let is_elem = matches!(path.last(), Some(Seg::Elem { .. }));
    match value {
        Json::Arr(a) if !is_elem || rules.rule_for(path).is_some() => {
            if !r.adopted {
                out.containers.insert(keys::format_key(path));
            }
            let rule = rules.array_rule(path);
            for e in a {
                let fv = match &rule.field {
                    Field::Itself => Some(e),
                    Field::Member(f) => e.get(f),
                };
                path.push(Seg::Elem {
                    field: rule.field_name().to_owned(),
                    key: norm.element_key(&rule, fv),
                });
                match (e, &rule.field) {
                    (Json::Obj(_), Field::Member(_)) if rules.any_below(path) => {
                        walk(path, e, r, rules, norm, out);
                    }
                    _ => {
                        out.entries.insert(keys::format_key(path), leaf(e));
                    }
                }
                path.pop();
            }
        }
        Json::Obj(m) => {
            if !r.adopted {
                out.containers.insert(keys::format_key(path));
            }
            let ident = match path.last() {
                Some(Seg::Elem { field, .. }) => Some(field.clone()),
                _ => None,
            };
            for (k, v) in m {
                if ident.as_deref() == Some(k.as_str()) {
                    continue;
                }
                path.push(Seg::Key(k.clone()));
                let whole =
                    matches!(v, Json::Arr(a) if rules.rule_for(path).is_none() && !distinct(a));
                match v {
                    Json::Obj(_) | Json::Arr(_) if !whole => walk(path, v, r, rules, norm, out),
                    _ => {
                        out.entries.insert(keys::format_key(path), leaf(v));
                    }
                }
                path.pop();
            }
        }
        _ => {
            out.entries.insert(keys::format_key(path), leaf(value));
        }
    }
}
