//! Owned entries in strict JSON files, without markers.
//!
//! Files such as `~/.claude/settings.json` or `.mcp.json` are read by `JSON.parse`-style
//! readers that reject comments, so ownership cannot be written into the file. Instead each
//! owner keeps a [`Registry`] per target: the canonical key of every entry it wrote, a hash
//! of the value as written, the value itself (the base for merges) and the containers it
//! created. Everything here is pure: bytes and registries in, a plan (new bytes, updated
//! registry, per-entry report, warnings) out. Reading, locking and writing the file and the
//! registry together is the caller's business.
//!
//! - **Entries** are the leaf members of the template's objects (`/model`); an object value
//!   is structure and is recursed into; an array is a set of whole values (each element an
//!   entry keyed by its canonical value, `[.=…]`; one that holds a value twice stays one
//!   value), and a [`KeyRule`] identifies its elements by a field instead
//!   (`/hooks/*=matcher`), optionally normalized as a command line (`=command:path`).
//! - [`sync`] runs the forward pass (insert, update, keep what the user edited) and the
//!   reverse pass (remove what the template no longer ships and nobody edited).
//! - [`remove_owner`] uninstalls an owner; [`list`] reports entry states.
//! - Edits are splices: new members at the end of their object, new elements at the end of
//!   their array, indented like their siblings, with the file's line endings; no other byte
//!   changes, and the result is checked as strict JSON without duplicate keys.
//!
//! ```
//! use demarcate::entries::{self, EntryAction, EntryOptions, KeyRules, Template};
//!
//! let user = b"{\n  \"theme\": \"dark\",\n  \"hooks\": {}\n}\n";
//! let template = Template::parse(br#"{
//!   "model": "opus",
//!   "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "node ~/z/h.js"}]}]}
//! }"#).expect("a JSON template");
//! let rules = KeyRules::parse(&["/hooks/*=matcher", "/hooks/*/*/hooks=command:path"]).expect("rules");
//! let opts = EntryOptions { home: Some("/home/u".into()), ..EntryOptions::default() };
//!
//! // First install: no registry yet.
//! let plan = entries::sync(user, &template, &rules, "zylos", None, &[], &opts).expect("strict JSON");
//! let text = String::from_utf8(plan.new.clone()).expect("utf-8");
//! // `model` goes before `hooks`, where the template has it.
//! assert!(text.starts_with("{\n  \"theme\": \"dark\",\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": ["));
//! assert!(plan.entries.iter().all(|e| e.action == EntryAction::Inserted));
//! assert!(plan.registry.entries.contains_key(
//!     "/hooks/Stop[matcher=]/hooks[command=node /home/u/z/h.js]"));
//!
//! // The same release again: nothing changes.
//! let again = entries::sync(&plan.new, &template, &rules, "zylos", Some(&plan.registry), &[], &opts)
//!     .expect("still strict JSON");
//! assert_eq!(again.new, plan.new);
//!
//! // Uninstall: the owner's untouched entries go, and the containers it created.
//! let gone = entries::remove_owner(&plan.new, &rules, "zylos", &plan.registry, &[], &opts)
//!     .expect("removal");
//! assert_eq!(gone.new, user);
//! ```

mod error;
mod keys;
mod migrate;
mod reconcile;
mod registry;
mod scan;
mod splice;
mod tree;
mod value;

pub use error::{Conflict, EntryError, EntryWarning, Input, Location, SyntaxKind, WarningKind};
pub use keys::{KeyRule, KeyRules, Resolver};
pub use registry::{REGISTRY_VERSION, RegisteredEntry, Registry};
pub use scan::MAX_DEPTH;

use std::fmt;

use reconcile::{Mode, Walk};
use value::Json;

/// What to do with an entry the user edited since this owner last wrote it: the drift policy
/// regions use too. For an entry, [`OnDrift::Fail`] refuses the whole plan
/// ([`EntryError::Drift`]) and [`OnDrift::Merge`] merges member by member inside an object
/// value (the user's changes and the template's changes to different members both arrive; a
/// member both changed keeps the user's).
pub use crate::plan::OnDrift;

