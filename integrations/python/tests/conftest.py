"""Test setup: the installed package (else the source tree), a built binary, a private state store."""

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent

try:
    import demarcate  # noqa: F401  (the installed wheel)
except ImportError:
    sys.path.insert(0, str(HERE.parent / "python"))
    import demarcate  # noqa: F401


def built_binary():
    """$DEMARCATE_BINARY, the wheel's binary, else the repository's own build."""
    found = demarcate.find_binary()
    if found:
        return found
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "demarcate"
        if p.exists():
            return str(p)
    pytest.exit("no demarcate binary: install the wheel, run cargo build --release, or set DEMARCATE_BINARY", 2)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMARCATE_BINARY", built_binary())
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("NO_COLOR", raising=False)
