//! The reconciler matrix: `sync` with template files through the real binary, in a
//! temporary `$HOME` — idempotence, user edits, pruning, skip-version upgrades, other
//! owners, `--owner` and `--check`.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{self, backdate, code, json, mtime, stderr};

/// Runs demarcate in `home` with `HOME` and `XDG_STATE_HOME` inside it. The matrix's
/// templates are ZYLOS's: a `sync` that names no owner is given `--owner ZYLOS`.
fn run(home: &Path, args: &[&str]) -> Output {
    let mut args = args.to_vec();
    if args.first() == Some(&"sync") && !args.contains(&"--owner") {
        args.extend(["--owner", "ZYLOS"]);
    }
    Command::new(util::bin())
        .args(&args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("NO_COLOR", "1")
        .output()
        .expect("demarcate runs")
}

/// Runs and expects exit 0.
fn ok(home: &Path, args: &[&str]) -> Output {
    let o = run(home, args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    o
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("target readable")
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("file written");
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shell,
    Env,
}

impl Kind {
    const fn file(self) -> &'static str {
        match self {
            Self::Shell => ".profile",
            Self::Env => ".env",
        }
    }

    fn assign(self, key: &str, value: &str) -> String {
        match self {
            Self::Shell => format!("export {key}={value}"),
            Self::Env => format!("{key}={value}"),
        }
    }
}

/// The template versions: regions added, changed and removed across versions.
fn version(kind: Kind, v: u8) -> Vec<(&'static str, String)> {
    let a = |k, val| kind.assign(k, val);
    match v {
        1 => vec![
            ("path", a("ZYLOS_PATH", "v1")),
            ("hooks", a("ZYLOS_HOOK", "on")),
            ("legacy", a("ZYLOS_LEGACY", "1")),
        ],
        2 => vec![
            ("path", a("ZYLOS_PATH", "v2")),
            ("hooks", a("ZYLOS_HOOK", "on")),
            ("completion", a("ZYLOS_COMPLETION", "v2")),
        ],
        _ => vec![
            ("path", a("ZYLOS_PATH", "v3")),
            ("prompt", a("ZYLOS_PROMPT", "v3")),
            ("hooks", a("ZYLOS_HOOK", "v3")),
            ("completion", a("ZYLOS_COMPLETION", "v3")),
        ],
    }
}

/// A template file: text outside regions (ignored), then the regions without hashes.
fn template(kind: Kind, owner: &str, regions: &[(&str, String)]) -> Vec<u8> {
    let mut t = format!("# {owner} template (text outside regions is ignored)\n");
    t.push_str(&kind.assign("IGNORED", "1"));
    t.push('\n');
    for (name, body) in regions {
        t.push_str(&format!(
            "# BEGIN {owner} MANAGED {name}\n{body}\n# END {owner} MANAGED {name}\n"
        ));
    }
    t.into_bytes()
}

/// A region as the tool writes it, with `eol` line endings.
fn region(name: &str, body: &str, eol: &str) -> String {
    let normalized = format!("{body}\n");
    let hash = demarcate::body_hash(normalized.as_bytes());
    format!(
        "# BEGIN ZYLOS MANAGED {name} hash={hash}{eol}{body}{eol}# END ZYLOS MANAGED {name}{eol}"
    )
}

fn regions_of(kind: Kind, v: u8, eol: &str) -> String {
    version(kind, v)
        .iter()
        .map(|(n, b)| region(n, b, eol))
        .collect()
}

/// The user's own file before any sync.
fn base(kind: Kind, eol: &str) -> String {
    let lines = match kind {
        Kind::Shell => vec![
            "# ~/.profile: the user's own",
            "export EDITOR=vi",
            "alias ll='ls -l'",
        ],
        Kind::Env => vec![
            "# app settings",
            "DATABASE_URL=postgres://localhost/app",
            "DEBUG=0",
        ],
    };
    lines.iter().map(|l| format!("{l}{eol}")).collect()
}

/// Lines the user adds between and after the regions once v1 is in.
fn user_between(kind: Kind, eol: &str) -> [String; 3] {
    [
        format!(
            "# mine, between path and hooks{eol}{}{eol}",
            kind.assign("MINE", "1")
        ),
        format!("{}{eol}", kind.assign("BETWEEN", "1")),
        format!("{}{eol}", kind.assign("AFTER", "1")),
    ]
}

fn sync_template(home: &Path, target: &str, tpl: &str, extra: &[&str]) -> Output {
    let mut args = vec!["sync", target, "--template", tpl];
    args.extend_from_slice(extra);
    run(home, &args)
}

/// Writes the v1, v2, v3 templates of `kind` into `home`.
fn write_templates(home: &Path, kind: Kind) {
    for v in 1..=3 {
        write(
            &home.join(format!("v{v}.tpl")),
            &template(kind, "ZYLOS", &version(kind, v)),
        );
    }
}

/// Syncs v1 into a fresh copy of the base file named `name`, then adds the user's lines
/// between and after the regions; returns the path.
fn prepared(home: &Path, kind: Kind, eol: &str, name: &str) -> std::path::PathBuf {
    let path = home.join(name);
    write(&path, base(kind, eol).as_bytes());
    let fmt = match kind {
        Kind::Shell => "shell",
        Kind::Env => "env",
    };
    let o = sync_template(home, name, "v1.tpl", &["--format", fmt]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let want = format!("{}{}", base(kind, eol), regions_of(kind, 1, eol));
    assert_eq!(text(&read(&path)), want, "v1 appended in template order");
    let [between, middle, after] = user_between(kind, eol);
    let end_path = format!("# END ZYLOS MANAGED path{eol}");
    let end_hooks = format!("# END ZYLOS MANAGED hooks{eol}");
    let edited = text(&read(&path))
        .replacen(&end_path, &format!("{end_path}{between}"), 1)
        .replacen(&end_hooks, &format!("{end_hooks}{middle}"), 1)
        + &after;
    write(&path, edited.as_bytes());
    path
}

fn actions(o: &Output) -> Vec<(String, String)> {
    let j = json(o);
    j["files"][0]["regions"]
        .as_array()
        .expect("regions array")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name").to_owned(),
                r["action"].as_str().expect("action").to_owned(),
            )
        })
        .collect()
}

