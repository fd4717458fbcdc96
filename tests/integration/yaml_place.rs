//! YAML structured placement through `sync`: a docker-compose-like file upgraded release by
//! release (services, keys and nested mappings added, moved and dropped) over a file with
//! the user's own services. Each result is read by Python's yaml module and must hold every
//! template key in its own mapping beside the user's; a second run changes nothing; release
//! 1 then release N gives the bytes of 1, 2, …, N; `set --at /a/b` creates the keys it
//! lacks and `remove` takes them away again.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util;
use crate::yaml_tree::merged;

const USER: &str = "\
# my compose file
services:
  mine:
    image: busybox
    command: sleep 1d
volumes:
  mydata:
";

const RELEASES: [&str; 4] = [
    // 1: one service.
    "\
services:
  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx:1.25
    ports:
      - \"80:80\"
  # END ZYLOS MANAGED web
",
    // 2: a database after it, a volume for it, and a network (a mapping the user lacks).
    "\
services:
  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx:1.26
    ports:
      - \"80:80\"
  # END ZYLOS MANAGED web
  # BEGIN ZYLOS MANAGED db
  db:
    image: postgres:16
    volumes:
      - data:/var/lib/postgresql/data
  # END ZYLOS MANAGED db
volumes:
  # BEGIN ZYLOS MANAGED data
  data: {}
  # END ZYLOS MANAGED data
networks:
  # BEGIN ZYLOS MANAGED front
  front:
    driver: bridge
  # END ZYLOS MANAGED front
",
    // 3: a cache between them, a top-level extension key before services, and a setting
    // two mappings deep that the user has neither of.
    "\
# BEGIN ZYLOS MANAGED common
x-common: &common
  restart: unless-stopped
# END ZYLOS MANAGED common
services:
  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx:1.26
    ports:
      - \"80:80\"
      - \"443:443\"
  # END ZYLOS MANAGED web
  # BEGIN ZYLOS MANAGED cache
  cache:
    image: redis:7
  # END ZYLOS MANAGED cache
  # BEGIN ZYLOS MANAGED db
  db:
    image: postgres:16
    volumes:
      - data:/var/lib/postgresql/data
  # END ZYLOS MANAGED db
volumes:
  # BEGIN ZYLOS MANAGED data
  data: {}
  # END ZYLOS MANAGED data
networks:
  # BEGIN ZYLOS MANAGED front
  front:
    driver: bridge
  # END ZYLOS MANAGED front
x-monitor:
  agents:
    # BEGIN ZYLOS MANAGED agent
    node: {enabled: true}
    # END ZYLOS MANAGED agent
  # BEGIN ZYLOS MANAGED monitor-url
  url: http://monitor:9090/#/
  # END ZYLOS MANAGED monitor-url
",
    // 4: the volume, the network and the monitor go (the mappings made for them go too);
    // a sequence of profiles arrives inside a new mapping.
    "\
# BEGIN ZYLOS MANAGED common
x-common: &common
  restart: unless-stopped
# END ZYLOS MANAGED common
services:
  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx:1.27
    ports:
      - \"80:80\"
      - \"443:443\"
  # END ZYLOS MANAGED web
  # BEGIN ZYLOS MANAGED cache
  cache:
    image: redis:7
  # END ZYLOS MANAGED cache
  # BEGIN ZYLOS MANAGED db
  db:
    image: postgres:17
  # END ZYLOS MANAGED db
x-zylos:
  profiles:
    # BEGIN ZYLOS MANAGED profiles
    - default
    - debug
    # END ZYLOS MANAGED profiles
",
];

const TO_JSON: &str = "import json, sys, yaml\n\
print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding='utf-8')), sort_keys=True))\n";

/// The file read by Python's yaml module, as JSON; `None` without python3 and PyYAML.
fn pyyaml(path: &Path) -> Option<Value> {
    let o = Command::new("python3")
        .args(["-c", TO_JSON])
        .arg(path)
        .output()
        .ok()?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("No module named"),
            "PyYAML rejects {}: {err}\n{}",
            path.display(),
            std::fs::read_to_string(path).unwrap_or_default()
        );
        return None;
    }
    Some(serde_json::from_slice(&o.stdout).expect("json from python"))
}

