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
    description: The region's owner (the words before C(MANAGED)). With O(template), only this owner's regions are reconciled.
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
    description: Whether the region O(name) should be present or absent.
    type: str
    choices: [present, absent]
    default: present
  create:
    description: Create a missing file. With V(false), a missing file is skipped.
    type: bool
    default: true
  backup:
    description: Copy the file to C(<file>.<unix seconds>.bak) before replacing it.
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
  binary:
    description:
      - The C(demarcate) binary on the target host. Default - the environment variable
        C(DEMARCATE_BINARY), then C(demarcate) on the C(PATH).
    type: path
notes:
  - Supports check mode and diff mode.
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

- name: Take our region out again
  demarcate.core.demarcate:
    path: ~/.bashrc
    owner: ZYLOS
    name: hooks
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


def build_command(p):
    """(subcommand, arguments after it, standard input) for the module's parameters."""
    common = []
    if p["format"]:
        common += ["--format", p["format"]]
    if p["on_drift"]:
        common += ["--on-drift", p["on_drift"]]
    if p["at"]:
        common += ["--at", p["at"]]
    if not p["create"]:
        common.append("--no-create")
    if p["backup"]:
        common.append("--backup")
    if p["validate"]:
        common += ["--validate", p["validate"]]
    if not p["hash"]:
        common.append("--no-hash")
    ident = []
    if p["owner"] is not None:
        ident += ["--owner", p["owner"]]
    if p["name"] is not None:
        ident += ["--name", p["name"]]

    if p["manifest"]:
        args = common + (["--respect-removals"] if p["respect_removals"] else [])
        return "apply", args + ["--", p["manifest"]], None
    if p["template"]:
        args = common + ["--template", p["template"]]
        if p["owner"] is not None:
            args += ["--owner", p["owner"]]
        if p["respect_removals"]:
            args.append("--respect-removals")
        return "sync", args + ["--", p["path"]], None
    if p["state"] == "absent":
        return "remove", common + ident + ["--", p["path"]], None
    return "set", common + ident + ["--content-file", "-", "--", p["path"]], p["content"]


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
            binary=dict(type="path"),
        ),
        mutually_exclusive=[
            ("manifest", "path"),
            ("manifest", "template"),
            ("manifest", "name"),
            ("template", "name"),
            ("template", "content"),
        ],
        required_one_of=[("manifest", "path")],
        required_by={"template": "path", "name": "path"},
        supports_check_mode=True,
    )
    p = module.params
    if p["path"] and not p["manifest"] and not p["template"] and not p["name"]:
        module.fail_json(msg="demarcate: give `template` (sync the file), or `name` (one region), with `path`")
    if p["state"] == "absent" and (p["template"] or p["manifest"]):
        module.fail_json(msg="demarcate: state=absent takes `path` and `name` (one region to remove)")
    if p["name"] and p["state"] == "present" and p["content"] is None:
        module.fail_json(msg="demarcate: state=present with `name` needs `content`")

    binary = p["binary"] or os.environ.get("DEMARCATE_BINARY") or module.get_bin_path(
        "demarcate", required=False, opt_dirs=[os.path.expanduser("~/.cargo/bin"), "/usr/local/bin"]
    )
    if not binary:
        module.fail_json(msg="demarcate: the binary was not found on the target host; set `binary`, "
                             "DEMARCATE_BINARY, or install it (cargo install --locked, npm, pip)")

    sub, args, data = build_command(p)

    def run(mode_flags):
        cmd = [binary, sub, "--json"] + mode_flags + args
        kwargs = dict(environ_update={"NO_COLOR": "1"})
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
