//! Replays five releases of a real docker-compose file (tests/fixtures/sentry-compose/, see
//! its PROVENANCE.md) through `sync`, each release turned into a template with one region
//! per shared anchor (`x-…` keys), per service and per volume, over a file with the user's
//! own service, volume and keys: every release converges (a second run changes nothing),
//! the file read by a YAML parser holds every service and volume of the release under
//! `services`/`volumes` beside the user's, and release 1 then release N gives the content
//! of 1, 2, …, N in turn.

use std::path::{Path, PathBuf};

use crate::util;
use crate::yaml_tree::{merged, parse};

const USER: &str = "\
# my additions
services:
  my-proxy:
    image: caddy:2
    ports:
      - \"443:443\"
volumes:
  my-certs: {}
x-mine:
  note: kept
";

fn releases() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sentry-compose");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    files.sort();
    let out: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("fixture"))
        .collect();
    assert!(out.len() >= 5, "too few releases");
    out
}

/// A region's name from a key.
fn name(prefix: &str, key: &str) -> String {
    let key: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}{key}")
}

/// Lines of a release, with the region (indentation, name) they form, if any.
type Block<'a> = (Option<(String, String)>, Vec<&'a str>);

/// A release as a template: each top-level `x-…` key (the shared anchors), each service
/// and each volume is one region; the `services:` and `volumes:` lines, and blank lines
/// after an entry, stay plain.
fn template(src: &str) -> String {
    let mut blocks: Vec<Block<'_>> = Vec::new();
    let mut parent = "";
    for line in src.lines() {
        let top = line
            .split_once(':')
            .map(|(k, _)| k)
            .filter(|k| !line.starts_with([' ', '#']) && !k.is_empty());
        let child = line
            .strip_prefix("  ")
            .filter(|l| !l.starts_with([' ', '#']))
            .and_then(|l| l.split_once(':'))
            .map(|(k, _)| k);
        if let Some(k) = top {
            if k.starts_with("x-") {
                blocks.push((Some((String::new(), name("", k))), vec![line]));
                parent = "";
            } else {
                blocks.push((None, vec![line]));
                parent = k;
            }
        } else if let (Some(k), "services" | "volumes") = (child, parent) {
            let region = name(&format!("{}-", &parent[..1]), k);
            blocks.push((Some(("  ".to_owned(), region)), vec![line]));
        } else if let Some((_, lines)) = blocks.last_mut() {
            lines.push(line);
        } else {
            blocks.push((None, vec![line]));
        }
    }
    let mut out = String::new();
    for (region, mut lines) in blocks {
        let Some((indent, name)) = region else {
            for l in lines {
                out.push_str(l);
                out.push('\n');
            }
            continue;
        };
        let mut tail = Vec::new();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            tail.push(lines.pop());
        }
        out.push_str(&format!("{indent}# BEGIN SENTRY MANAGED {name}\n"));
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(&format!("{indent}# END SENTRY MANAGED {name}\n"));
        for _ in tail {
            out.push('\n');
        }
    }
    out
}

fn sync(dir: &Path, template: &str, extra: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("template.yml"), template).expect("template");
    let mut args = vec![
        "sync",
        "docker-compose.yml",
        "--template",
        "template.yml",
        "--owner",
        "SENTRY",
    ];
    args.extend(extra);
    util::run(dir, &args)
}

#[test]
fn sentry_compose_releases_converge_with_every_service_in_services() {
    let releases = releases();
    let templates: Vec<String> = releases.iter().map(|r| template(r)).collect();
    let user = parse(USER).expect("user file parses");
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("docker-compose.yml");
    std::fs::write(&target, USER).expect("target");
    let mut steps = Vec::new();
    for (i, (release, t)) in releases.iter().zip(&templates).enumerate() {
        let n = i + 1;
        // The template means what the release means.
        assert_eq!(parse(t), parse(release), "release {n}: template");
        let o = sync(dir.path(), t, &[]);
        assert_eq!(util::code(&o), 0, "release {n}: {}", util::stderr(&o));
        let text = std::fs::read_to_string(&target).expect("result");
        let got = parse(&text).unwrap_or_else(|e| panic!("release {n}: {e}\n{text}"));
        let want = merged(user.clone(), parse(release).expect("release parses"));
        assert_eq!(got, want, "release {n}:\n{text}");
        for line in USER.lines() {
            assert!(text.contains(line), "release {n}: lost `{line}`");
        }
        let again = sync(dir.path(), t, &["--check"]);
        assert_eq!(
            util::code(&again),
            0,
            "release {n}: a second run would change the file: {}",
            util::stderr(&again)
        );
        steps.push(text);
    }
    // Services the releases dropped are gone; every service of the last is under `services`.
    let last = parse(&steps[steps.len() - 1]).expect("parses");
    let services = last["services"].as_object().expect("services");
    let want = parse(&releases[releases.len() - 1]).expect("parses");
    let want = want["services"].as_object().expect("services");
    assert_eq!(services.len(), want.len() + 1, "{:?}", services.keys());
    for (n, expected) in steps.iter().enumerate().skip(1) {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("docker-compose.yml");
        std::fs::write(&target, USER).expect("target");
        for t in [&templates[0], &templates[n]] {
            let o = sync(dir.path(), t, &[]);
            assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        }
        let jumped = std::fs::read_to_string(&target).expect("result");
        assert_eq!(
            parse(&jumped),
            parse(expected),
            "release 1 then {} differs from every release in turn",
            n + 1
        );
    }
}
