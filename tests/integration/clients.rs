//! Real clients read the results: `bash -n` accepts every edited profile, sourcing it runs
//! the region's hook, and a dotenv reader (python-dotenv when installed, else a minimal
//! reader here) sees the new keys and every original key unchanged. Where bash or python3
//! is missing, the test says so on stderr and checks nothing more.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{self, code, stderr, stdout};

/// Runs demarcate in `home` with `HOME` and `XDG_STATE_HOME` inside it; expects exit 0.
fn demarcate(home: &Path, args: &[&str]) {
    let o = Command::new(util::bin())
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("NO_COLOR", "1")
        .output()
        .expect("demarcate runs");
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
}

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

/// `bash -n FILE` in `dir`.
fn bash_syntax_ok(dir: &Path, file: &str) -> Output {
    Command::new("bash")
        .args(["-n", file])
        .current_dir(dir)
        .env_clear()
        .env("HOME", dir)
        .output()
        .expect("bash runs")
}

/// Sources `file` in a clean bash (no rc files, empty environment) and prints `$var`.
fn sourced(dir: &Path, file: &str, var: &str, interactive: bool) -> Output {
    let script = format!(". ./{file}; printf %s \"${var}\"");
    let mut args = vec!["--norc", "--noprofile"];
    if interactive {
        args.push("-i");
    }
    args.extend(["-c", &script]);
    Command::new("env")
        .arg("-i")
        .arg(format!("HOME={}", dir.display()))
        .arg("bash")
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("env and bash run")
}

/// Debian's default ~/.bashrc, abridged: it returns early when not interactive.
const DEBIAN_BASHRC: &str = r#"# ~/.bashrc: executed by bash(1) for non-login shells.
# see /usr/share/doc/bash/examples/startup-files (in the package bash-doc)
# for examples

# If not running interactively, don't do anything
case $- in
    *i*) ;;
      *) return;;
esac

# don't put duplicate lines or lines starting with space in the history.
HISTCONTROL=ignoreboth

# append to the history file, don't overwrite it
shopt -s histappend

HISTSIZE=1000
HISTFILESIZE=2000

# check the window size after each command and, if necessary,
# update the values of LINES and COLUMNS.
shopt -s checkwinsize

# make less more friendly for non-text input files, see lesspipe(1)
[ -x /usr/bin/lesspipe ] && eval "$(SHELL=/bin/sh lesspipe)"

# set variable identifying the chroot you work in (used in the prompt below)
if [ -z "${debian_chroot:-}" ] && [ -r /etc/debian_chroot ]; then
    debian_chroot=$(cat /etc/debian_chroot)
fi

# set a fancy prompt (non-color, unless we know we "want" color)
case "$TERM" in
    xterm-color|*-256color) color_prompt=yes;;
esac

if [ "$color_prompt" = yes ]; then
    PS1='${debian_chroot:+($debian_chroot)}\[\033[01;32m\]\u@\h\[\033[00m\]:\[\033[01;34m\]\w\[\033[00m\]\$ '
else
    PS1='${debian_chroot:+($debian_chroot)}\u@\h:\w\$ '
fi
unset color_prompt force_color_prompt

# enable color support of ls and also add handy aliases
if [ -x /usr/bin/dircolors ]; then
    test -r ~/.dircolors && eval "$(dircolors -b ~/.dircolors)" || eval "$(dircolors -b)"
    alias ls='ls --color=auto'
fi

# some more ls aliases
alias ll='ls -alF'
alias la='ls -A'
alias l='ls -CF'

# Add an "alert" alias for long running commands.  Use like so:
#   sleep 10; alert
alias alert='notify-send --urgency=low -i "$([ $? = 0 ] && echo terminal || echo error)" "$(history|tail -n1|sed -e '\''s/^\s*[0-9]\+\s*//;s/[;&|]\s*alert$//'\'')"'

if [ -f ~/.bash_aliases ]; then
    . ~/.bash_aliases
fi

# enable programmable completion features
if ! shopt -oq posix; then
  if [ -f /usr/share/bash-completion/bash_completion ]; then
    . /usr/share/bash-completion/bash_completion
  elif [ -f /etc/bash_completion ]; then
    . /etc/bash_completion
  fi
fi
"#;

/// A profile with functions, heredocs (marker text inside them) and a continuation.
const HEREDOC_PROFILE: &str = r#"#!/bin/sh
# profile.sh: functions and heredocs
usage() {
    cat <<EOF
usage: tool [options]
# BEGIN ZYLOS MANAGED hook
this is help text, not a marker
# END ZYLOS MANAGED hook
EOF
}

banner() {
	cat <<-'END'
	# BEGIN ZYLOS MANAGED hooks
	$NOT_EXPANDED
	END
}

export LONG_PATH=/usr/local/bin:\
/usr/bin

notes=$(cat <<'X'
# END ZYLOS MANAGED hooks
X
)
export EDITOR=vi
"#;