fn sync(dir: &Path, template: &str, extra: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("template.yml"), template).expect("template");
    let mut args = vec![
        "sync",
        "compose.yml",
        "--template",
        "template.yml",
        "--owner",
        "ZYLOS",
    ];
    args.extend(extra);
    util::run(dir, &args)
}

#[test]
fn compose_file_converges_release_by_release() {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("compose.yml");
    std::fs::write(&target, USER).expect("target");
    let user = pyyaml(&target);
    if user.is_none() {
        eprintln!(
            "notice: python3 with yaml not found; compose_file_converges_release_by_release \
             checks bytes only"
        );
    }
    let mut steps = Vec::new();
    for (i, t) in RELEASES.iter().enumerate() {
        let o = sync(dir.path(), t, &[]);
        assert_eq!(util::code(&o), 0, "release {}: {}", i + 1, util::stderr(&o));
        let text = std::fs::read_to_string(&target).expect("result");
        for line in USER.lines() {
            assert!(
                text.contains(line),
                "release {}: lost `{line}`:\n{text}",
                i + 1
            );
        }
        if let Some(user) = &user {
            let tpath = dir.path().join("template.yml");
            let want = merged(user.clone(), pyyaml(&tpath).expect("template parses"));
            let got = pyyaml(&target).expect("result parses");
            assert_eq!(got, want, "release {}:\n{text}", i + 1);
        }
        let again = sync(dir.path(), t, &["--check"]);
        assert_eq!(
            util::code(&again),
            0,
            "release {}: a second run would change the file:\n{}\n{text}",
            i + 1,
            util::stderr(&again)
        );
        steps.push(text);
    }
    // Mappings made for regions that are gone went with them; the user's stay.
    let last = &steps[3];
    for gone in ["networks:", "x-monitor:", "agents:", "\n  data:"] {
        assert!(!last.contains(gone), "`{gone}` stayed:\n{last}");
    }
    assert!(last.contains("volumes:\n  mydata:\n"), "{last}");
    for (n, want) in steps.iter().enumerate().skip(1) {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("compose.yml"), USER).expect("target");
        for t in [RELEASES[0], RELEASES[n]] {
            let o = sync(dir.path(), t, &[]);
            assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        }
        let jumped = std::fs::read_to_string(dir.path().join("compose.yml")).expect("result");
        assert_eq!(
            &jumped,
            want,
            "release 1 then {} differs from every release in turn",
            n + 1
        );
    }
}

#[test]
fn set_at_a_missing_path_creates_it_and_remove_takes_it_away() {
    for original in [
        USER,
        "",
        "services:\n  web:\n    image: x",
        "---\nservices: {}\n",
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("compose.yml");
        std::fs::write(&target, original).expect("target");
        let o = util::run(
            dir.path(),
            &[
                "set",
                "compose.yml",
                "--owner",
                "ZYLOS",
                "--name",
                "node",
                "--at",
                "/x-monitor/agents",
                "--content",
                "node:\n  enabled: true",
            ],
        );
        assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        let text = std::fs::read_to_string(&target).expect("result");
        assert!(
            text.contains("x-monitor:\n  agents:\n    # BEGIN ZYLOS MANAGED node hash=")
                && text
                    .contains("\n    node:\n      enabled: true\n    # END ZYLOS MANAGED node\n"),
            "{text}"
        );
        if let Some(v) = pyyaml(&target) {
            assert_eq!(
                v.pointer("/x-monitor/agents/node/enabled"),
                Some(&Value::Bool(true)),
                "{text}"
            );
        }
        let o = util::run(
            dir.path(),
            &[
                "remove",
                "compose.yml",
                "--owner",
                "ZYLOS",
                "--name",
                "node",
            ],
        );
        assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&target).expect("result"),
            original,
            "round trip"
        );
    }
}

