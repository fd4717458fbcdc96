"""Run the demarcate binary with --json and return its parsed report."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from typing import Dict, List, Mapping, Optional, Sequence, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover - older interpreters
    from typing_extensions import NotRequired, TypedDict  # type: ignore[assignment]

EXE = "demarcate.exe" if os.name == "nt" else "demarcate"
StrPath = Union[str, "os.PathLike[str]"]


class RegionReport(TypedDict):
    owner: str
    name: str
    begin_line: int
    end_line: int
    state: str  # pristine, drifted, unhashed, removed
    action: str  # unchanged, inserted, updated, removed, kept-drifted, merged, pruned, adopted


class EntryReport(TypedDict):
    """An owned entry of a strict JSON file (docs/entries.md)."""

    owner: str
    key: str
    """The canonical key: ``/model``, ``/hooks/Stop[matcher=]/hooks[command=node /home/u/z/h.js]``."""
    pointer: str
    """The entry's JSON Pointer in the file as read (an element appended to an array ends in ``/-``)."""
    state: str  # pristine, drifted, missing, user
    action: str  # unchanged, inserted, updated, removed, kept-drifted, kept-user, merged, pruned, adopted, left


class ProblemReport(TypedDict):
    kind: str
    line: int
    column: int
    message: str


class FileReport(TypedDict):
    path: str
    format: str
    changed: bool
    regions: List[RegionReport]
    problems: List[ProblemReport]
    entries: NotRequired[List[EntryReport]]
    """Strict JSON files (format ``json``): the owned entries and what the command did with each."""
    warnings: NotRequired[List[str]]
    error: NotRequired[str]
    diff: NotRequired[str]


class Report(TypedDict):
    files: List[FileReport]
    exit_code: int
    """0: done or nothing to do; 1: with check=True a change is due, for check() problems found,
    for uninstall() something edited by hand was kept."""
    stderr: str


