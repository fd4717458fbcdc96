# -*- coding: utf-8 -*-
# MIT License (see LICENSE in the collection)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: demarcate
short_description: Manage marker-delimited regions in files people also edit by hand
version_added: "0.1.0"
description:
  - Runs the C(demarcate) binary on the target host with C(--json) and reports what it did.
  - With O(template), makes the file's managed regions equal to the template's (C(demarcate sync)).
  - With O(name) and O(state=present), inserts or updates one region (C(demarcate set)); with
    O(state=absent), removes it (C(demarcate remove)).
  - On a strict JSON file (C(settings.json), C(.mcp.json)) O(template) with O(owner) makes the
    owner's entries those of the template (no markers; see the project's docs/entries.md), with
    O(keys) and O(seeds); O(state=absent) with O(path) and O(owner) and no O(name) takes the
    owner's entries out again.
  - O(state=absent) with O(owner) alone removes every region and entry the owner wrote, in every
    file the state store of the remote user knows (C(demarcate uninstall --owner)).
  - With O(manifest), converges every file the manifest names (C(demarcate apply)).
  - Every byte outside the managed regions stays as it was; a second run changes nothing and
    reports C(changed=false).
  - Check mode runs the binary with C(--check) and writes nothing. Diff mode runs it with
    C(--dry-run) first and returns the unified diff of each file.
  - The C(demarcate) binary must be on the target host (see O(binary)).
options:
  path:
    description: The file to edit. Required unless O(manifest) is given.
    type: path
  name:
    description: The region's name (the words after C(MANAGED)).
    type: str
  owner:
    description:
      - The region's owner (the words before C(MANAGED)); required with O(template) and O(name) (the tool refuses
        to run without one, so that two installers never share unowned markers). With O(template), every region of
        the template must be this owner's.
      - With O(state=absent) and no O(name), the owner whose entries (with O(path), a strict JSON file) or whose
        regions and entries everywhere (without O(path)) go.
    type: str
  content:
    description: The region's body, for O(state=present) with O(name). A final line break is added if missing.
    type: str
  template:
    description: A file on the target host, of the same format, whose regions are the desired ones.
    type: path
  manifest:
    description: A release manifest on the target host (TOML; see the project's docs/reconcile.md).
    type: path
  format:
    description: The file's format (C(auto) detects it from the name, then the shebang).
    type: str
  at:
    description: Where a new region goes (C(end), C(start), C(after:REGEX), C(before:REGEX), C(table:a.b), C(/json/pointer)).
    type: str
  on_drift:
    description: What to do with a region someone edited by hand.
    type: str
    choices: [keep, overwrite, merge, fail]
  state:
    description: Whether the region O(name) (or, without O(name), everything O(owner) wrote) should be present or absent.
    type: str
    choices: [present, absent]
    default: present
  create:
    description: Create a missing file. With V(false), a missing file is skipped.
    type: bool
    default: true
  backup:
    description: Copy the file to C(<file>.<UTC time>.bak) before replacing it.
    type: bool
    default: false
  validate:
    description: A command (C(CMD %s)) run on the new content before it replaces the file.
    type: str
  hash:
    description: Write a C(hash=) on BEGIN lines so hand edits can be told apart.
    type: bool
    default: true
  respect_removals:
    description: With O(template) or O(manifest), leave out a region the user deleted by hand.
    type: bool
    default: false
  keys:
    description:
      - Strict JSON, with O(template) or O(state=absent) - key rules for array elements, C(POINTER=FIELD)
        (C(/hooks/*=matcher), C(/hooks/*/*/hooks=command:path), C(/permissions/allow=.)).
      - Remembered with the owner's registry, so later runs need not repeat them.
    type: list
    elements: str
    default: []
  seeds:
    description: Strict JSON, with O(template) - entries (keys or key prefixes, C(/model)) written only when absent, never updated.
    type: list
    elements: str
    default: []
  prune_adopted:
    description: Strict JSON, with O(template) - the reverse pass also deletes entries that were adopted (found equal to the template on the first run).
    type: bool
    default: false
  force:
    description: Edit what is refused without it - a read-only file (its mode is kept), a signed PowerShell script, a duplicate key in a JSONC object, an entry another owner holds (transferred).
    type: bool
    default: false
  insert:
    description:
      - C(false) - update the region only where it is; a missing one is not inserted (a warning).
    type: bool
    default: true
  require:
    description: A missing region is an error (implies O(insert=false)).
    type: bool
    default: false
  encoding:
    description:
      - The file's encoding, as blockinfile's C(encoding) - C(utf-8), C(utf-16le), C(utf-16be),
        C(latin-1), C(windows-1252). Written back in it, with the byte order mark it had.
    type: str
  line_separator:
    description: The line ending of the lines written (C(lf), C(crlf), C(cr)), as blockinfile's. Default - the file's own.
    type: str
    choices: [lf, crlf, cr]
  adopt:
    description:
      - Lines an older installer wrote without markers (their text, or C(re:REGEX)); the region inserted
        takes the place of the first such line and every such line goes.
    type: list
    elements: str
    default: []
  binary:
    description:
      - The C(demarcate) binary on the target host. Default - the environment variable
        C(DEMARCATE_BINARY), then C(demarcate) on the C(PATH).
    type: path
notes:
  - Supports check mode and diff mode.
  - An option the chosen command does not take (for example O(at) with O(state=absent)) fails the task
    before anything runs.
"""

EXAMPLES = r"""
- name: Our PATH line in every user's ~/.bashrc
  demarcate.core.demarcate:
    path: ~/.bashrc
    owner: ZYLOS
    name: hooks
    content: 'export PATH="$HOME/.zylos/bin:$PATH"'

- name: The profile regions of this release (insert, update, prune)
  demarcate.core.demarcate:
    path: ~/.bashrc
    template: /opt/zylos/templates/bashrc.sh
    owner: ZYLOS

- name: Take our region out again
  demarcate.core.demarcate:
    path: ~/.bashrc
    owner: ZYLOS
    name: hooks
    state: absent

- name: Our hooks in Claude Code's settings, beside the user's own (strict JSON entries)
  demarcate.core.demarcate:
    path: ~/.claude/settings.json
    template: /opt/zylos/templates/settings.json
    owner: ZYLOS
    keys: ['/hooks/*=matcher', '/hooks/*/*/hooks=command:path', '/permissions/allow=.']

- name: Uninstall - everything ZYLOS wrote, in every file
  demarcate.core.demarcate:
    owner: ZYLOS
    state: absent

- name: Converge everything a release manifest names
  demarcate.core.demarcate:
    manifest: /opt/zylos/release.toml
"""

RETURN = r"""
files:
  description: The report of each file (path, format, changed, regions, problems, warnings, diff).
  returned: always
  type: list
  elements: dict
exit_code:
  description:
    - The binary's exit code, 0, or 1 in check mode when a change is due. (Not named C(rc),
      which Ansible reads as a failure when it is not 0.)
  returned: always
  type: int
