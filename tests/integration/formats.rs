//! Real clients read the new formats after an edit: Python's configparser and
//! `git config --file` read INI and git config files, Python's `xml.etree` parses XML and
//! SVG. Where a client is missing, the test says so on stderr and checks nothing more.
//! Also: binary and UTF-16 files are refused in every format.

use std::path::Path;
use std::process::Command;

use crate::util::{self, code, stderr, stdout};

/// True when `prog --version` runs; otherwise prints a notice.
fn have(prog: &str, test: &str) -> bool {
    let found = Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("notice: {prog} not found; {test} skipped");
    }
    found
}

fn ok(dir: &Path, args: &[&str]) {
    let o = util::run(dir, args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
}

fn python(dir: &Path, script: &str, arg: &str) -> String {
    let o = Command::new("python3")
        .args(["-c", script, arg])
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "python3: {}", stderr(&o));
    stdout(&o)
}

const CONFIGPARSER: &str = r"import configparser, sys
c = configparser.ConfigParser(interpolation=None)
c.read(sys.argv[1])
for s in c.sections():
    for k, v in c.items(s, raw=True):
        print(f'{s}.{k}={v!r}')
";

#[test]
fn configparser_reads_every_original_and_new_option() {
    if !have(
        "python3",
        "configparser_reads_every_original_and_new_option",
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let src = "[metadata]\nname = zylos\n\n[options]\ninstall_requires =\n    requests\n    # BEGIN ZYLOS MANAGED deps\n    click\n\n[flake8]\nmax-line-length = 100\n";
    std::fs::write(dir.path().join("setup.cfg"), src).expect("write");
    let before = python(dir.path(), CONFIGPARSER, "setup.cfg");
    ok(
        dir.path(),
        &[
            "set",
            "setup.cfg",
            "--owner",
            "ZYLOS",
            "--name",
            "tool",
            "--content",
            "[tool:zylos]\nenabled = true\npaths =\n    a\n    b",
        ],
    );
    let after = python(dir.path(), CONFIGPARSER, "setup.cfg");
    assert!(after.starts_with(&before), "{before}\n---\n{after}");
    assert!(after.contains("tool:zylos.enabled='true'"), "{after}");
    assert!(after.contains("tool:zylos.paths='\\na\\nb'"), "{after}");
    // The multi-line value kept its marker-looking comment out of the value, as before.
    assert!(
        after.contains("options.install_requires='\\nrequests\\nclick'"),
        "{after}"
    );
    ok(
        dir.path(),
        &["remove", "setup.cfg", "--owner", "ZYLOS", "--name", "tool"],
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("setup.cfg")).expect("read"),
        src
    );
}

#[test]
fn git_config_sees_the_include() {
    if !have("git", "git_config_sees_the_include") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let src = "[user]\n\tname = Ada\n[alias]\n\tlg = log --graph \\\n\t\t--oneline\n";
    std::fs::write(dir.path().join(".gitconfig"), src).expect("write");
    ok(
        dir.path(),
        &[
            "set",
            ".gitconfig",
            "--owner",
            "ZYLOS",
            "--name",
            "include",
            "--content",
            "[include]\n\tpath = ~/.zylos/gitconfig",
        ],
    );
    let o = Command::new("git")
        .args(["config", "--file", ".gitconfig", "--list"])
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(o.status.success(), "git: {}", stderr(&o));
    let list = stdout(&o);
    assert!(list.contains("user.name=Ada"), "{list}");
    assert!(
        list.contains("alias.lg=log --graph \t\t--oneline"),
        "{list}"
    );
    assert!(list.contains("include.path=~/.zylos/gitconfig"), "{list}");
}

#[test]
fn xml_parsers_accept_the_edited_svg() {
    if !have("python3", "xml_parsers_accept_the_edited_svg") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let src = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\">\n  <style><![CDATA[\n  /* <!-- BEGIN ZYLOS MANAGED x --> */\n  ]]></style>\n  <rect width=\"1\"/>\n</svg>\n";
    std::fs::write(dir.path().join("icon.svg"), src).expect("write");
    ok(
        dir.path(),
        &[
            "set",
            "icon.svg",
            "--owner",
            "ZYLOS",
            "--name",
            "badge",
            "--at",
            "before:^</svg>",
            "--content",
            "  <circle r=\"2\"/>",
        ],
    );
    let count = python(
        dir.path(),
        "import sys, xml.etree.ElementTree as E\nprint(len(list(E.parse(sys.argv[1]).getroot())))",
        "icon.svg",
    );
    assert_eq!(count.trim(), "3");
}

#[test]
fn binary_and_utf16_files_are_refused_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, bytes) in [
        ("CLAUDE.md", &b"\xFF\xFE#\x00 \x00"[..]),
        ("hosts", b"\xFE\xFF\x4e\x2d"),
        ("setup.cfg", b"[a]\nk = \x00\n"),
    ] {
        std::fs::write(dir.path().join(name), bytes).expect("write");
        let o = util::run(
            dir.path(),
            &[
                "set",
                name,
                "--owner",
                "ZYLOS",
                "--name",
                "x",
                "--content",
                "y",
            ],
        );
        assert_eq!(code(&o), 2, "{name}");
        let err = stderr(&o);
        assert!(
            err.contains("UTF-16") || err.contains("binary"),
            "{name}: {err}"
        );
        assert_eq!(std::fs::read(dir.path().join(name)).expect("read"), bytes);
    }
}

