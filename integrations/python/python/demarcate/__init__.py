"""demarcate: manage marker-delimited regions inside files people also edit by hand.

A small typed API over the demarcate binary: each function runs one command with ``--json``
and returns the parsed report (a dict shaped like :class:`Report`) with ``exit_code`` and
``stderr`` added. Exit code 1 (``check=True`` found a change due; ``check()`` found problems)
is a result, not an error; exit code 2 raises :class:`DemarcateError` with the tool's message.
"""

from __future__ import annotations

import os
from typing import Literal, Mapping, Optional, Sequence, Union

from ._api import (
    DemarcateError,
    EntryReport,
    FileReport,
    ProblemReport,
    RegionReport,
    Report,
    StrPath,
    _flags,
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
    "uninstall",
    "find_binary",
    "DemarcateError",
    "Report",
    "FileReport",
    "RegionReport",
    "EntryReport",
    "ProblemReport",
]

OnDrift = Literal["keep", "overwrite", "merge", "fail"]
"""What to do with a region (or entry) edited by hand."""
Strs = Union[str, Sequence[str]]
"""One string, or several (a lone string is one item)."""

# Each function takes the options its command takes (docs/cli.md, "Flags"); Python itself
# refuses any other keyword with a TypeError before anything runs.


def sync(
    targets: Union[StrPath, Sequence[StrPath]],
    *,
    template: StrPath,
    owner: Optional[str] = None,
    allow_empty: bool = False,
    template_format: Optional[str] = None,
    respect_removals: bool = False,
    keys: Optional[Strs] = None,
    seeds: Optional[Strs] = None,
    prune_adopted: bool = False,
    entries: bool = False,
    format: Optional[str] = None,
    comment: Optional[str] = None,
    marker: Optional[str] = None,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    encoding: Optional[str] = None,
    line_ending: Optional[str] = None,
    no_insert: bool = False,
    require: bool = False,
    blank_before: bool = False,
    blank_after: bool = False,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    force: bool = False,
    adopt: Optional[Strs] = None,
    on_drift: Optional[OnDrift] = None,
    dry_run: bool = False,
    check: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Make each target's regions equal to the template's: insert, update, prune.

    ``owner`` is required (unless ``marker``/``marker_begin`` name a foreign block) and every
    region of the template must be its; a template without regions is an error unless
    ``allow_empty`` (then the owner's regions are pruned, as for a release that ships nothing).

    Strict JSON (format ``json``): make ``owner``'s entries those of the template; ``keys``
    are key rules for array elements (``/hooks/*=matcher``; remembered, so later runs need not
    repeat them), ``seeds`` entries written only when absent, ``prune_adopted`` deletes
    co-owned entries the template dropped too. See docs/entries.md.
    """
    a = ["sync", *_flags(
        encoding=encoding, line_ending=line_ending, no_insert=no_insert, require=require,
        format=format, comment=comment, marker=marker, marker_begin=marker_begin, marker_end=marker_end,
        blank_before=blank_before, blank_after=blank_after, keys=keys, seeds=seeds,
        prune_adopted=prune_adopted, entries=entries, at=at, no_hash=no_hash, no_create=no_create,
        force=force, adopt=adopt, on_drift=on_drift, respect_removals=respect_removals,
        dry_run=dry_run, check=check, backup=backup, validate=validate,
    ), "--template", os.fspath(template)]
    if owner is not None:
        a += ["--owner", owner]
    if allow_empty:
        a.append("--allow-empty")
    if template_format:
        a += ["--template-format", template_format]
    return _run([*a, "--", *_targets(targets)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def set(
    target: StrPath,
    *,
    content: str,
    name: Optional[str] = None,
    owner: Optional[str] = None,
    format: Optional[str] = None,
    comment: Optional[str] = None,
    marker: Optional[str] = None,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    encoding: Optional[str] = None,
    line_ending: Optional[str] = None,
    no_insert: bool = False,
    require: bool = False,
    blank_before: bool = False,
    blank_after: bool = False,
    at: Optional[str] = None,
    no_hash: bool = False,
    no_create: bool = False,
    force: bool = False,
    adopt: Optional[Strs] = None,
    on_drift: Optional[OnDrift] = None,
    dry_run: bool = False,
    check: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Insert or update one region; ``content`` goes to the binary on standard input.

    ``adopt``: lines an older installer wrote without markers (``re:REGEX`` for a pattern); the
    new region takes the place of the first and they all go.
    """
    a = ["set", *_flags(
        encoding=encoding, line_ending=line_ending, no_insert=no_insert, require=require,
        format=format, comment=comment, marker=marker, marker_begin=marker_begin, marker_end=marker_end,
        blank_before=blank_before, blank_after=blank_after, at=at, no_hash=no_hash, no_create=no_create,
        force=force, adopt=adopt, on_drift=on_drift, dry_run=dry_run, check=check, backup=backup,
        validate=validate,
    ), *_id(owner, name), "--content-file", "-"]
    return _run([*a, "--", os.fspath(target)], input=content, binary=binary, env=env, cwd=cwd, timeout=timeout)


def remove(
    target: StrPath,
    *,
    name: Optional[str] = None,
    owner: Optional[str] = None,
    keys: Optional[Strs] = None,
    format: Optional[str] = None,
    comment: Optional[str] = None,
    marker: Optional[str] = None,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    encoding: Optional[str] = None,
    line_ending: Optional[str] = None,
    blank_before: bool = False,
    blank_after: bool = False,
    on_drift: Optional[OnDrift] = None,
    dry_run: bool = False,
    check: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Remove one region, markers included; on a strict JSON file without ``name``, every entry ``owner`` wrote."""
    a = ["remove", *_flags(
        encoding=encoding, line_ending=line_ending,
        format=format, comment=comment, marker=marker, marker_begin=marker_begin, marker_end=marker_end,
        blank_before=blank_before, blank_after=blank_after, keys=keys, on_drift=on_drift,
        dry_run=dry_run, check=check, backup=backup, validate=validate,
    ), *_id(owner, name)]
    return _run([*a, "--", os.fspath(target)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def list(
    targets: Union[StrPath, Sequence[StrPath]],
    *,
    format: Optional[str] = None,
    keys: Optional[Strs] = None,
    comment: Optional[str] = None,
    marker: Optional[str] = None,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    encoding: Optional[str] = None,
    line_ending: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """The regions (strict JSON: entries) of each file and their state."""
    a = ["list", *_flags(encoding=encoding, line_ending=line_ending, format=format, keys=keys, comment=comment, marker=marker, marker_begin=marker_begin, marker_end=marker_end)]
    return _run([*a, "--", *_targets(targets)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def check(
    targets: Union[StrPath, Sequence[StrPath]],
    *,
    format: Optional[str] = None,
    keys: Optional[Strs] = None,
    comment: Optional[str] = None,
    marker: Optional[str] = None,
    marker_begin: Optional[str] = None,
    marker_end: Optional[str] = None,
    encoding: Optional[str] = None,
    line_ending: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Damaged markers, drift and duplicate keys; ``exit_code`` 1 when anything is found."""
    a = ["check", *_flags(encoding=encoding, line_ending=line_ending, format=format, keys=keys, comment=comment, marker=marker, marker_begin=marker_begin, marker_end=marker_end)]
    return _run([*a, "--", *_targets(targets)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def apply(
    manifest: StrPath,
    *,
    respect_removals: bool = False,
    no_hash: bool = False,
    force: bool = False,
    on_drift: Optional[OnDrift] = None,
    dry_run: bool = False,
    check: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Reconcile every file a manifest names (formats and positions are per entry in the manifest)."""
    a = ["apply", *_flags(
        respect_removals=respect_removals, no_hash=no_hash, force=force, on_drift=on_drift,
        dry_run=dry_run, check=check, backup=backup, validate=validate,
    )]
    return _run([*a, "--", os.fspath(manifest)], binary=binary, env=env, cwd=cwd, timeout=timeout)


def uninstall(
    owner: str,
    *,
    dry_run: bool = False,
    check: bool = False,
    backup: bool = False,
    validate: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[StrPath] = None,
    timeout: Optional[float] = None,
) -> Report:
    """Remove every region and entry ``owner`` wrote, in every file the state store knows.

    The report's paths are absolute. ``exit_code`` 1: something edited by hand was kept (each
    file's ``warnings`` say what), or with ``check=True`` a change is due.
    """
    if not isinstance(owner, str) or not owner:
        raise ValueError("demarcate.uninstall: the owner is required")
    a = ["uninstall", *_flags(dry_run=dry_run, check=check, backup=backup, validate=validate), "--owner", owner]
    return _run(a, binary=binary, env=env, cwd=cwd, timeout=timeout)