command:
  description: The command line that was run.
  returned: always
  type: list
  elements: str
stderr:
  description: What the binary printed on standard error.
  returned: always
  type: str
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule


def parse_report(stdout):
    """The JSON report; a diff printed before it (older binaries) goes to each file's diff."""
    text = stdout.strip()
    if text.startswith("{"):
        return json.loads(text)
    starts = [m.start() for m in re.finditer(r"^\{$", stdout, flags=re.M)]
    if not starts:
        raise ValueError("no JSON report on standard output")
    report = json.loads(stdout[starts[-1]:])
    diff_text = stdout[: starts[-1]]
    pieces = {}
    current = None
    for line in diff_text.splitlines(True):
        if line.startswith("--- a/"):
            current = line[6:].rstrip("\r\n")
            pieces[current] = ""
        if current is not None:
            pieces[current] += line
    files = report.get("files") or []
    for f in files:
        if "diff" not in f and f.get("path") in pieces:
            f["diff"] = pieces[f["path"]]
    if len(files) == 1 and "diff" not in files[0] and diff_text:
        files[0]["diff"] = diff_text
    return report


def error_message(report, stderr, rc):
    if report:
        errors = [f["error"] for f in report.get("files", []) if f.get("error")]
        if errors:
            return "\n".join(errors)
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error")]
    if errors:
        return "\n".join(errors)
    if lines:
        return "\n".join(lines)
    return "demarcate exited with code %d" % rc