/// How a run treats entries.
#[derive(Clone, Default)]
pub struct EntryOptions<'a> {
    /// Canonical keys (or key prefixes at a segment boundary) of seed entries: written only
    /// when absent, never updated or removed.
    pub seeds: Vec<String>,
    /// Do not add back registered entries the user deleted.
    pub respect_removals: bool,
    /// What to do with edited entries.
    pub on_drift: OnDrift,
    /// Take over entries registered to another owner.
    pub force: bool,
    /// Also delete co-owned entries (present before the first install) in the reverse pass
    /// and on removal.
    pub prune_adopted: bool,
    /// The home directory for `:path` keys (`~/`, `$HOME/`, `${HOME}/`).
    pub home: Option<String>,
    /// Resolves an absolute path through symlinks when it exists (`None` otherwise); used
    /// by `:path` keys. Typically `|p| std::fs::canonicalize(p).ok()` as a string.
    pub resolve: Option<Resolver<'a>>,
}

impl fmt::Debug for EntryOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntryOptions")
            .field("seeds", &self.seeds)
            .field("respect_removals", &self.respect_removals)
            .field("on_drift", &self.on_drift)
            .field("force", &self.force)
            .field("prune_adopted", &self.prune_adopted)
            .field("home", &self.home)
            .field("resolve", &self.resolve.is_some())
            .finish()
    }
}

/// The state of an entry in the file as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryState {
    /// Registered, and the file holds what was written.
    Pristine,
    /// Registered, and the user changed it.
    Drifted,
    /// Not in the file.
    Missing,
    /// In the file but not registered to this owner: the user's.
    User,
}

/// What a run did (or, in a dry run, would do) with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryAction {
    /// Nothing to do.
    Unchanged,
    /// Written where it was absent.
    Inserted,
    /// Replaced with the template's (or a merged) value.
    Updated,
    /// Deleted on the owner's removal.
    Removed,
    /// Edited by the user; kept as it is.
    KeptDrifted,
    /// The user's; left as it is.
    KeptUser,
    /// Found equal to the template without a registry: now co-owned.
    Adopted,
    /// Deleted because the template no longer ships it.
    Pruned,
    /// Forgotten and left in place (co-owned or seed entries are never deleted).
    Left,
}

impl EntryState {
    /// The state's name as in reports.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Pristine => "pristine",
            EntryState::Drifted => "drifted",
            EntryState::Missing => "missing",
            EntryState::User => "user",
        }
    }
}

impl EntryAction {
    /// The action's name as in reports.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EntryAction::Unchanged => "unchanged",
            EntryAction::Inserted => "inserted",
            EntryAction::Updated => "updated",
            EntryAction::Removed => "removed",
            EntryAction::KeptDrifted => "kept-drifted",
            EntryAction::KeptUser => "kept-user",
            EntryAction::Adopted => "adopted",
            EntryAction::Pruned => "pruned",
            EntryAction::Left => "left",
        }
    }
}

/// One entry in a report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EntryReport {
    /// The owner reconciled.
    pub owner: String,
    /// The canonical key.
    pub key: String,
    /// The JSON Pointer of the entry in the file after the run (array elements by their
    /// index then, never `/-`); for an entry the run removed, where it stood; for one not in
    /// the file, where it would go.
    pub pointer: String,
    /// The state as read.
    pub state: EntryState,
    /// What was done.
    pub action: EntryAction,
}

/// The result of [`sync`] or [`remove_owner`]: write `new` and `registry` together (when
/// `new` equals the input, write nothing to the file).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryPlan {
    /// The file's new bytes.
    pub new: Vec<u8>,
    /// This owner's registry after the run.
    pub registry: Registry,
    /// Registries of other owners that changed (entries transferred away from them).
    pub others: Vec<(String, Registry)>,
    /// Every entry considered, in template order, then the reverse pass.
    pub entries: Vec<EntryReport>,
    /// Things to tell the user.
    pub warnings: Vec<EntryWarning>,
}

impl EntryPlan {
    /// True when the file's bytes change.
    #[must_use]
    pub fn changes(&self, src: &[u8]) -> bool {
        self.new != src
    }
}

/// A JSON template: the entries one owner ships.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    root: Vec<(String, Json)>,
}

impl Template {
    /// Reads a template from strict JSON text (member order kept).
    ///
    /// # Errors
    /// [`EntryError::Syntax`] or [`EntryError::NotAnObject`] for the template.
    pub fn parse(bytes: &[u8]) -> Result<Template, EntryError> {
        scan::validate(bytes, Input::Template).map_err(|(input, location, kind)| {
            EntryError::Syntax {
                input,
                location,
                kind,
            }
        })?;
        let not_object = |at| EntryError::NotAnObject {
            input: Input::Template,
            location: scan::location(bytes, at),
        };
        let start = scan::root_start(bytes).ok_or_else(|| not_object(0))?;
        match Json::parse_at(bytes, start) {
            Ok((Json::Obj(root), _)) => Ok(Template { root }),
            _ => Err(not_object(start)),
        }
    }

