//! `demarcate apply`: the reconciler matrix over a temporary HOME.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::{self, backdate, code, json, mtime, stderr, stdout};

/// A temporary HOME (`home/`) and a manifest folder (`m/`) beside it.
struct Home {
    tmp: tempfile::TempDir,
}

/// A shell template with `(name, body)` regions of owner ZYLOS.
fn template(regions: &[(&str, &str)]) -> String {
    regions
        .iter()
        .map(|(n, b)| format!("# BEGIN ZYLOS MANAGED {n}\n{b}# END ZYLOS MANAGED {n}\n"))
        .collect()
}

impl Home {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(tmp.path().join("home")).expect("home");
        std::fs::create_dir_all(tmp.path().join("m")).expect("m");
        Self { tmp }
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn state(&self) -> PathBuf {
        self.home().join(".local/state/demarcate")
    }

    /// Writes `rel` in the manifest folder.
    fn put(&self, rel: &str, text: &str) {
        std::fs::write(self.tmp.path().join("m").join(rel), text).expect("write");
    }

    /// Writes `rel` in HOME.
    fn put_home(&self, rel: &str, text: &str) {
        std::fs::write(self.home().join(rel), text).expect("write");
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.home().join(rel)).expect("read")
    }

    /// The manifest: `.bashrc` from `tpl` (in m/), and `.env` with one block.
    fn manifest(&self, tpl: &str, extra: &str) {
        self.put(
            "m.toml",
            &format!(
                "owner = \"ZYLOS\"\n\n[[file]]\npath = \"~/.bashrc\"\ntemplate = \"{tpl}\"\n\n\
                 [[block]]\npath = \"$HOME/.env\"\nname = \"api\"\ncontent = \"API_URL=https://x\"\n{extra}"
            ),
        );
    }

    fn apply(&self, args: &[&str]) -> Output {
        let home = self.home();
        let home = home.to_str().expect("UTF-8 temp path");
        let mut all = vec!["apply", "m/m.toml"];
        all.extend_from_slice(args);
        util::run_env(self.tmp.path(), &all, &[("HOME", home)])
    }

    fn apply_ok(&self, args: &[&str]) -> Output {
        let o = self.apply(args);
        assert_eq!(code(&o), 0, "stderr: {}", stderr(&o));
        o
    }
}

