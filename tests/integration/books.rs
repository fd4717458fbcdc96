//! The books are true (SPEC): random sequences over two owners of set, sync, remove,
//! uninstall, hand edits and losing the state store, on a shell profile, through the
//! library. After every step, what `uninstall` would remove of an owner is exactly the
//! owner's unchanged regions that a run of the owner decided since the store was last lost;
//! after a last sync of each owner, uninstalling both gives back the original bytes plus
//! the user's own lines, unless a hand edit touched a region.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use demarcate::{Action, Desired, EditOptions, Identity, RegionState, Silent, StateDir};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const OWNERS: [&str; 2] = ["ACME", "ZYLOS"];
const NAMES: [&str; 3] = ["path", "hooks", "env"];
const ORIGINAL: &str = "# mine\nexport EDITOR=vi\n";

#[derive(Clone, Debug)]
enum Step {
    Set {
        owner: usize,
        name: usize,
        v: u8,
    },
    Sync {
        owner: usize,
        names: Vec<(usize, u8)>,
    },
    Remove {
        owner: usize,
        name: usize,
    },
    Uninstall {
        owner: usize,
    },
    /// The user appends a line of their own at the end.
    Append(u8),
    /// The user edits the body of the first region, if any.
    EditRegion,
    /// The state store is deleted.
    LoseStore,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..2usize, 0..3usize, 0..3u8).prop_map(|(owner, name, v)| Step::Set { owner, name, v }),
        2 => (0..2usize, proptest::collection::vec((0..3usize, 0..3u8), 1..3))
            .prop_map(|(owner, names)| Step::Sync { owner, names }),
        1 => (0..2usize, 0..3usize).prop_map(|(owner, name)| Step::Remove { owner, name }),
        1 => (0..2usize).prop_map(|owner| Step::Uninstall { owner }),
        1 => (0..9u8).prop_map(Step::Append),
        1 => Just(Step::EditRegion),
        1 => Just(Step::LoseStore),
    ]
}

fn body(owner: usize, name: usize, v: u8) -> Vec<u8> {
    format!("echo {}-{}-{v}\n", OWNERS[owner], NAMES[name]).into_bytes()
}

/// The owner's regions in the file that are pristine (what uninstall may remove).
fn pristine(path: &Path, opts: &EditOptions, owner: &str) -> BTreeSet<String> {
    demarcate::list(path, opts)
        .regions
        .iter()
        .filter(|r| r.owner == owner && r.state == RegionState::Pristine)
        .map(|r| r.name.to_string())
        .collect()
}

/// What uninstall of `owner` would remove (a dry run).
fn would_uninstall(opts: &EditOptions, owner: &str) -> BTreeSet<String> {
    let dry = EditOptions {
        dry_run: true,
        ..opts.clone()
    };
    demarcate::uninstall(owner, &dry, &Silent)
        .iter()
        .flat_map(|o| &o.outcomes)
        .filter(|o| o.action == Action::Removed)
        .map(|o| o.id.name.clone())
        .collect()
}