/// The file after `sync` with `template`, checked to hold the user's entries and the
/// template's, each in its own mapping, as a YAML parser reads them.
fn synced_structure(original: &str, template: &str) -> String {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("compose.yml");
    std::fs::write(&target, original).expect("target");
    let o = sync(dir.path(), template, &[]);
    assert_eq!(util::code(&o), 0, "{original:?}: {}", util::stderr(&o));
    let text = std::fs::read_to_string(&target).expect("result");
    let want = merged(
        crate::yaml_tree::parse(original).expect("original parses"),
        crate::yaml_tree::parse(template).expect("template parses"),
    );
    let got = crate::yaml_tree::parse(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    assert_eq!(got, want, "from {original:?}:\n{text}");
    let again = sync(dir.path(), template, &["--check"]);
    assert_eq!(util::code(&again), 0, "not converged:\n{text}");
    text
}

#[test]
fn several_regions_after_a_blank_line_land_in_their_mapping() {
    // A blank line under `services:` once read as content: every region went to the top
    // level (exit 0, valid YAML, compose saw no services).
    let template = "\
services:

  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx
  # END ZYLOS MANAGED web

  # BEGIN ZYLOS MANAGED db
  db:
    image: postgres

  # END ZYLOS MANAGED db
  # BEGIN ZYLOS MANAGED cache
  cache:
    image: redis
  # END ZYLOS MANAGED cache
";
    for original in [
        "",
        USER,
        "name: app\nservices:\n\n    mine:\n        image: busybox\n",
        "name: app\n",
    ] {
        synced_structure(original, template);
    }
}

#[test]
fn root_regions_go_after_directives_and_the_document_start() {
    let template = "\
# BEGIN ZYLOS MANAGED top
top: 1
# END ZYLOS MANAGED top
services:
  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx
  # END ZYLOS MANAGED web
";
    for original in [
        "%YAML 1.2\n---\nname: app\n",
        "%YAML 1.2\n# a comment\n---\n",
        "%YAML 1.2\n%TAG !e! tag:example.com,2000:\n--- # the document\nname: app\n",
        "---\nname: app\n",
    ] {
        let text = synced_structure(original, template);
        let start = original.find("---").expect("document start");
        let line_end = start + original[start..].find('\n').expect("line end") + 1;
        assert!(
            text.starts_with(&original[..line_end]),
            "the preamble moved:\n{text}"
        );
        // `set --at /` too, and `remove` gives the bytes back.
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("compose.yml");
        std::fs::write(&target, original).expect("target");
        let set = [
            "set",
            "compose.yml",
            "--owner",
            "ZYLOS",
            "--name",
            "r",
            "--at",
            "/",
            "--content",
            "k: 1",
        ];
        let o = util::run(dir.path(), &set);
        assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        let text = std::fs::read_to_string(&target).expect("result");
        assert!(
            text.starts_with(&format!("{}# BEGIN ZYLOS MANAGED r", &original[..line_end])),
            "{text}"
        );
        let o = util::run(
            dir.path(),
            &["remove", "compose.yml", "--owner", "ZYLOS", "--name", "r"],
        );
        assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
        assert_eq!(std::fs::read_to_string(&target).expect("file"), original);
    }
}

#[test]
fn an_alias_and_the_anchor_it_needs_arrive_in_one_run() {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("compose.yml");
    std::fs::write(&target, USER).expect("target");
    let r1 = "\
services:
  # BEGIN ZYLOS MANAGED web
  web:
    image: nginx
  # END ZYLOS MANAGED web
";
    // Release 2 makes web use an anchor the same run brings: the update is planned before
    // the insertion, and only the whole result must resolve every alias.
    let r2 = "\
# BEGIN ZYLOS MANAGED flags
x-flags: &flags
  restart: unless-stopped
# END ZYLOS MANAGED flags
services:
  # BEGIN ZYLOS MANAGED web
  web:
    <<: *flags
    image: nginx
  # END ZYLOS MANAGED web
  # BEGIN ZYLOS MANAGED db
  db:
    <<: *flags
    image: postgres
  # END ZYLOS MANAGED db
";
    for t in [r1, r2] {
        let o = sync(dir.path(), t, &[]);
        assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    }
    let text = std::fs::read_to_string(&target).expect("result");
    let got = crate::yaml_tree::parse(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let want = merged(
        crate::yaml_tree::parse(USER).expect("user"),
        crate::yaml_tree::parse(r2).expect("template"),
    );
    assert_eq!(got, want, "{text}");
}

#[test]
fn a_move_that_would_put_an_alias_before_its_anchor_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("compose.yml");
    std::fs::write(&target, "svc:\n  k: 1\n").expect("target");
    let o = util::run(
        dir.path(),
        &[
            "set",
            "compose.yml",
            "--owner",
            "ZYLOS",
            "--name",
            "flags",
            "--at",
            "/",
            "--content",
            "x-flags: &flags\n  a: 1\n",
        ],
    );
    assert_eq!(util::code(&o), 0, "{}", util::stderr(&o));
    // The user's own key uses the anchor, after the region.
    let text = std::fs::read_to_string(&target).expect("file");
    let end = text.find("# END ZYLOS MANAGED flags\n").expect("region") + 26;
    let edited = format!("{}web:\n  <<: *flags\n{}", &text[..end], &text[end..]);
    std::fs::write(&target, &edited).expect("edit");
    // The next release moves the anchor into `svc`, after the user's alias.
    let template = "\
svc:
  # BEGIN ZYLOS MANAGED flags
  x-flags: &flags
    a: 1
  # END ZYLOS MANAGED flags
";
    let o = sync(dir.path(), template, &[]);
    assert_eq!(util::code(&o), 2, "{}", util::stderr(&o));
    assert!(
        util::stderr(&o).contains("alias would come before the anchor"),
        "{}",
        util::stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&target).expect("file"), edited);
}