# Which options each command takes (docs/cli.md, "Flags"). An option given to a command that
# does not take it fails the task before anything runs, rather than being dropped unnoticed.
TAKES = {
    "sync": {"format", "at", "on_drift", "create", "backup", "validate", "hash", "respect_removals",
             "keys", "seeds", "prune_adopted", "force", "adopt", "insert", "require", "encoding",
             "line_separator"},
    "set": {"format", "at", "on_drift", "create", "backup", "validate", "hash", "force", "adopt",
            "insert", "require", "encoding", "line_separator"},
    "remove": {"format", "on_drift", "backup", "validate", "keys", "force", "encoding",
               "line_separator"},
    "apply": {"on_drift", "backup", "validate", "hash", "respect_removals", "force"},
    "uninstall": {"backup", "validate", "force"},
}
# The values that mean "not given" (create and hash default to true).
UNSET = {"create": True, "hash": True, "respect_removals": False, "prune_adopted": False,
         "force": False, "backup": False, "keys": [], "seeds": [], "adopt": [], "insert": True,
         "require": False}
ALL_FLAG_OPTIONS = sorted(set.union(*TAKES.values()))


def subcommand(p):
    if p["manifest"]:
        return "apply"
    if p["template"]:
        return "sync"
    if p["state"] == "absent":
        return "uninstall" if not p["path"] else "remove"
    return "set"


def misplaced(sub, p):
    """The options given that `sub` does not take."""
    given = [o for o in ALL_FLAG_OPTIONS if p[o] is not None and p[o] != UNSET.get(o)]
    return [o for o in given if o not in TAKES[sub]]