/// A second sync with the same template: exit 0, bytes and mtime unchanged, `changed:
/// false`, every action `unchanged`.
fn assert_idempotent(home: &Path, target: &str, tpl: &str, extra: &[&str]) {
    let path = home.join(target);
    let before = read(&path);
    backdate(&path);
    let t0 = mtime(&path);
    let mut args = extra.to_vec();
    args.push("--json");
    let o = sync_template(home, target, tpl, &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        text(&read(&path)),
        text(&before),
        "second sync changed bytes"
    );
    assert_eq!(mtime(&path), t0, "second sync rewrote the file");
    let j = json(&o);
    assert_eq!(j["files"][0]["changed"], false, "{j}");
    let acts = actions(&o);
    assert!(!acts.is_empty(), "the report lists the regions: {j}");
    for (name, action) in acts {
        assert_eq!(action, "unchanged", "region {name} on a second sync: {j}");
    }
}

#[test]
fn second_sync_changes_nothing() {
    for (kind, eol) in [
        (Kind::Shell, "\n"),
        (Kind::Shell, "\r\n"),
        (Kind::Env, "\n"),
    ] {
        let home = tempfile::tempdir().expect("temp dir");
        write_templates(home.path(), kind);
        prepared(home.path(), kind, eol, kind.file());
        assert_idempotent(home.path(), kind.file(), "v1.tpl", &[]);
        ok(home.path(), &["sync", kind.file(), "--template", "v3.tpl"]);
        assert_idempotent(home.path(), kind.file(), "v3.tpl", &[]);
        assert_idempotent(home.path(), kind.file(), "v3.tpl", &["--owner", "ZYLOS"]);
    }
}

