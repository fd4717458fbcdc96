"""demarcate: manage marker-delimited regions inside files people also edit by hand.

A small typed API over the demarcate binary: each function runs one command with ``--json``
and returns the parsed report (a dict shaped like :class:`Report`) with ``exit_code`` and
``stderr`` added. Exit code 1 (``check=True`` found a change due; ``check()`` found problems)
is a result, not an error; exit code 2 raises :class:`DemarcateError` with the tool's message.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional, Sequence, Union

from ._api import (
    DemarcateError,
    FileReport,
    ProblemReport,
    RegionReport,
    Report,
    StrPath,
    _common,
    _id,
    _run,
    _targets,
    find_binary,
)

__all__ = [
    "sync",
    "set",
    "remove",
    "list",
    "check",
    "apply",
    "find_binary",
    "DemarcateError",
    "Report",
    "FileReport",
    "RegionReport",
    "ProblemReport",
]


def sync(
    targets: Union[StrPath, Sequence[StrPath]],
    *,
    template: StrPath,
    owner: Optional[str] = None,
    respect_removals: bool = False,
    format: Optional[str] = None,
    dry_run: bool = False,
    check: bool = False,
    on_drift: Optional[str] = None,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    force: bool = False,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Make each target's regions equal to the template's: insert, update, prune."""
    a = ["sync", *_common(format, dry_run, check, on_drift, at, no_hash, no_create, backup, validate, force, marker_begin, marker_end), "--template", os.fspath(template)]
    if owner is not None:
        a += ["--owner", owner]
    if respect_removals:
        a.append("--respect-removals")
    return _run([*a, "--", *_targets(targets)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def set(
    target: StrPath,
    *,
    content: str,
    name: Optional[str] = None,
    owner: Optional[str] = None,
    format: Optional[str] = None,
    dry_run: bool = False,
    check: bool = False,
    on_drift: Optional[str] = None,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    force: bool = False,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Insert or update one region; ``content`` goes to the binary on standard input."""
    a = ["set", *_common(format, dry_run, check, on_drift, at, no_hash, no_create, backup, validate, force, marker_begin, marker_end), *_id(owner, name), "--content-file", "-"]
    return _run([*a, "--", os.fspath(target)], input=content, binary=binary, env=env, cwd=cwd, timeout=timeout)


def remove(
    target: StrPath,
    *,
    name: Optional[str] = None,
    owner: Optional[str] = None,
    format: Optional[str] = None,
    dry_run: bool = False,
    check: bool = False,
    on_drift: Optional[str] = None,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    force: bool = False,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Remove one region, markers included."""
    a = ["remove", *_common(format, dry_run, check, on_drift, at, no_hash, no_create, backup, validate, force, marker_begin, marker_end), *_id(owner, name)]
    return _run([*a, "--", os.fspath(target)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def list(
    targets: Union[StrPath, Sequence[StrPath]],
    *,
    format: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """The regions of each file and their state."""
    a = ["list", *(["--format", format] if format else [])]
    return _run([*a, "--", *_targets(targets)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def check(
    targets: Union[StrPath, Sequence[StrPath]],
    *,
    format: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Damaged markers, drift and duplicate keys; ``exit_code`` 1 when anything is found."""
    a = ["check", *(["--format", format] if format else [])]
    return _run([*a, "--", *_targets(targets)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def apply(
    manifest: StrPath,
    *,
    respect_removals: bool = False,
    format: Optional[str] = None,
    dry_run: bool = False,
    check: bool = False,
    on_drift: Optional[str] = None,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    force: bool = False,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Reconcile every file a manifest names."""
    a = ["apply", *_common(format, dry_run, check, on_drift, at, no_hash, no_create, backup, validate, force, marker_begin, marker_end)]
    if respect_removals:
        a.append("--respect-removals")
    return _run([*a, "--", os.fspath(manifest)], binary=binary, env=env, cwd=cwd, timeout=timeout)