    /// True when the template holds no entry at all: nothing but objects, down to empty ones
    /// (an object value is structure, never an entry of its own).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        fn structure_only(members: &[(String, Json)]) -> bool {
            members.iter().all(|(_, v)| match v {
                Json::Obj(inner) => structure_only(inner),
                _ => false,
            })
        }
        structure_only(&self.root)
    }

    /// A template from a serde_json value (member order as serde_json keeps it).
    ///
    /// # Errors
    /// [`EntryError::NotAnObject`] when the value is not an object.
    pub fn from_value(value: &serde_json::Value) -> Result<Template, EntryError> {
        match Json::from_serde(value) {
            Json::Obj(root) => Ok(Template { root }),
            _ => Err(EntryError::NotAnObject {
                input: Input::Template,
                location: Location { line: 1, column: 1 },
            }),
        }
    }

    /// The template with no entries.
    #[must_use]
    pub fn empty() -> Template {
        Template { root: Vec::new() }
    }
}

fn check_target(src: &[u8]) -> Result<(), EntryError> {
    scan::validate(src, Input::Target)
        .map_err(|(input, location, kind)| EntryError::Syntax {
            input,
            location,
            kind,
        })
        .or_else(|e| {
            if scan::root_start(src).is_none() {
                Ok(())
            } else {
                Err(e)
            }
        })
}

/// Reconciles one owner's entries in `src` with `template`: the forward pass, then the
/// reverse pass over registered entries the template no longer has.
///
/// `registry` is this owner's registry (`None` when there is none or it was lost: entries
/// equal to the template are then adopted as co-owned); `others` are the registries of the
/// other owners of the same file (an entry registered to one of them is a conflict unless
/// `opts.force` transfers it; a container this owner created and no longer wants, that holds
/// another owner's entries, is handed to that owner).
///
/// # Errors
/// The file or template is not strict JSON (line and column), the file's top level is not
/// an object, a conflict with another owner, drift with [`OnDrift::Fail`], or a template with
/// two elements of the same key.
pub fn sync(
    src: &[u8],
    template: &Template,
    rules: &KeyRules,
    owner: &str,
    registry: Option<&Registry>,
    others: &[(String, Registry)],
    opts: &EntryOptions<'_>,
) -> Result<EntryPlan, EntryError> {
    check_target(src)?;
    let mut norm = keys::PathNorm::new(opts.home.as_deref(), opts.resolve);
    let mut wanted = tree::wanted(&template.root, rules, &opts.seeds, &mut norm)?;
    let mut own = registry
        .map(|r| migrate::migrate(r, rules, &mut norm))
        .unwrap_or_default();
    let mut changed_others: Vec<(String, Registry)> = Vec::new();
    let mut conflicts = Vec::new();
    for key in wanted.template_keys() {
        for (other, reg) in others.iter().filter(|(o, _)| o != owner) {
            let Some(theirs) = reg.entries.get(key) else {
                continue;
            };
            if !opts.force {
                conflicts.push(Conflict {
                    key: key.clone(),
                    owner: owner.to_owned(),
                    other: other.clone(),
                });
                continue;
            }
            own.entries
                .entry(key.clone())
                .or_insert_with(|| theirs.clone());
            let slot = match changed_others.iter().position(|(o, _)| o == other) {
                Some(i) => i,
                None => {
                    changed_others.push((other.clone(), reg.clone()));
                    changed_others.len() - 1
                }
            };
            changed_others[slot].1.entries.remove(key);
        }
    }
    if !conflicts.is_empty() {
        return Err(EntryError::Conflict(conflicts));
    }
    let mut lost = Vec::new();
    for (key, reg) in &own.entries {
        if !wanted.attach(key, reg.clone(), rules) {
            lost.push(key.clone());
        }
    }
    for key in &own.containers {
        wanted.mark_created(key, rules);
    }
    wanted.blanks.clone_from(&own.blanks);
    let walk = Walk::new(src, Mode::Sync, opts, owner, registry.is_some()).with_theirs(others);
    let mut out = walk.run(&wanted)?;
    hand_over(&out.orphans, owner, others, &mut changed_others);
    for key in lost {
        out.warnings.push(EntryWarning {
            kind: WarningKind::Reshaped,
            key,
            location: None,
        });
    }
    Ok(EntryPlan {
        new: out.new,
        registry: out.registry,
        others: changed_others,
        entries: out.entries,
        warnings: out.warnings,
    })
}

