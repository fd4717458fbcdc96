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

/// `b` merged into `a`, mapping by mapping.
fn merged(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (k, v) in b {
                let old = a.remove(&k).unwrap_or(Value::Null);
                a.insert(k, merged(old, v));
            }
            Value::Object(a)
        }
        (a, Value::Null) => a,
        (_, b) => b,
    }
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
