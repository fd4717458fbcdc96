"""The installed wheel: its binary is found without DEMARCATE_BINARY and is the crate's build."""

import os
import subprocess
import sysconfig

import pytest

import demarcate


def test_installed_wheel_ships_a_working_binary(monkeypatch, tmp_path):
    scripts = sysconfig.get_path("scripts")
    shipped = os.path.join(scripts, "demarcate")
    if os.environ.get("DEMARCATE_REQUIRE_WHEEL") != "1" and not os.path.exists(shipped):
        pytest.skip("the wheel is not installed in this interpreter (CI installs it and sets DEMARCATE_REQUIRE_WHEEL=1)")
    monkeypatch.delenv("DEMARCATE_BINARY")
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on the PATH: only the wheel's binary
    assert demarcate.find_binary() == shipped
    out = subprocess.run([shipped, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("demarcate ")
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"")
    r = demarcate.set(rc, owner="ZYLOS", name="w", content="W=1")
    assert r["files"][0]["changed"] is True
    assert b"\nW=1\n# END ZYLOS MANAGED w\n" in rc.read_bytes()