/// A zsh-ish file using only POSIX syntax.
const ZSH_POSIX: &str = r#"# ~/.zshrc
export ZDOTDIR="${ZDOTDIR:-$HOME}"
[ -f "$HOME/.zshrc.local" ] && . "$HOME/.zshrc.local"
path_add() {
    case ":$PATH:" in
        *":$1:"*) ;;
        *) PATH="$1:$PATH" ;;
    esac
}
path_add "$HOME/bin"
if [ -n "$ZSH_VERSION" ]; then
    HISTFILE="$HOME/.zsh_history"
fi
"#;

const HOOK: &str = "export ZYLOS_HOOK=from-region\nzylos_hook() { :; }";

#[test]
fn edited_profiles_pass_bash_n() {
    if !have("bash", "edited_profiles_pass_bash_n") {
        return;
    }
    let cases: [(&str, &str, &[&str]); 10] = [
        (".bashrc", DEBIAN_BASHRC, &[]),
        (".bashrc", DEBIAN_BASHRC, &["--at", "start"]),
        (".bashrc", DEBIAN_BASHRC, &["--at", "after:^esac"]),
        (".bashrc", DEBIAN_BASHRC, &["--at", "before:^if ! shopt"]),
        ("profile.sh", HEREDOC_PROFILE, &[]),
        ("profile.sh", HEREDOC_PROFILE, &["--at", "start"]),
        (
            "profile.sh",
            HEREDOC_PROFILE,
            &["--at", "after:^    cat <<EOF"],
        ),
        (
            "profile.sh",
            HEREDOC_PROFILE,
            &["--at", "after:^export LONG_PATH"],
        ),
        ("profile.sh", HEREDOC_PROFILE, &["--at", "after:^notes="]),
        (".zshrc", ZSH_POSIX, &["--at", "after:^path_add \\(\\)"]),
    ];
    for (name, content, at) in cases {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        let path = h.join(name);
        std::fs::write(&path, content).expect("profile written");
        assert!(
            bash_syntax_ok(h, name).status.success(),
            "the fixture itself must pass bash -n"
        );
        let mut args = vec![
            "set",
            name,
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
            "--content",
            HOOK,
        ];
        args.extend_from_slice(at);
        demarcate(h, &args);
        // And a sync on top, with a second region next to it.
        let tpl = "# BEGIN ZYLOS MANAGED hooks\nexport ZYLOS_HOOK=from-region\nzylos_hook() { :; }\n# END ZYLOS MANAGED hooks\n# BEGIN ZYLOS MANAGED path\nexport PATH=\"$HOME/.zylos/bin:$PATH\"\n# END ZYLOS MANAGED path\n";
        std::fs::write(h.join("zylos.tpl"), tpl).expect("template written");
        demarcate(
            h,
            &[
                "sync",
                name,
                "--owner",
                "ZYLOS",
                "--template",
                "zylos.tpl",
                "--format",
                "shell",
            ],
        );
        let after = std::fs::read_to_string(&path).expect("profile readable");
        assert_eq!(
            after.matches("# BEGIN ZYLOS MANAGED hooks hash=").count(),
            1,
            "{after}"
        );
        assert!(
            after.contains("# BEGIN ZYLOS MANAGED path hash="),
            "{after}"
        );
        let o = bash_syntax_ok(h, name);
        assert!(
            o.status.success(),
            "bash -n rejects {name} after set {at:?}: {}\n{after}",
            stderr(&o)
        );
        // Every line of the original is still there, in order.
        let mut rest = after.lines();
        for l in content.lines() {
            assert!(rest.any(|a| a == l), "line {l:?} lost ({at:?}):\n{after}");
        }
    }
}

#[test]
fn sourcing_the_profile_runs_the_hook() {
    if !have("bash", "sourcing_the_profile_runs_the_hook") || !have("env", "sourcing") {
        return;
    }
    let cases: [(&str, &str, &[&str], bool); 7] = [
        ("profile.sh", HEREDOC_PROFILE, &[], false),
        ("profile.sh", HEREDOC_PROFILE, &["--at", "start"], false),
        // Past the heredoc and the command substitution that line opens.
        (
            "profile.sh",
            HEREDOC_PROFILE,
            &["--at", "after:^notes="],
            false,
        ),
        (
            "profile.sh",
            ZSH_POSIX,
            &["--at", "after:^path_add \"\\$HOME"],
            false,
        ),
        // Debian's .bashrc returns early when not interactive: a hook placed before the
        // guard runs in any shell, one placed at the end in an interactive one.
        (".bashrc", DEBIAN_BASHRC, &["--at", "start"], false),
        (
            ".bashrc",
            DEBIAN_BASHRC,
            &["--at", "before:^case \\$- in"],
            false,
        ),
        (".bashrc", DEBIAN_BASHRC, &[], true),
    ];
    for (name, content, at, interactive) in cases {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        std::fs::write(h.join(name), content).expect("profile written");
        let before = sourced(h, name, "ZYLOS_HOOK", interactive);
        assert_eq!(stdout(&before), "", "the hook is not set before the edit");
        let mut args = vec![
            "set",
            name,
            "--owner",
            "ZYLOS",
            "--name",
            "hooks",
            "--content",
            HOOK,
        ];
        args.extend_from_slice(at);
        demarcate(h, &args);
        let o = sourced(h, name, "ZYLOS_HOOK", interactive);
        assert_eq!(
            stdout(&o),
            "from-region",
            "{name} {at:?}: the hook did not take effect; stderr: {}\n{}",
            stderr(&o),
            std::fs::read_to_string(h.join(name)).unwrap_or_default()
        );
        // And gone again after `remove`.
        demarcate(h, &["remove", name, "--owner", "ZYLOS", "--name", "hooks"]);
        assert_eq!(
            std::fs::read_to_string(h.join(name)).expect("profile readable"),
            content
        );
        assert_eq!(stdout(&sourced(h, name, "ZYLOS_HOOK", interactive)), "");
    }
}