/// Uninstalls `owner` from `src`: every pristine entry it registered is deleted (co-owned
/// entries only with `opts.prune_adopted`), edited ones are kept with a warning, and the
/// containers it created go when left empty.
///
/// `others` are the registries of the other owners of the same file: a container the owner
/// created that still holds another owner's entries is handed to that owner (returned in
/// `others` of the plan), so that it goes with the last entry in it.
///
/// # Errors
/// The file is not strict JSON or its top level is not an object.
pub fn remove_owner(
    src: &[u8],
    rules: &KeyRules,
    owner: &str,
    registry: &Registry,
    others: &[(String, Registry)],
    opts: &EntryOptions<'_>,
) -> Result<EntryPlan, EntryError> {
    let (mut plan, orphans) = walk_registry(src, rules, owner, registry, opts, Mode::Remove)?;
    hand_over(&orphans, owner, others, &mut plan.others);
    Ok(plan)
}

/// Hands each container `owner` created and leaves behind, not empty, to the first other
/// owner with an entry or a created container inside it, so that the container still goes
/// with the last entry in it (of any owner). Without such an owner the rest is the user's and
/// the container is forgotten. Changed registries are added to `changed`.
fn hand_over(
    orphans: &[String],
    owner: &str,
    others: &[(String, Registry)],
    changed: &mut Vec<(String, Registry)>,
) {
    let inside = |c: &str, k: &str| {
        k.strip_prefix(c)
            .is_some_and(|rest| rest.starts_with('/') || rest.starts_with('['))
    };
    for c in orphans {
        let heir = others.iter().find_map(|(o, reg)| {
            if o == owner {
                return None;
            }
            let reg = changed.iter().find(|(x, _)| x == o).map_or(reg, |(_, r)| r);
            let holds = reg.entries.keys().any(|k| inside(c, k))
                || reg.containers.iter().any(|k| inside(c, k));
            holds.then(|| (o.clone(), reg.clone()))
        });
        let Some((o, reg)) = heir else { continue };
        let slot = match changed.iter().position(|(x, _)| *x == o) {
            Some(i) => i,
            None => {
                changed.push((o, reg));
                changed.len() - 1
            }
        };
        changed[slot].1.containers.insert(c.clone());
    }
}

/// The state of every registered entry of every owner in `src` (pristine, drifted or
/// missing); nothing is changed.
///
/// # Errors
/// The file is not strict JSON or its top level is not an object.
pub fn list(
    src: &[u8],
    rules: &KeyRules,
    registries: &[(String, Registry)],
    opts: &EntryOptions<'_>,
) -> Result<Vec<EntryReport>, EntryError> {
    check_target(src)?;
    let mut out = Vec::new();
    for (owner, reg) in registries {
        out.extend(
            walk_registry(src, rules, owner, reg, opts, Mode::List)?
                .0
                .entries,
        );
    }
    Ok(out)
}

fn walk_registry(
    src: &[u8],
    rules: &KeyRules,
    owner: &str,
    registry: &Registry,
    opts: &EntryOptions<'_>,
    mode: Mode,
) -> Result<(EntryPlan, Vec<String>), EntryError> {
    check_target(src)?;
    let mut norm = keys::PathNorm::new(opts.home.as_deref(), opts.resolve);
    let mut wanted = tree::wanted(&[], rules, &[], &mut norm)?;
    let registry = &migrate::migrate(registry, rules, &mut norm);
    let mut lost = Vec::new();
    for (key, reg) in &registry.entries {
        if !wanted.attach(key, reg.clone(), rules) {
            lost.push(key.clone());
        }
    }
    for key in &registry.containers {
        wanted.mark_created(key, rules);
    }
    wanted.blanks.clone_from(&registry.blanks);
    let mut out = Walk::new(src, mode, opts, owner, true).run(&wanted)?;
    let orphans = std::mem::take(&mut out.orphans);
    for key in lost {
        out.warnings.push(EntryWarning {
            kind: WarningKind::Reshaped,
            key,
            location: None,
        });
    }
    let plan = EntryPlan {
        new: out.new,
        registry: out.registry,
        others: Vec::new(),
        entries: out.entries,
        warnings: out.warnings,
    };
    Ok((plan, orphans))
}