#[test]
fn fish_no_execute_accepts_the_edited_config() {
    if !have("fish", "fish_no_execute_accepts_the_edited_config") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let src = "set -gx EDITOR vim\necho 'it\\'s\n# BEGIN ZYLOS MANAGED path\n'\nset x (\n  # END ZYLOS MANAGED path\n  echo a)\n";
    std::fs::write(dir.path().join("config.fish"), src).expect("write");
    ok(
        dir.path(),
        &[
            "set",
            "config.fish",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "fish_add_path $HOME/.zylos/bin",
        ],
    );
    let o = Command::new("fish")
        .args(["--no-execute", "config.fish"])
        .current_dir(dir.path())
        .output()
        .expect("fish runs");
    assert!(o.status.success(), "fish: {}", stderr(&o));
    ok(
        dir.path(),
        &[
            "remove",
            "config.fish",
            "--owner",
            "ZYLOS",
            "--name",
            "path",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.fish")).expect("read"),
        src
    );
}

/// PowerShell's own parser reports no error in the edited profile (when `pwsh` is installed).
#[test]
fn pwsh_parses_the_edited_profile() {
    let src = "Set-Alias ll Get-ChildItem\n<#\n# BEGIN ZYLOS MANAGED path\n#>\n$a = 'it''s\n# END ZYLOS MANAGED path'\n$c = @'\n# BEGIN ZYLOS MANAGED path\n'@\n$h = @{\n    a = $(\n# END ZYLOS MANAGED path\n    1)\n}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "Microsoft.PowerShell_profile.ps1";
    std::fs::write(dir.path().join(name), src).expect("write");
    ok(
        dir.path(),
        &[
            "set",
            name,
            "--owner",
            "ZYLOS",
            "--name",
            "path",
            "--content",
            "$env:PATH = \"$HOME/.zylos/bin;\" + $env:PATH",
        ],
    );
    let edited = std::fs::read_to_string(dir.path().join(name)).expect("read");
    assert!(
        edited.starts_with(src) && edited.ends_with("\n# END ZYLOS MANAGED path\n"),
        "{edited}"
    );
    if have("pwsh", "pwsh_parses_the_edited_profile") {
        let path = dir.path().join(name);
        let script = format!(
            "$e = $null; $null = [System.Management.Automation.Language.Parser]::ParseFile('{}', \
             [ref]$null, [ref]$e); if ($e.Count) {{ $e | ForEach-Object {{ $_.ToString() }}; exit 1 }}",
            path.display().to_string().replace('\'', "''")
        );
        let o = Command::new("pwsh")
            .args(["-NoProfile", "-NonInteractive", "-Command", &script])
            .output()
            .expect("pwsh runs");
        assert!(o.status.success(), "pwsh: {}{}", stdout(&o), stderr(&o));
    }
    ok(
        dir.path(),
        &["remove", name, "--owner", "ZYLOS", "--name", "path"],
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(name)).expect("read"),
        src
    );
}

const PYYAML: &str = r"import json, sys, yaml
print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1], encoding='utf-8'))), sort_keys=True))
";

/// Python's yaml module reads the edited compose file: the user's data unchanged, the
/// region's keys added; remove gives back the bytes.
#[test]
fn pyyaml_reads_the_edited_compose_file() {
    let have_yaml = have("python3", "pyyaml_reads_the_edited_compose_file")
        && Command::new("python3")
            .args(["-c", "import yaml"])
            .output()
            .is_ok_and(|o| o.status.success());
    let dir = tempfile::tempdir().expect("tempdir");
    let src = "services:\n  web:\n    image: nginx\n    command: |\n      # BEGIN ZYLOS MANAGED sidecar\n      echo 'hi'\n    ports: [\"80:80\",\n      # END ZYLOS MANAGED sidecar\n      \"443:443\"]\nvolumes:\n  data: {}\n";
    std::fs::write(dir.path().join("docker-compose.yml"), src).expect("write");
    let before = have_yaml.then(|| python(dir.path(), PYYAML, "docker-compose.yml"));
    ok(
        dir.path(),
        &[
            "set",
            "docker-compose.yml",
            "--owner",
            "ZYLOS",
            "--name",
            "sidecar",
            "--content",
            "x-zylos:\n  enabled: true\n  note: '# END ZYLOS MANAGED sidecar'",
        ],
    );
    if let Some(before) = before {
        let after = python(dir.path(), PYYAML, "docker-compose.yml");
        assert!(
            after.contains(
                "\"x-zylos\": {\"enabled\": true, \"note\": \"# END ZYLOS MANAGED sidecar\"}"
            ),
            "{after}"
        );
        assert_eq!(
            after.replace(
                ", \"x-zylos\": {\"enabled\": true, \"note\": \"# END ZYLOS MANAGED sidecar\"}",
                ""
            ),
            before
        );
    } else {
        eprintln!(
            "notice: python3 with yaml not found; pyyaml_reads_the_edited_compose_file checks only the round trip"
        );
    }
    ok(
        dir.path(),
        &[
            "remove",
            "docker-compose.yml",
            "--owner",
            "ZYLOS",
            "--name",
            "sidecar",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("docker-compose.yml")).expect("read"),
        src
    );
}