/// The actions of a `--json` report, as `(file name, region name, action)`.
fn actions(o: &Output) -> Vec<(String, String, String)> {
    let v = json(o);
    let mut out = Vec::new();
    for f in v["files"].as_array().expect("files") {
        let name = Path::new(f["path"].as_str().unwrap_or_default())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for r in f["regions"].as_array().expect("regions") {
            out.push((
                name.clone(),
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["action"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    out
}

fn has(acts: &[(String, String, String)], file: &str, name: &str, action: &str) -> bool {
    acts.iter()
        .any(|(f, n, a)| f == file && n == name && a == action)
}

const USER: &str = "# my own lines\nalias ll='ls -l'\n";

fn v(n: u32) -> String {
    match n {
        1 => template(&[
            ("path", "export PATH=\"$HOME/.z/bin:$PATH\"\n"),
            ("hooks", "eval \"$(z hook)\"\n"),
        ]),
        2 => template(&[
            ("path", "export PATH=\"$HOME/.z/v2/bin:$PATH\"\n"),
            ("hooks", "eval \"$(z hook)\"\n"),
            ("completion", "source ~/.z/completion.bash\n"),
        ]),
        3 => template(&[
            ("path", "export PATH=\"$HOME/.z/v3/bin:$PATH\"\n"),
            ("completion", "source ~/.z/completion.bash\n"),
        ]),
        _ => template(&[
            ("env", "export Z_HOME=\"$HOME/.z\"\n"),
            ("path", "export PATH=\"$Z_HOME/v4/bin:$PATH\"\n"),
            ("completion", "source \"$Z_HOME/completion.bash\"\n"),
        ]),
    }
}

#[test]
fn a_second_apply_changes_nothing_and_writes_nothing() {
    let h = Home::new();
    h.put("v1.sh", &v(1));
    h.manifest("v1.sh", "");
    h.put_home(".bashrc", USER);
    let o = h.apply_ok(&["--json"]);
    assert!(
        has(&actions(&o), ".bashrc", "path", "inserted"),
        "{}",
        stdout(&o)
    );
    assert!(has(&actions(&o), ".env", "api", "inserted"));
    assert!(h.read(".bashrc").starts_with(USER));
    assert!(
        h.state().join("dirs").is_dir(),
        "the state store is written"
    );
    for f in [".bashrc", ".env"] {
        backdate(&h.home().join(f));
    }
    let before = [
        mtime(&h.home().join(".bashrc")),
        mtime(&h.home().join(".env")),
    ];
    let bytes = h.read(".bashrc");
    let o = h.apply_ok(&["--json"]);
    let v = json(&o);
    for f in v["files"].as_array().expect("files") {
        assert_eq!(f["changed"], false, "{f}");
    }
    assert!(
        actions(&o).iter().all(|(_, _, a)| a == "unchanged"),
        "{:?}",
        actions(&o)
    );
    let after = [
        mtime(&h.home().join(".bashrc")),
        mtime(&h.home().join(".env")),
    ];
    assert_eq!(before, after, "nothing was rewritten");
    assert_eq!(h.read(".bashrc"), bytes);
    assert_eq!(code(&h.apply(&["--check"])), 0);
}

#[test]
fn user_edits_outside_and_inside_regions_are_kept() {
    let h = Home::new();
    h.put("v1.sh", &v(1));
    h.put("v2.sh", &v(2));
    h.manifest("v1.sh", "");
    h.put_home(".bashrc", USER);
    h.apply_ok(&[]);
    // The user adds a line after the regions and edits the `path` region.
    let edited = h.read(".bashrc").replace(".z/bin", ".z/mybin") + "export EDITOR=vim\n";
    h.put_home(".bashrc", &edited);
    h.manifest("v2.sh", "");
    let o = h.apply_ok(&["--json"]);
    let acts = actions(&o);
    assert!(has(&acts, ".bashrc", "path", "kept-drifted"), "{acts:?}");
    assert!(has(&acts, ".bashrc", "completion", "inserted"), "{acts:?}");
    assert!(stderr(&o).contains("edited by hand"), "{}", stderr(&o));
    let now = h.read(".bashrc");
    assert!(now.starts_with(USER), "{now}");
    assert!(now.ends_with("export EDITOR=vim\n"), "{now}");
    assert!(
        now.contains(".z/mybin") && !now.contains(".z/v2/bin"),
        "{now}"
    );
    assert!(now.contains("completion.bash"));
}

#[test]
fn the_reverse_pass_prunes_pristine_and_keeps_edited_regions() {
    for edit_hooks in [false, true] {
        let h = Home::new();
        h.put("v2.sh", &v(2));
        h.put("v3.sh", &v(3));
        h.manifest("v2.sh", "");
        h.put_home(".bashrc", USER);
        h.apply_ok(&[]);
        if edit_hooks {
            let edited = h.read(".bashrc").replace("z hook", "z hook --quiet");
            h.put_home(".bashrc", &edited);
        }
        h.manifest("v3.sh", "");
        let o = h.apply_ok(&["--json"]);
        let acts = actions(&o);
        let now = h.read(".bashrc");
        if edit_hooks {
            assert!(has(&acts, ".bashrc", "hooks", "kept-drifted"), "{acts:?}");
            assert!(now.contains("z hook --quiet"), "{now}");
            assert!(stderr(&o).contains("\"ZYLOS MANAGED hooks\" was edited by hand"));
        } else {
            assert!(has(&acts, ".bashrc", "hooks", "pruned"), "{acts:?}");
            assert!(!now.contains("hooks"), "{now}");
        }
        assert!(has(&acts, ".bashrc", "path", "updated"), "{acts:?}");
        assert!(now.starts_with(USER));
        // Converged: the next run changes nothing.
        let o = h.apply_ok(&["--json"]);
        assert!(json(&o)["files"][0]["changed"] == false, "{}", stdout(&o));
    }
}

#[test]
fn a_skipped_version_upgrade_equals_the_step_by_step_one() {
    let direct = Home::new();
    let steps = Home::new();
    for h in [&direct, &steps] {
        for n in 1..=4 {
            h.put(&format!("v{n}.sh"), &v(n));
        }
        h.put_home(".bashrc", USER);
        h.manifest("v1.sh", "");
        h.apply_ok(&[]);
    }
    direct.manifest("v4.sh", "");
    direct.apply_ok(&[]);
    for n in 2..=4 {
        steps.manifest(&format!("v{n}.sh"), "");
        steps.apply_ok(&[]);
    }
    let a = direct.read(".bashrc");
    assert_eq!(a, steps.read(".bashrc"));
    assert_eq!(direct.read(".env"), steps.read(".env"));
    assert!(
        a.contains("v4/bin") && a.contains("Z_HOME") && !a.contains("hooks"),
        "{a}"
    );
    // And the region order follows the template.
    let env_at = a.find("MANAGED env").unwrap_or(usize::MAX);
    let path_at = a.find("MANAGED path").unwrap_or(0);
    assert!(env_at < path_at, "{a}");
}

#[test]
fn every_path_spelling_reaches_one_file_and_one_region() {
    let h = Home::new();
    let home = h.home();
    std::os::unix::fs::symlink(home.join("x.sh"), home.join("link.sh")).expect("symlink");
    let mut m = String::from("owner = \"ZYLOS\"\n");
    for p in [
        "~/x.sh".to_owned(),
        "$HOME/x.sh".to_owned(),
        "${HOME}/x.sh".to_owned(),
        home.join("x.sh").display().to_string(),
        "~/link.sh".to_owned(),
        "../home/x.sh".to_owned(),
    ] {
        m.push_str(&format!(
            "[[block]]\npath = \"{p}\"\nname = \"hook\"\ncontent = \"echo hook\"\n"
        ));
    }
    h.put("m.toml", &m);
    h.put_home("x.sh", "echo user\n");
    let o = h.apply_ok(&["--json"]);
    assert_eq!(
        json(&o)["files"].as_array().map(Vec::len),
        Some(1),
        "{}",
        stdout(&o)
    );
    let text = h.read("x.sh");
    assert_eq!(
        text.matches("BEGIN ZYLOS MANAGED hook").count(),
        1,
        "{text}"
    );
    assert!(std::fs::symlink_metadata(home.join("link.sh")).is_ok_and(|m| m.is_symlink()));
    let o = h.apply_ok(&["--json"]);
    assert_eq!(json(&o)["files"][0]["changed"], false);
}

#[test]
fn entries_that_disagree_on_one_file_fail_that_file_alone() {
    let h = Home::new();
    h.put(
        "m.toml",
        "owner = \"ZYLOS\"\n\
         [[block]]\npath = \"~/a.sh\"\nname = \"n\"\ncontent = \"echo 1\"\n\
         [[block]]\npath = \"~/b.sh\"\nname = \"n\"\ncontent = \"echo b\"\n\
         [[block]]\npath = \"$HOME/a.sh\"\nname = \"n\"\ncontent = \"echo 2\"\n",
    );
    h.put_home("a.sh", "echo user\n");
    let o = h.apply(&[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("m.toml:2 and m/m.toml:10"), "{err}");
    assert!(err.contains("different bodies"), "{err}");
    assert_eq!(
        h.read("a.sh"),
        "echo user\n",
        "the disputed file is untouched"
    );
    assert!(
        h.read("b.sh").contains("echo b"),
        "the other file converged"
    );
}

#[test]
fn one_damaged_file_fails_alone_and_the_others_converge() {
    let h = Home::new();
    h.put("v1.sh", &v(1));
    h.manifest("v1.sh", "");
    let damaged = "# BEGIN ZYLOS MANAGED path\necho half\n";
    h.put_home(".bashrc", damaged);
    let o = h.apply(&["--json"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("has no END"), "{}", stderr(&o));
    assert_eq!(h.read(".bashrc"), damaged);
    assert!(h.read(".env").contains("API_URL"));
    let files = json(&o)["files"].clone();
    assert!(
        files[0]["error"].is_string() && files[1]["error"].is_null(),
        "{files}"
    );
}

#[test]
fn without_the_state_store_nothing_is_lost_or_duplicated() {
    let h = Home::new();
    h.put("v1.sh", &v(1));
    h.put("v2.sh", &v(2));
    h.manifest("v1.sh", "");
    h.put_home(".bashrc", USER);
    h.apply_ok(&[]);
    let edited = h.read(".bashrc").replace("z hook", "z hook --mine");
    h.put_home(".bashrc", &edited);
    std::fs::remove_dir_all(h.home().join(".local")).expect("store deleted");
    h.manifest("v2.sh", "");
    let o = h.apply_ok(&["--json", "--on-drift", "merge"]);
    let acts = actions(&o);
    assert!(has(&acts, ".bashrc", "path", "updated"), "{acts:?}");
    assert!(
        has(&acts, ".bashrc", "hooks", "kept-drifted"),
        "no base: kept {acts:?}"
    );
    assert!(
        stderr(&o).contains("not in the state store"),
        "{}",
        stderr(&o)
    );
    let now = h.read(".bashrc");
    for n in ["path", "hooks", "completion"] {
        assert_eq!(
            now.matches(&format!("BEGIN ZYLOS MANAGED {n}")).count(),
            1,
            "{now}"
        );
    }
    assert!(now.contains("z hook --mine") && now.starts_with(USER));
    // A store that is there but corrupt counts as missing.
    std::fs::write(h.state().join("dirs").join("x.json"), "{").expect("write");
    let files = std::fs::read_dir(h.state().join("dirs")).expect("records");
    for f in files.flatten() {
        std::fs::write(f.path(), "{not json").expect("corrupt");
    }
    let o = h.apply_ok(&["--json"]);
    assert!(json(&o)["files"][0]["changed"] == false, "{}", stdout(&o));
    assert_eq!(h.read(".bashrc"), now);
}

#[test]
fn a_region_deleted_by_hand_is_added_back_unless_removals_are_respected() {
    let h = Home::new();
    h.put("v1.sh", &v(1));
    h.manifest("v1.sh", "");
    h.put_home(".bashrc", USER);
    h.apply_ok(&[]);
    let full = h.read(".bashrc");
    // The user deletes the whole region, markers and all.
    let b = full.find("# BEGIN ZYLOS MANAGED hooks").expect("hooks");
    let e = full.find("# END ZYLOS MANAGED hooks\n").expect("end") + 26;
    let without_hooks = format!("{}{}", &full[..b], &full[e..]);
    h.put_home(".bashrc", &without_hooks);
    let o = h.apply_ok(&["--json"]);
    assert!(has(&actions(&o), ".bashrc", "hooks", "inserted"));
    assert!(stderr(&o).contains("deleted by hand"), "{}", stderr(&o));
    assert_eq!(h.read(".bashrc"), full);
    h.put_home(".bashrc", &without_hooks);
    for _ in 0..2 {
        backdate(&h.home().join(".bashrc"));
        let before = mtime(&h.home().join(".bashrc"));
        let o = h.apply_ok(&["--json", "--respect-removals"]);
        let f = &json(&o)["files"][0];
        assert_eq!(f["changed"], false, "{f}");
        let hooks = f["regions"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == "hooks").cloned())
            .expect("hooks is reported");
        assert_eq!(
            (hooks["state"].as_str(), hooks["action"].as_str()),
            (Some("removed"), Some("kept-drifted"))
        );
        assert!(
            stderr(&o).contains("left out (--respect-removals)"),
            "{}",
            stderr(&o)
        );
        assert_eq!(h.read(".bashrc"), without_hooks);
        assert_eq!(mtime(&h.home().join(".bashrc")), before);
    }
}

#[test]
fn merge_combines_a_user_edit_with_a_new_release() {
    let h = Home::new();
    let r1 = template(&[("cfg", "export A=1\nexport B=1\nexport C=1\n")]);
    let r2 = template(&[("cfg", "export A=1\nexport B=1\nexport C=2\n")]);
    h.put("r1.sh", &r1);
    h.put("r2.sh", &r2);
    h.manifest("r1.sh", "");
    h.put_home(".bashrc", USER);
    h.apply_ok(&[]);
    let edited = h.read(".bashrc").replace("export A=1", "export A=mine");
    h.put_home(".bashrc", &edited);
    h.manifest("r2.sh", "");
    let o = h.apply_ok(&["--json", "--on-drift", "merge"]);
    assert!(
        has(&actions(&o), ".bashrc", "cfg", "merged"),
        "{}",
        stdout(&o)
    );
    let merged = h.read(".bashrc");
    assert!(
        merged.contains("export A=mine\nexport B=1\nexport C=2\n"),
        "{merged}"
    );
    assert!(merged.starts_with(USER));
    // Converged, with merge or with the default policy: the user's edit is never lost.
    for policy in ["merge", "keep"] {
        backdate(&h.home().join(".bashrc"));
        let before = mtime(&h.home().join(".bashrc"));
        let o = h.apply_ok(&["--json", "--on-drift", policy]);
        assert_eq!(
            json(&o)["files"][0]["changed"],
            false,
            "{policy}: {}",
            stdout(&o)
        );
        assert_eq!(h.read(".bashrc"), merged);
        assert_eq!(mtime(&h.home().join(".bashrc")), before);
    }
}

#[test]
fn a_merge_conflict_keeps_the_users_body_without_conflict_markers() {
    let h = Home::new();
    h.put("r1.sh", &template(&[("cfg", "export A=1\n")]));
    h.put("r2.sh", &template(&[("cfg", "export A=2\n")]));
    h.manifest("r1.sh", "on_drift = \"merge\"\n");
    h.put_home(".bashrc", USER);
    h.apply_ok(&[]);
    let edited = h.read(".bashrc").replace("export A=1", "export A=mine");
    h.put_home(".bashrc", &edited);
    h.manifest("r2.sh", "");
    h.put(
        "m.toml",
        &std::fs::read_to_string(h.tmp.path().join("m/m.toml"))
            .expect("m")
            .replace("[[block]]", "on_drift = \"merge\"\n\n[[block]]"),
    );
    let o = h.apply_ok(&["--json"]);
    assert!(
        has(&actions(&o), ".bashrc", "cfg", "kept-drifted"),
        "{}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert!(
        err.contains("yours: `export A=mine`; the template's: `export A=2`"),
        "{err}"
    );
    assert_eq!(h.read(".bashrc"), edited);
    assert!(!h.read(".bashrc").contains("<<<<<<<"));
}

#[test]
fn merge_works_for_set_and_sync_too() {
    let (dir, path) = util::with_file(".bashrc", b"# mine\n");
    let p = path.to_str().expect("path");
    let set = |body: &str| {
        util::run(
            dir.path(),
            &[
                "set",
                p,
                "--owner",
                "Z",
                "--name",
                "n",
                "--content",
                body,
                "--on-drift",
                "merge",
            ],
        )
    };
    assert_eq!(code(&set("a=1\nb=1\nc=1\nd=1")), 0);
    let edited = std::fs::read_to_string(&path)
        .expect("read")
        .replace("a=1", "a=mine");
    std::fs::write(&path, &edited).expect("write");
    let o = set("a=1\nb=1\nc=1\nd=2");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let now = std::fs::read_to_string(&path).expect("read");
    assert!(now.contains("a=mine\nb=1\nc=1\nd=2\n"), "{now}");
    std::fs::write(
        dir.path().join("t.sh"),
        "# BEGIN Z MANAGED n\na=1\nb=1\nc=1\nd=3\n# END Z MANAGED n\n",
    )
    .expect("t");
    let o = util::run(
        dir.path(),
        &[
            "sync",
            p,
            "--template",
            "t.sh",
            "--owner",
            "Z",
            "--on-drift",
            "merge",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["files"][0]["regions"][0]["action"], "merged");
    assert!(
        std::fs::read_to_string(&path)
            .expect("read")
            .contains("a=mine\nb=1\nc=1\nd=3\n")
    );
}

#[test]
fn a_crash_while_files_are_staged_leaves_each_old_or_new_and_the_next_run_converges() {
    let h = Home::new();
    std::fs::create_dir_all(h.home().join("fast")).expect("mkdir");
    std::fs::create_dir_all(h.home().join("slow")).expect("mkdir");
    h.put(
        "m.toml",
        "owner = \"ZYLOS\"\n\
         [[block]]\npath = \"~/fast/a.sh\"\nname = \"n\"\ncontent = \"echo new\"\n\
         [[block]]\npath = \"~/slow/b.sh\"\nname = \"n\"\ncontent = \"echo new\"\n",
    );
    h.put_home("fast/a.sh", "echo old\n");
    h.put_home("slow/b.sh", "echo old\n");
    let home = h.home();
    let started = home.join("validating");
    // The slow file's validation says it started, then takes long: the run is killed while
    // the fast file's new bytes are staged (or already in place).
    let mut child = std::process::Command::new(util::bin())
        .args([
            "apply",
            "m/m.toml",
            "--validate",
            "sh -c 'case \"$1\" in *slow*) : > \"$HOME/validating\"; sleep 3;; esac' sh %s",
        ])
        .current_dir(h.tmp.path())
        .env("HOME", &home)
        .env_remove("XDG_STATE_HOME")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow file's validation never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    std::fs::remove_file(&started).expect("rm");
    let new = |f: &str| {
        let t = h.read(f);
        t.starts_with("echo old\n# BEGIN ZYLOS MANAGED n hash=")
            && t.ends_with("echo new\n# END ZYLOS MANAGED n\n")
    };
    for f in ["fast/a.sh", "slow/b.sh"] {
        assert!(h.read(f) == "echo old\n" || new(f), "{f}: {}", h.read(f));
    }
    assert_eq!(
        h.read("slow/b.sh"),
        "echo old\n",
        "killed before its commit: the slow file is old"
    );
    let o = h.apply_ok(&["--json"]);
    let acts = actions(&o);
    assert!(has(&acts, "b.sh", "n", "inserted"), "{acts:?}");
    assert!(new("fast/a.sh") && new("slow/b.sh"));
    assert_eq!(h.read("slow/b.sh"), h.read("fast/a.sh"));
    let o = h.apply_ok(&["--json"]);
    assert!(actions(&o).iter().all(|(_, _, x)| x == "unchanged"));
    for d in ["fast", "slow"] {
        let left: Vec<_> = std::fs::read_dir(home.join(d))
            .expect("dir")
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().contains("demarcate-tmp"))
            .collect();
        assert!(
            left.is_empty(),
            "temporary files of the killed run stay: {left:?}"
        );
    }
}

#[test]
fn manifest_errors_name_the_file_and_line_and_change_nothing() {
    let h = Home::new();
    h.put_home(".bashrc", USER);
    for (text, want) in [
        (
            "owner = \"Z\"\n[[block]]\npath = \"~/.bashrc\"\nname = \"n\"\ncontent = \"x\n",
            "m/m.toml:5: not valid TOML",
        ),
        (
            "owner = \"Z\"\n[[block]]\npath = \"~/.bashrc\"\nname = \"n\"\ncontent = \"x\"\nwhere = \"end\"\n",
            "m/m.toml:6: unknown key `where`",
        ),
        (
            "owner = \"Z\"\n\n[[file]]\npath = \"~/.bashrc\"\ntemplate = \"nope.sh\"\n",
            "m/m.toml:5: `template`:",
        ),
        ("owners = \"Z\"\n", "m/m.toml:1: unknown key `owners`"),
    ] {
        h.put("m.toml", text);
        let o = h.apply(&[]);
        assert_eq!(code(&o), 2, "{text}");
        assert!(stderr(&o).contains(want), "{text}\n{}", stderr(&o));
        assert_eq!(h.read(".bashrc"), USER);
        assert!(!h.state().exists());
    }
    let o = h.apply(&["--json"]);
    assert!(
        json(&o)["files"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("m.toml:1"))
    );
}

#[test]
fn dry_run_shows_one_diff_check_tells_and_json_reports_every_file() {
    let h = Home::new();
    h.put("v1.sh", &v(1));
    h.manifest("v1.sh", "");
    h.put_home(".bashrc", USER);
    let o = h.apply_ok(&["--dry-run"]);
    let out = stdout(&o);
    assert!(
        out.contains("/home/.bashrc") && out.contains("/home/.env"),
        "{out}"
    );
    assert!(
        out.contains("+export PATH=") && out.contains("+API_URL=https://x"),
        "{out}"
    );
    assert_eq!(h.read(".bashrc"), USER);
    assert!(!h.home().join(".env").exists());
    assert_eq!(code(&h.apply(&["--check"])), 1);
    h.apply_ok(&[]);
    assert_eq!(code(&h.apply(&["--check"])), 0);
    assert_eq!(code(&h.apply(&["--check", "--dry-run"])), 0);
}

#[test]
fn many_files_converge_in_parallel_without_a_progress_bar_when_piped() {
    let h = Home::new();
    let mut m = String::from("owner = \"ZYLOS\"\n");
    for i in 0..120 {
        let d = h.home().join(format!("d{}", i % 7));
        std::fs::create_dir_all(&d).expect("mkdir");
        m.push_str(&format!(
            "[[block]]\npath = \"~/d{}/f{i}.env\"\nname = \"n\"\ncontent = \"K{i}=1\"\n",
            i % 7
        ));
    }
    h.put("m.toml", &m);
    let o = h.apply_ok(&["-q"]);
    assert_eq!(
        stderr(&o),
        "",
        "no progress bar and no messages when piped with -q"
    );
    for i in [0, 57, 119] {
        let t = h.read(&format!("d{}/f{i}.env", i % 7));
        assert!(t.contains(&format!("K{i}=1")), "{t}");
    }
    let o = h.apply_ok(&["--json"]);
    let v = json(&o);
    let files = v["files"].as_array().expect("files");
    assert_eq!(files.len(), 120);
    assert!(
        files[57]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/d1/f57.env")),
        "manifest order"
    );
    assert!(files.iter().all(|f| f["changed"] == false));
}

/// Files of the kill test: `n` small shell files in `dirs` folders of `home`, each with its
/// user's lines (the old content).
fn kill_test_files(home: &Path, n: usize, dirs: usize) -> Vec<(PathBuf, String)> {
    (0..n)
        .map(|i| {
            let d = home.join(format!("d{}", i % dirs));
            std::fs::create_dir_all(&d).expect("mkdir");
            let p = d.join(format!("f{i}.sh"));
            let old = format!("# user file {i}\nalias a{i}='ls -l'\n");
            std::fs::write(&p, &old).expect("write");
            (p, old)
        })
        .collect()
}

/// A manifest giving each of the kill test's files one region, of release `version`.
fn kill_test_manifest(path: &Path, n: usize, dirs: usize, version: u32) {
    let mut m = String::from("owner = \"ZYLOS\"\n");
    for i in 0..n {
        m.push_str(&format!(
            "[[block]]\npath = \"~/d{}/f{i}.sh\"\nname = \"hook\"\ncontent = \"export Z_{i}={version}\"\n",
            i % dirs
        ));
    }
    std::fs::write(path, m).expect("manifest");
}

fn apply_in(home: &Path, manifest: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(util::bin());
    c.arg("apply")
        .arg(manifest)
        .arg("-q")
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

/// `apply` over 1,000 files killed (SIGKILL) at random points, round after round, each
/// round switching the release: after every kill each file holds exactly its old or its new
/// bytes (never empty, never partial, never a mix); a run after the last kill converges
/// every file to the new bytes, and the run after it changes nothing and leaves no
/// temporary file behind.
#[test]
fn apply_killed_at_random_points_leaves_every_file_old_or_new() {
    const N: usize = 1_000;
    const DIRS: usize = 10;
    const ROUNDS: u32 = 8;
    let tmp = tempfile::tempdir().expect("tmp");
    let manifests: Vec<PathBuf> = (1..=2)
        .map(|v| {
            let p = tmp.path().join(format!("m{v}.toml"));
            kill_test_manifest(&p, N, DIRS, v);
            p
        })
        .collect();
    // What each release makes of the files, from an uninterrupted run (and how long a run
    // takes, to kill at points all along it).
    let reference = tmp.path().join("reference");
    let files = kill_test_files(&reference, N, DIRS);
    let started = std::time::Instant::now();
    let ok = apply_in(&reference, &manifests[0]).status().expect("run");
    let full = started.elapsed();
    assert!(ok.success());
    let read = |p: &Path| std::fs::read_to_string(p).expect("read");
    let mut releases: Vec<Vec<String>> = vec![files.iter().map(|(p, _)| read(p)).collect()];
    assert!(
        apply_in(&reference, &manifests[1])
            .status()
            .expect("run")
            .success()
    );
    releases.push(files.iter().map(|(p, _)| read(p)).collect());
    assert!(releases[0][0].contains("export Z_0=1") && releases[1][0].contains("export Z_0=2"));
    let home = tmp.path().join("home");
    let files = kill_test_files(&home, N, DIRS);
    let mut now: Vec<String> = files.iter().map(|(_, old)| old.clone()).collect();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9e37_79b9, |d| d.subsec_nanos())
        | 1;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let span = u32::try_from(full.as_millis() * 6 / 5)
        .unwrap_or(u32::MAX)
        .max(20);
    let mut mixed = 0;
    for round in 0..ROUNDS {
        let v = (round % 2) as usize;
        let mut child = apply_in(&home, &manifests[v]).spawn().expect("spawn");
        let t0 = std::time::Instant::now();
        if round % 2 == 0 {
            // Anywhere in the run.
            std::thread::sleep(std::time::Duration::from_millis(u64::from(random() % span)));
        } else {
            // While files are being renamed: once one of a sample has changed, a little later.
            let due: Vec<usize> = (0..N).filter(|&i| now[i] != releases[v][i]).collect();
            let sample: Vec<usize> = due.iter().step_by(due.len() / 50 + 1).copied().collect();
            while matches!(child.try_wait(), Ok(None))
                && sample
                    .iter()
                    .all(|&i| std::fs::read_to_string(&files[i].0).is_ok_and(|t| t == now[i]))
            {
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            std::thread::sleep(std::time::Duration::from_micros(u64::from(
                random() % 20_000,
            )));
        }
        let _ = child.kill();
        let delay = t0.elapsed();
        let _ = child.wait();
        let mut new = 0;
        for (i, (p, _)) in files.iter().enumerate() {
            let got = read(p);
            assert!(
                got == now[i] || got == releases[v][i],
                "round {round} (killed after {delay:?}): {} is neither its old nor its new \
                 content:\n{got:?}",
                p.display()
            );
            new += usize::from(got == releases[v][i] && got != now[i]);
            now[i] = got;
        }
        mixed += usize::from(new > 0 && new < N);
        eprintln!("round {round}: killed after {delay:?}, {new} of {N} files new");
    }
    eprintln!("{mixed} of {ROUNDS} rounds were killed between files");
    let last = ((ROUNDS - 1) % 2) as usize;
    assert!(
        apply_in(&home, &manifests[last])
            .status()
            .expect("run")
            .success()
    );
    for (i, (p, _)) in files.iter().enumerate() {
        assert_eq!(
            read(p),
            releases[last][i],
            "{} did not converge",
            p.display()
        );
    }
    let home_s = home.to_str().expect("UTF-8");
    let m = manifests[last].to_str().expect("UTF-8");
    let o = util::run_env(tmp.path(), &["apply", m, "--json"], &[("HOME", home_s)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        json(&o)["files"]
            .as_array()
            .is_some_and(|f| f.len() == N && f.iter().all(|f| f["changed"] == false)),
        "a third run changes nothing"
    );
    for d in 0..DIRS {
        let left: Vec<_> = std::fs::read_dir(home.join(format!("d{d}")))
            .expect("dir")
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().contains("demarcate-tmp"))
            .collect();
        assert!(left.is_empty(), "temporary files stay: {left:?}");
    }
}
