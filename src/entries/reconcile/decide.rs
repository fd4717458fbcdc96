//! The rules for one entry: the forward pass (insert, update, keep drift, adopt) and the
//! reverse pass (prune, leave co-owned and seed entries, keep edited ones).

use super::{Mode, Walk};
use crate::entries::error::WarningKind;
use crate::entries::registry::RegisteredEntry;
use crate::entries::tree::Entry;
use crate::entries::value::Json;
use crate::entries::{EntryAction, EntryState, OnDrift};

/// What to do with one entry's place in the file.
pub(super) enum Op {
    Keep,
    Replace(Json),
    Remove,
    Insert(Json),
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

impl Walk<'_, '_> {
    pub(super) fn decide(
        &mut self,
        e: &Entry,
        key: &str,
        ptr: &str,
        file: Option<(&Json, usize)>,
    ) -> Op {
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
            (None, Some(v)) if e.below.owned(key, false).is_some_and(|mine| mine.is(v)) => {
                // A container this owner wrote, untouched, that the template made a value
                // (or whose key rules made it one value): the owner's, and the template's.
                self.keep(key, written(t, false, false));
                if v.same(t) {
                    self.report(key, ptr, EntryState::Pristine, A::Unchanged);
                    Op::Keep
                } else {
                    self.report(key, ptr, EntryState::Pristine, A::Updated);
                    Op::Replace(t.clone())
                }
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
}