class DemarcateError(Exception):
    """The tool failed (exit code 2) or could not be run; nothing was written to the failed file.

    ``exit_code`` is 2 for the tool's errors and None when the binary could not be run;
    ``message`` is the tool's message; ``report`` is the parsed report when it printed one.
    """

    def __init__(
        self,
        message: str,
        exit_code: Optional[int] = None,
        stderr: str = "",
        report: Optional[Dict[str, object]] = None,
        args: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr
        self.report = report
        self.command = tuple(args)

    def __str__(self) -> str:
        return self.message


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_binary(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The binary to run: $DEMARCATE_BINARY, the one this package's wheel installed, the PATH."""
    env = os.environ if env is None else env
    explicit = env.get("DEMARCATE_BINARY")
    if explicit:
        return explicit
    schemes = [None, f"{os.name}_user"]
    for scheme in schemes:
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if scripts and _executable(os.path.join(scripts, EXE)):
            return os.path.join(scripts, EXE)
    return shutil.which(EXE, path=env.get("PATH", ""))


def _parse_report(stdout: str) -> Dict[str, object]:
    """The JSON report; a diff printed before it by older binaries goes to each file's "diff"."""
    text = stdout.strip()
    if text.startswith("{"):
        return json.loads(text)
    starts = [m.start() for m in re.finditer(r"^\{$", stdout, flags=re.M)]
    if not starts:
        raise ValueError("no JSON report on standard output")
    report = json.loads(stdout[starts[-1]:])
    diff_text = stdout[: starts[-1]]
    pieces: Dict[str, str] = {}
    current: Optional[str] = None
    for line in diff_text.splitlines(keepends=True):
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


def _error_message(report: Optional[Dict[str, object]], stderr: str, code: object) -> str:
    if report:
        files = report.get("files")
        errors = [str(f["error"]) for f in files if isinstance(f, dict) and f.get("error")] if isinstance(files, list) else []
        if errors:
            return "\n".join(errors)
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error")]
    if errors:
        return "\n".join(errors)
    if lines:
        return "\n".join(lines)
    return f"demarcate exited with code {code}"


def _run(
    args: Sequence[str],
    *,
    input: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    run_env = dict(os.environ if env is None else env)
    binary = binary or find_binary(run_env)
    full = [args[0], "--json", *args[1:]]
    if not binary:
        raise DemarcateError(
            "demarcate binary not found: set DEMARCATE_BINARY, install the demarcate wheel, "
            "or put demarcate on the PATH (cargo install --locked demarcate)",
            args=full,
        )
    run_env["NO_COLOR"] = "1"
    try:
        proc = subprocess.run(
            [binary, *full],
            input=(input or "").encode("utf-8"),
            capture_output=True,
            env=run_env,
            cwd=cwd,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DemarcateError(f"cannot run {binary}: {e}", args=full) from e
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = proc.stderr.decode("utf-8", errors="replace")
    report: Optional[Dict[str, object]] = None
    parse_error: Optional[Exception] = None
    try:
        report = _parse_report(stdout)
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        parse_error = e
    code = proc.returncode
    if code in (0, 1) and report is not None:
        report["exit_code"] = code
        report["stderr"] = stderr
        return report  # type: ignore[return-value]
    message = _error_message(report, stderr, code)
    if code in (0, 1) and parse_error is not None:
        message = f"demarcate printed no JSON report ({parse_error})"
    raise DemarcateError(message, exit_code=code if code >= 0 else None, stderr=stderr, report=report, args=full)


def _flags(
    *,
    format: Optional[str] = None,
    comment: Optional[str] = None,
    marker: Optional[str] = None,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    encoding: Optional[str] = None,
    line_ending: Optional[str] = None,
    blank_before: bool = False,
    blank_after: bool = False,
    keys: Union[str, Sequence[str], None] = None,
    seeds: Union[str, Sequence[str], None] = None,
    prune_adopted: bool = False,
    entries: bool = False,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    no_insert: bool = False,
    require: bool = False,
    force: bool = False,
    adopt: Union[str, Sequence[str], None] = None,
    on_drift: Optional[str] = None,
    respect_removals: bool = False,
    dry_run: bool = False,
    check: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
) -> List[str]:
    """The command-line flags for the options given (each command passes only its own)."""
    a: List[str] = []
    if format:
        a += ["--format", format]
    if comment is not None:
        a.append(f"--comment={comment}")
    if marker is not None:
        a += ["--marker", marker]
    if marker_begin is not None:
        a += ["--marker-begin", marker_begin]
    if marker_end is not None:
        a += ["--marker-end", marker_end]
    if encoding:
        a += ["--encoding", encoding]
    if line_ending:
        a += ["--line-ending", line_ending]
    if blank_before:
        a.append("--blank-before")
    if blank_after:
        a.append("--blank-after")
    for k in _many(keys):
        a += ["--key", k]
    for s in _many(seeds):
        a += ["--seed", s]
    if prune_adopted:
        a.append("--prune-adopted")
    if entries:
        a.append("--entries")
    if at:
        a += ["--at", at]
    if no_hash:
        a.append("--no-hash")
    if no_create:
        a.append("--no-create")
    if no_insert:
        a.append("--no-insert")
    if require:
        a.append("--require")
    if force:
        a.append("--force")
    for t in _many(adopt):
        a.append(f"--adopt={t}")
    if on_drift:
        a += ["--on-drift", on_drift]
    if respect_removals:
        a.append("--respect-removals")
    if dry_run:
        a.append("--dry-run")
    if check:
        a.append("--check")
    if backup:
        a.append("--backup")
    if validate:
        a += ["--validate", validate]
    return a


def _many(value: Union[str, Sequence[str], None]) -> List[str]:
    """One string or several: a lone string is one item, not its characters."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _targets(targets: Union[StrPath, Sequence[StrPath]]) -> List[str]:
    if isinstance(targets, (str, bytes)) or hasattr(targets, "__fspath__"):
        items = [os.fspath(targets)]  # type: ignore[arg-type]
    else:
        items = [os.fspath(t) for t in targets]  # type: ignore[union-attr]
    if not items:
        raise ValueError("demarcate: at least one target is needed")
    return [str(t) for t in items]


def _id(owner: Optional[str], name: Optional[str]) -> List[str]:
    a: List[str] = []
    if owner is not None:
        a += ["--owner", owner]
    if name is not None:
        a += ["--name", name]
    return a