fn sync(dir: &Path, path: &Path, opts: &EditOptions, owner: usize, names: &[(usize, u8)]) -> u8 {
    let mut template = Vec::new();
    let mut seen = BTreeSet::new();
    for &(n, v) in names {
        if seen.insert(n) {
            template.extend(format!("# BEGIN {} MANAGED {}\n", OWNERS[owner], NAMES[n]).bytes());
            template.extend(body(owner, n, v));
            template.extend(format!("# END {} MANAGED {}\n", OWNERS[owner], NAMES[n]).bytes());
        }
    }
    let t = dir.join("template.sh");
    std::fs::write(&t, template).expect("template");
    demarcate::sync(path, &t, Some(OWNERS[owner]), opts, &Silent).exit_code()
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("state");
    let path = tmp.path().join("rc.sh");
    std::fs::write(&path, ORIGINAL).expect("write");
    let opts = EditOptions {
        state: StateDir::At(store.clone()),
        ..EditOptions::default()
    };
    // Per owner: what it last asked for, and which of its regions a run decided since the
    // store was last lost.
    let mut desired: [BTreeMap<usize, u8>; 2] = [BTreeMap::new(), BTreeMap::new()];
    let mut decided: [BTreeSet<String>; 2] = [BTreeSet::new(), BTreeSet::new()];
    let mut user = String::new();
    let mut touched = false;
    for s in steps {
        match s {
            Step::Set { owner, name, v } => {
                let d = Desired {
                    id: Identity::new(OWNERS[*owner], NAMES[*name]),
                    body: body(*owner, *name, *v),
                };
                let o = demarcate::set(&path, d, &opts, &Silent);
                prop_assert_eq!(o.exit_code(), 0, "{:?}", o.error);
                desired[*owner].insert(*name, *v);
                decided[*owner].insert(NAMES[*name].to_owned());
            }
            Step::Sync { owner, names } => {
                let code = sync(tmp.path(), &path, &opts, *owner, names);
                prop_assert_eq!(code, 0);
                desired[*owner] = BTreeMap::new();
                for &(n, v) in names {
                    desired[*owner].entry(n).or_insert(v);
                }
                decided[*owner] = desired[*owner]
                    .keys()
                    .map(|n| NAMES[*n].to_owned())
                    .collect();
            }
            Step::Remove { owner, name } => {
                let id = Identity::new(OWNERS[*owner], NAMES[*name]);
                let o = demarcate::remove(&path, id, &opts, &Silent);
                prop_assert_eq!(o.exit_code(), 0, "{:?}", o.error);
                desired[*owner].remove(name);
                decided[*owner].remove(NAMES[*name]);
            }
            Step::Uninstall { owner } => {
                for o in demarcate::uninstall(OWNERS[*owner], &opts, &Silent) {
                    prop_assert!(o.error.is_none(), "{:?}", o.error);
                }
                desired[*owner].clear();
                decided[*owner].clear();
            }
            Step::Append(n) => {
                let line = format!("echo user{n}\n");
                let mut text = std::fs::read_to_string(&path).expect("read");
                text.push_str(&line);
                std::fs::write(&path, text).expect("write");
                user.push_str(&line);
            }
            Step::EditRegion => {
                let text = std::fs::read_to_string(&path).expect("read");
                if let Some(at) = text.find("echo ACME-").or_else(|| text.find("echo ZYLOS-")) {
                    let edited = format!("{}echo edited; {}", &text[..at], &text[at..]);
                    std::fs::write(&path, edited).expect("write");
                    touched = true;
                }
            }
            Step::LoseStore => {
                let _ = std::fs::remove_dir_all(&store);
                decided = [BTreeSet::new(), BTreeSet::new()];
            }
        }
        // The books: uninstall would remove exactly the owner's unchanged regions that a
        // run decided since the store was lost — none it does not know, none it forgot.
        for (i, owner) in OWNERS.iter().enumerate() {
            let expected: BTreeSet<String> = pristine(&path, &opts, owner)
                .intersection(&decided[i])
                .cloned()
                .collect();
            prop_assert_eq!(would_uninstall(&opts, owner), expected, "after {:?}", s);
        }
    }
    // Each owner's installer runs once more (as an upgrade would), then both uninstall.
    // It asks for what it last asked for and what it finds of its own in the file (an
    // uninstall after the store was lost could not know those).
    let listed = demarcate::list(&path, &opts).regions;
    for owner in 0..2 {
        let mut wanted = desired[owner].clone();
        for r in listed.iter().filter(|r| r.owner == OWNERS[owner]) {
            if let Some(n) = NAMES.iter().position(|n| *n == r.name) {
                wanted.entry(n).or_insert(0);
            }
        }
        let names: Vec<(usize, u8)> = wanted.iter().map(|(n, v)| (*n, *v)).collect();
        if !names.is_empty() {
            prop_assert_eq!(sync(tmp.path(), &path, &opts, owner, &names), 0);
        }
    }
    for owner in OWNERS {
        demarcate::uninstall(owner, &opts, &Silent);
    }
    if !touched {
        let text = std::fs::read_to_string(&path).expect("read");
        prop_assert_eq!(text, format!("{ORIGINAL}{user}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_store_and_the_file_agree_after_every_step(steps in proptest::collection::vec(step(), 1..10)) {
        run(&steps)?;
    }
}