#[test]
fn user_edits_survive_an_upgrade() {
    for kind in [Kind::Shell, Kind::Env] {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        write_templates(h, kind);
        let path = prepared(h, kind, "\n", kind.file());
        // A hand edit inside the hooks region.
        let hooks_v1 = kind.assign("ZYLOS_HOOK", "on");
        let mine = kind.assign("ZYLOS_HOOK", "mine");
        let before = text(&read(&path));
        let edited = before.replacen(&hooks_v1, &mine, 1);
        assert_ne!(edited, before);
        write(&path, edited.as_bytes());
        let o = run(h, &["sync", kind.file(), "--template", "v3.tpl", "--json"]);
        assert_eq!(code(&o), 0, "drift kept is a success: {}", stderr(&o));
        assert!(
            stderr(&o).contains("warning:") && stderr(&o).contains("hooks"),
            "a warning names the edited region: {}",
            stderr(&o)
        );
        let acts = actions(&o);
        assert!(
            acts.contains(&("hooks".to_owned(), "kept-drifted".to_owned())),
            "{acts:?}"
        );
        assert!(
            acts.contains(&("path".to_owned(), "updated".to_owned())),
            "{acts:?}"
        );
        let after = text(&read(&path));
        // The hand edit and every user line survive.
        assert!(
            after.contains(&format!("{mine}\n# END ZYLOS MANAGED hooks\n")),
            "{after}"
        );
        for l in base(kind, "\n")
            .lines()
            .chain(user_between(kind, "\n").iter().flat_map(|s| s.lines()))
        {
            assert!(
                after.contains(&format!("{l}\n")),
                "user line {l:?} lost: {after}"
            );
        }
        assert!(after.contains(&region("path", &kind.assign("ZYLOS_PATH", "v3"), "\n")));
        // Still kept (not overwritten) on the next run, and nothing changes.
        backdate(&path);
        let t0 = mtime(&path);
        let o = run(h, &["sync", kind.file(), "--template", "v3.tpl"]);
        assert_eq!(code(&o), 0);
        assert_eq!(text(&read(&path)), after);
        assert_eq!(mtime(&path), t0);
    }
}