/// A realistic .env: comments, quotes, export, multi-line values with marker text.
const DOTENV: &str = "# app settings\n\
DATABASE_URL=postgres://user:pw@localhost:5432/app\n\
export SECRET_KEY='s3cr3t # not a comment'\n\
GREETING=\"hello world\"\n\
DEBUG=0 # inline comment\n\
\n\
PRIVATE_KEY=\"-----BEGIN KEY-----\n\
# BEGIN ZYLOS MANAGED env\n\
abc123\n\
-----END KEY-----\"\n\
EMPTY=\n\
LAST=end\n";

/// Reads both files with python-dotenv (when importable) or a minimal reader, and prints
/// one JSON object per file.
const READER: &str = r##"
import json, sys

def minimal(text):
    out, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#") or "=" not in line:
            continue
        if line.startswith("export "):
            line = line[len("export "):]
        key, value = line.split("=", 1)
        key, value = key.strip(), value.strip()
        if value[:1] in ("'", '"'):
            q = value[0]
            value = value[1:]
            while q not in value and i < len(lines):
                value += "\n" + lines[i]
                i += 1
            value = value[: value.index(q)] if q in value else value
        else:
            value = value.split(" #", 1)[0].strip()
        out[key] = value
    return out

try:
    from dotenv import dotenv_values
    read = lambda p: dict(dotenv_values(p))
    which = "python-dotenv"
except ImportError:
    read = lambda p: minimal(open(p, encoding="utf-8").read())
    which = "minimal"
print(json.dumps({"reader": which, "old": read(sys.argv[1]), "new": read(sys.argv[2])}))
"##;

#[test]
fn dotenv_readers_see_new_and_original_keys() {
    if !have("python3", "dotenv_readers_see_new_and_original_keys") {
        return;
    }
    for at in [
        &[][..],
        &["--at", "start"][..],
        &["--at", "after:^GREETING="][..],
    ] {
        let home = tempfile::tempdir().expect("temp dir");
        let h = home.path();
        std::fs::write(h.join("original.env"), DOTENV).expect("written");
        std::fs::write(h.join(".env"), DOTENV).expect("written");
        let mut args = vec![
            "set",
            ".env",
            "--owner",
            "ZYLOS",
            "--name",
            "keys",
            "--content",
            "ZYLOS_TOKEN=abc\nZYLOS_URL=\"https://zylos.example/api\"",
        ];
        args.extend_from_slice(at);
        demarcate(h, &args);
        let o = Command::new("python3")
            .args(["-c", READER, "original.env", ".env"])
            .current_dir(h)
            .output()
            .expect("python3 runs");
        assert!(o.status.success(), "{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("reader prints JSON");
        let (old, new) = (&j["old"], &j["new"]);
        let old_map = old.as_object().expect("old is an object");
        assert!(old_map.len() >= 7, "the reader saw the original keys: {j}");
        assert_eq!(
            old["PRIVATE_KEY"],
            "-----BEGIN KEY-----\n# BEGIN ZYLOS MANAGED env\nabc123\n-----END KEY-----",
            "{j}"
        );
        for (k, v) in old_map {
            assert_eq!(&new[k], v, "key {k} changed ({at:?}, {}): {j}", j["reader"]);
        }
        assert_eq!(new["ZYLOS_TOKEN"], "abc", "{j}");
        assert_eq!(new["ZYLOS_URL"], "https://zylos.example/api", "{j}");
        assert_eq!(
            new.as_object().expect("new is an object").len(),
            old_map.len() + 2,
            "{j}"
        );
    }
}

#[test]
fn sourced_env_file_exports_the_new_keys() {
    if !have("bash", "sourced_env_file_exports_the_new_keys") {
        return;
    }
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    std::fs::write(h.join(".env"), DOTENV).expect("written");
    demarcate(
        h,
        &[
            "set",
            ".env",
            "--owner",
            "ZYLOS",
            "--name",
            "keys",
            "--content",
            "ZYLOS_HOOK=from-env",
        ],
    );
    let o = Command::new("env")
        .arg("-i")
        .arg(format!("HOME={}", h.display()))
        .args(["bash", "--norc", "--noprofile", "-c"])
        .arg("set -a; . ./.env; printf '%s|%s|%s' \"$ZYLOS_HOOK\" \"$LAST\" \"$GREETING\"")
        .current_dir(h)
        .output()
        .expect("bash runs");
    assert_eq!(stdout(&o), "from-env|end|hello world", "{}", stderr(&o));
}