def build_command(p):
    """(subcommand, arguments after it, standard input) for the module's parameters."""
    sub = subcommand(p)
    flags = []
    if p["format"]:
        flags += ["--format", p["format"]]
    for k in p["keys"] or []:
        flags += ["--key", k]
    for s in p["seeds"] or []:
        flags += ["--seed", s]
    if p["prune_adopted"]:
        flags.append("--prune-adopted")
    if p["on_drift"]:
        flags += ["--on-drift", p["on_drift"]]
    if p["at"]:
        flags += ["--at", p["at"]]
    if not p["create"] and "create" in TAKES[sub]:
        flags.append("--no-create")
    if not p["hash"] and "hash" in TAKES[sub]:
        flags.append("--no-hash")
    if p["force"]:
        flags.append("--force")
    for t in p["adopt"] or []:
        flags.append("--adopt=" + t)
    if not p["insert"] and "insert" in TAKES[sub]:
        flags.append("--no-insert")
    if p["require"]:
        flags.append("--require")
    if p["encoding"]:
        flags += ["--encoding", p["encoding"]]
    if p["line_separator"]:
        flags += ["--line-ending", p["line_separator"]]
    if p["respect_removals"]:
        flags.append("--respect-removals")
    if p["backup"]:
        flags.append("--backup")
    if p["validate"]:
        flags += ["--validate", p["validate"]]
    ident = []
    if p["owner"] is not None:
        ident += ["--owner", p["owner"]]
    if p["name"] is not None:
        ident += ["--name", p["name"]]

    if sub == "apply":
        return sub, flags + ["--", p["manifest"]], None
    if sub == "sync":
        args = flags + ["--template", p["template"]]
        if p["owner"] is not None:
            args += ["--owner", p["owner"]]
        return sub, args + ["--", p["path"]], None
    if sub == "uninstall":
        return sub, flags + ["--owner", p["owner"]], None
    if sub == "remove":
        return sub, flags + ident + ["--", p["path"]], None
    return sub, flags + ident + ["--content-file", "-", "--", p["path"]], p["content"]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path"),
            name=dict(type="str"),
            owner=dict(type="str"),
            content=dict(type="str"),
            template=dict(type="path"),
            manifest=dict(type="path"),
            format=dict(type="str"),
            at=dict(type="str"),
            on_drift=dict(type="str", choices=["keep", "overwrite", "merge", "fail"]),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            create=dict(type="bool", default=True),
            backup=dict(type="bool", default=False),
            validate=dict(type="str"),
            hash=dict(type="bool", default=True),
            respect_removals=dict(type="bool", default=False),
            keys=dict(type="list", elements="str", default=[], no_log=False),
            seeds=dict(type="list", elements="str", default=[]),
            prune_adopted=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            insert=dict(type="bool", default=True),
            require=dict(type="bool", default=False),
            encoding=dict(type="str"),
            line_separator=dict(type="str", choices=["lf", "crlf", "cr"]),
            adopt=dict(type="list", elements="str", default=[]),
            binary=dict(type="path"),
        ),
        mutually_exclusive=[
            ("manifest", "path"),
            ("manifest", "template"),
            ("manifest", "name"),
            ("template", "name"),
            ("template", "content"),
            ("manifest", "owner"),
        ],
        required_by={"template": "path", "name": "path"},
        supports_check_mode=True,
    )
    p = module.params
    if not p["manifest"] and not p["path"]:
        if not (p["state"] == "absent" and p["owner"]):
            module.fail_json(msg="demarcate: give `path` (a file), `manifest`, or `owner` with state=absent "
                                 "(uninstall everything the owner wrote)")
    if p["path"] and not p["manifest"] and not p["template"] and not p["name"]:
        if not (p["state"] == "absent" and p["owner"]):
            module.fail_json(msg="demarcate: give `template` (sync the file), or `name` (one region), with `path`; "
                                 "or `owner` with state=absent (the owner's entries of a JSON file)")
    if p["state"] == "absent" and (p["template"] or p["manifest"]):
        module.fail_json(msg="demarcate: state=absent takes `path` and `name` (one region to remove), `path` and "
                             "`owner` (the owner's JSON entries), or `owner` alone (uninstall)")
    if p["state"] == "absent" and p["content"] is not None:
        module.fail_json(msg="demarcate: state=absent takes no `content`")
    if p["name"] and p["state"] == "present" and p["content"] is None:
        module.fail_json(msg="demarcate: state=present with `name` needs `content`")
    sub = subcommand(p)
    wrong = misplaced(sub, p)
    if wrong:
        module.fail_json(msg="demarcate: %s %s not apply to `demarcate %s` (it takes: %s)" % (
            ", ".join("`%s`" % o for o in wrong), "does" if len(wrong) == 1 else "do", sub,
            ", ".join(sorted(TAKES[sub]))))

    binary = p["binary"] or os.environ.get("DEMARCATE_BINARY") or module.get_bin_path(
        "demarcate", required=False, opt_dirs=[os.path.expanduser("~/.cargo/bin"), "/usr/local/bin"]
    )
    if not binary:
        module.fail_json(msg="demarcate: the binary was not found on the target host; set `binary`, "
                             "DEMARCATE_BINARY, or install it (cargo install --locked, npm, pip)")

    sub, args, data = build_command(p)

    def run(mode_flags):
        cmd = [binary, sub, "--json"] + mode_flags + args
        # No expansion of `$VAR` and `~` in the arguments: an adopt line, a validate command or
        # a regex holding `$HOME` must reach the binary as written (paths are expanded already).
        kwargs = dict(environ_update={"NO_COLOR": "1"}, expand_user_and_vars=False)
        if data is not None:
            kwargs.update(data=data, binary_data=True)
        rc, out, err = module.run_command(cmd, **kwargs)
        report = None
        try:
            report = parse_report(out)
        except ValueError:
            pass
        if rc not in (0, 1) or report is None:
            module.fail_json(msg=error_message(report, err, rc), rc=rc, stderr=err, stdout=out,
                             command=cmd, files=(report or {}).get("files", []))
        return cmd, rc, err, report

    result = dict(changed=False)
    diffs = []
    if module._diff:
        cmd, rc, err, report = run(["--dry-run"])
        for f in report.get("files", []):
            if f.get("changed"):
                diffs.append(dict(before_header=f["path"], after_header=f["path"], prepared=f.get("diff", "")))
    if module.check_mode:
        if not module._diff:
            cmd, rc, err, report = run(["--check"])
    else:
        cmd, rc, err, report = run([])
    files = report.get("files", [])
    result.update(
        changed=any(f.get("changed") for f in files),
        files=files,
        exit_code=rc,
        command=cmd,
        stderr=err,
    )
    if diffs:
        result["diff"] = diffs
    for f in files:
        for w in f.get("warnings", []) or []:
            module.warn("%s: %s" % (f.get("path"), w))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