#[test]
fn obsolete_pristine_region_is_pruned() {
    for kind in [Kind::Shell, Kind::Env] {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        write_templates(h, kind);
        let path = prepared(h, kind, "\n", kind.file());
        let o = run(h, &["sync", kind.file(), "--template", "v2.tpl", "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let acts = actions(&o);
        assert!(
            acts.contains(&("legacy".to_owned(), "pruned".to_owned())),
            "{acts:?}"
        );
        let after = text(&read(&path));
        assert!(!after.contains("ZYLOS_LEGACY"), "{after}");
        assert!(!after.contains("MANAGED legacy"), "{after}");
        let [between, middle, end] = user_between(kind, "\n");
        let want = format!(
            "{}{}{between}{}{}{middle}{end}",
            base(kind, "\n"),
            region("path", &kind.assign("ZYLOS_PATH", "v2"), "\n"),
            region("hooks", &kind.assign("ZYLOS_HOOK", "on"), "\n"),
            region("completion", &kind.assign("ZYLOS_COMPLETION", "v2"), "\n"),
        );
        assert_eq!(after, want);
    }
}

#[test]
fn obsolete_edited_region_is_kept_with_a_warning() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let kind = Kind::Shell;
    write_templates(h, kind);
    let path = prepared(h, kind, "\n", kind.file());
    let edited = text(&read(&path)).replacen("ZYLOS_LEGACY=1", "ZYLOS_LEGACY=kept-by-me", 1);
    write(&path, edited.as_bytes());
    let o = run(h, &["sync", kind.file(), "--template", "v2.tpl", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("warning:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("legacy"), "{}", stderr(&o));
    let acts = actions(&o);
    assert!(
        acts.contains(&("legacy".to_owned(), "kept-drifted".to_owned())),
        "{acts:?}"
    );
    let after = text(&read(&path));
    assert!(
        after.contains("export ZYLOS_LEGACY=kept-by-me\n# END ZYLOS MANAGED legacy\n"),
        "{after}"
    );
    // `list` shows it drifted.
    let o = run(h, &["list", kind.file(), "--json"]);
    let j = json(&o);
    let legacy = j["files"][0]["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .find(|r| r["name"] == "legacy")
        .cloned()
        .expect("legacy listed");
    assert_eq!(legacy["state"], "drifted");
}

#[test]
fn skip_version_upgrade_equals_step_by_step() {
    for (kind, eol) in [
        (Kind::Shell, "\n"),
        (Kind::Shell, "\r\n"),
        (Kind::Env, "\n"),
    ] {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        write_templates(h, kind);
        let (a, b) = match kind {
            Kind::Shell => ("a.sh", "b.sh"),
            Kind::Env => ("a.env", "b.env"),
        };
        let pa = prepared(h, kind, eol, a);
        let pb = prepared(h, kind, eol, b);
        assert_eq!(read(&pa), read(&pb));
        ok(h, &["sync", a, "--template", "v2.tpl"]);
        ok(h, &["sync", a, "--template", "v3.tpl"]);
        ok(h, &["sync", b, "--template", "v3.tpl"]);
        let (ta, tb) = (text(&read(&pa)), text(&read(&pb)));
        assert_eq!(ta, tb, "v1 -> v3 differs from v1 -> v2 -> v3");
        let [between, middle, end] = user_between(kind, eol);
        let r = |name: &str, key: &str, val: &str| region(name, &kind.assign(key, val), eol);
        let want = format!(
            "{}{}{}{between}{}{}{middle}{end}",
            base(kind, eol),
            r("path", "ZYLOS_PATH", "v3"),
            r("prompt", "ZYLOS_PROMPT", "v3"),
            r("hooks", "ZYLOS_HOOK", "v3"),
            r("completion", "ZYLOS_COMPLETION", "v3"),
        );
        assert_eq!(ta, want);
        assert_idempotent(h, a, "v3.tpl", &[]);
        assert_idempotent(h, b, "v3.tpl", &[]);
    }
}

const ANSIBLE: &str = "# BEGIN ANSIBLE MANAGED BLOCK\nexport ANSIBLE_HOME=/opt/ansible\n# END ANSIBLE MANAGED BLOCK\n";
const CONDA: &str = "# >>> conda initialize >>>\n# !! Contents within this block are managed by 'conda init' !!\n__conda_setup=\"$('/opt/conda/bin/conda' 'shell.bash' 'hook' 2> /dev/null)\"\nif [ $? -eq 0 ]; then\n    eval \"$__conda_setup\"\nfi\nunset __conda_setup\n# <<< conda initialize <<<\n";

#[test]
fn other_owners_are_untouched_through_every_sync() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    write_templates(h, Kind::Shell);
    let path = h.join(".bashrc");
    let original = format!(
        "{}{ANSIBLE}alias g=git\n{CONDA}export LAST=1\n",
        base(Kind::Shell, "\n")
    );
    write(&path, original.as_bytes());
    for tpl in ["v1.tpl", "v2.tpl", "v3.tpl", "v1.tpl", "v3.tpl"] {
        ok(h, &["sync", ".bashrc", "--template", tpl]);
        let now = text(&read(&path));
        assert_eq!(now.matches(ANSIBLE).count(), 1, "after {tpl}: {now}");
        assert_eq!(now.matches(CONDA).count(), 1, "after {tpl}: {now}");
        assert!(
            now.contains(&format!("{ANSIBLE}alias g=git\n{CONDA}export LAST=1\n")),
            "after {tpl}: {now}"
        );
    }
    // An empty template is refused (a mistake, nothing written) unless --allow-empty says
    // the release ships nothing: then every ZYLOS region goes, and nothing else.
    write(&h.join("empty.tpl"), b"# no regions\n");
    let before = read(&path);
    let o = run(h, &["sync", ".bashrc", "--template", "empty.tpl"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("empty.tpl: the template has no regions"));
    assert!(stderr(&o).contains("--allow-empty"), "{}", stderr(&o));
    assert_eq!(read(&path), before);
    ok(
        h,
        &[
            "sync",
            ".bashrc",
            "--template",
            "empty.tpl",
            "--owner",
            "ZYLOS",
            "--allow-empty",
        ],
    );
    assert_eq!(text(&read(&path)), original);
    let o = run(h, &["list", ".bashrc", "--json"]);
    let j = json(&o);
    assert_eq!(j["files"][0]["regions"][0]["owner"], "ANSIBLE");
    assert_eq!(j["files"][0]["regions"][0]["state"], "unhashed");
}

#[test]
fn each_owner_syncs_its_own_template_and_a_mixed_template_is_refused() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let kind = Kind::Shell;
    let zylos = template(kind, "ZYLOS", &version(kind, 1));
    let acme = template(kind, "ACME", &[("tools", kind.assign("ACME_TOOLS", "2"))]);
    write(&h.join("zylos.tpl"), &zylos);
    write(&h.join("acme.tpl"), &acme);
    let mut both = zylos.clone();
    both.extend(&acme);
    write(&h.join("both.tpl"), &both);
    // The target holds an ACME region the template no longer has, and an older ACME tools.
    let acme_old = format!(
        "{}{}",
        region("old", &kind.assign("ACME_OLD", "1"), "\n"),
        region("tools", &kind.assign("ACME_TOOLS", "1"), "\n"),
    )
    .replace("ZYLOS", "ACME");
    let original = format!("{}{acme_old}", base(kind, "\n"));
    let path = h.join(".profile");
    write(&path, original.as_bytes());
    // A template that mixes owners is refused, naming the other owner's region and line.
    for owner in ["ZYLOS", "ACME"] {
        let o = run(
            h,
            &[
                "sync",
                ".profile",
                "--template",
                "both.tpl",
                "--owner",
                owner,
            ],
        );
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("both.tpl:") && stderr(&o).contains("mixes owners"),
            "{}",
            stderr(&o)
        );
        assert_eq!(text(&read(&path)), original, "nothing written");
    }
    let o = run(
        h,
        &[
            "sync",
            ".profile",
            "--template",
            "zylos.tpl",
            "--owner",
            "ZYLOS",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = text(&read(&path));
    assert_eq!(after, format!("{original}{}", regions_of(kind, 1, "\n")));
    for (name, action) in actions(&o) {
        if name == "old" || name == "tools" {
            assert_eq!(
                action, "unchanged",
                "ACME {name} touched under --owner ZYLOS"
            );
        }
    }
    // ACME's own template reconciles ACME: tools updated, old pruned, ZYLOS untouched.
    let o = run(
        h,
        &[
            "sync",
            ".profile",
            "--template",
            "acme.tpl",
            "--owner",
            "ACME",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let acts = actions(&o);
    assert!(
        acts.contains(&("old".to_owned(), "pruned".to_owned())),
        "{acts:?}"
    );
    assert!(
        acts.contains(&("tools".to_owned(), "updated".to_owned())),
        "{acts:?}"
    );
    let after = text(&read(&path));
    assert!(!after.contains("ACME_OLD"), "{after}");
    assert!(after.contains("export ACME_TOOLS=2\n"), "{after}");
    assert!(after.contains(&regions_of(kind, 1, "\n")), "{after}");
}

#[test]
fn check_flag_exits_0_when_converged_and_1_when_stale() {
    for kind in [Kind::Shell, Kind::Env] {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        write_templates(h, kind);
        let path = prepared(h, kind, "\n", kind.file());
        let before = read(&path);
        backdate(&path);
        let t0 = mtime(&path);
        let o = run(h, &["sync", kind.file(), "--template", "v1.tpl", "--check"]);
        assert_eq!(code(&o), 0, "converged: {}", stderr(&o));
        let o = run(h, &["sync", kind.file(), "--template", "v2.tpl", "--check"]);
        assert_eq!(code(&o), 1, "stale: {}", stderr(&o));
        let o = run(
            h,
            &[
                "sync",
                kind.file(),
                "--template",
                "v3.tpl",
                "--check",
                "--json",
            ],
        );
        assert_eq!(code(&o), 1);
        assert_eq!(json(&o)["files"][0]["changed"], true);
        assert_eq!(read(&path), before, "--check wrote the file");
        assert_eq!(mtime(&path), t0, "--check touched the file");
        // After the real sync, --check is clean again.
        ok(h, &["sync", kind.file(), "--template", "v3.tpl"]);
        let o = run(h, &["sync", kind.file(), "--template", "v3.tpl", "--check"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}