/// Runs `sync` of `template` on a compose.yml holding `target`; the target must be refused
/// (exit 2, a message holding `says`) and left as it was.
fn refused(target: &str, template: &str, says: &str) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("compose.yml");
    std::fs::write(&path, target).expect("target");
    let o = sync(dir.path(), template, &[]);
    assert_eq!(util::code(&o), 2, "{target:?}: {}", util::stderr(&o));
    assert!(util::stderr(&o).contains(says), "{}", util::stderr(&o));
    assert_eq!(std::fs::read_to_string(&path).expect("read"), target);
}

#[test]
fn a_region_in_a_sequence_item_or_a_later_document_is_refused_not_put_at_the_root() {
    let item =
        "list:\n  - name: x\n    # BEGIN ZYLOS MANAGED k\n    k: 1\n    # END ZYLOS MANAGED k\n";
    for target in [
        "list:\n  - name: y\n  - name: x\n",
        "",
        "list:\n- name: x\n  other: 1\n",
    ] {
        refused(target, item, "inside an item of a sequence");
    }
    let docs = "---\na:\n  # BEGIN ZYLOS MANAGED r1\n  x: 1\n  # END ZYLOS MANAGED r1\n---\nb:\n  # BEGIN ZYLOS MANAGED r2\n  y: 1\n  # END ZYLOS MANAGED r2\n";
    refused("a:\n  u: 1\n", docs, "later YAML document");
}

#[test]
fn a_managed_alias_that_a_user_anchor_would_shadow_is_refused() {
    let template = "x-defs:\n  # BEGIN ZYLOS MANAGED defs\n  img: &img nginx\n  # END ZYLOS MANAGED defs\nservices:\n  # BEGIN ZYLOS MANAGED web\n  web:\n    image: *img\n  # END ZYLOS MANAGED web\n";
    refused(
        "x-user: &img busybox\nservices:\n  a:\n    image: *img\n",
        template,
        "`*img`",
    );
}
