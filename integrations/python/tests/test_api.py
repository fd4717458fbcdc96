"""The Python API against the real binary, on real files."""

import os
import re
import subprocess
import sys
import pathlib

import pytest

import demarcate

REPO = pathlib.Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "integrations" / "python" / "examples" / "set_hook.py"


def test_set_inserts_then_second_run_changes_nothing(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"alias ll='ls -l'\n")
    first = demarcate.set(rc, owner="ZYLOS", name="hooks", content="export A=1")
    assert first["exit_code"] == 0
    (f,) = first["files"]
    assert f["path"] == str(rc)
    assert f["format"] == "shell"
    assert f["changed"] is True
    assert [(r["owner"], r["name"], r["begin_line"], r["end_line"], r["state"], r["action"]) for r in f["regions"]] == [
        ("ZYLOS", "hooks", 2, 4, "pristine", "inserted")
    ]
    data = rc.read_bytes()
    assert re.fullmatch(
        rb"alias ll='ls -l'\n# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]{12}\nexport A=1\n# END ZYLOS MANAGED hooks\n", data
    )
    mtime = rc.stat().st_mtime_ns
    second = demarcate.set(str(rc), owner="ZYLOS", name="hooks", content="export A=1")
    assert second["files"][0]["changed"] is False
    assert second["files"][0]["regions"][0]["action"] == "unchanged"
    assert rc.read_bytes() == data
    assert rc.stat().st_mtime_ns == mtime


def test_content_passes_through_stdin_untouched(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"")
    content = "--odd() { echo \"$HOME\" '$PATH' `date`; }\n"
    demarcate.set(rc, owner="ZYLOS", name="odd", content=content)
    assert ("\n" + content + "# END ZYLOS MANAGED odd\n") in rc.read_text()


def test_check_flag_is_a_result_not_an_error(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"echo hi\n")
    due = demarcate.set(rc, owner="ZYLOS", name="hooks", content="x=1", check=True)
    assert due["exit_code"] == 1
    assert due["files"][0]["changed"] is True
    assert rc.read_bytes() == b"echo hi\n"
    demarcate.set(rc, owner="ZYLOS", name="hooks", content="x=1")
    assert demarcate.set(rc, owner="ZYLOS", name="hooks", content="x=1", check=True)["exit_code"] == 0


def test_dry_run_reports_the_diff_and_writes_nothing(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"echo hi\n")
    r = demarcate.set(rc, owner="ZYLOS", name="hooks", content="export B=2", dry_run=True)
    assert r["exit_code"] == 0
    diff = r["files"][0]["diff"]
    assert "\n+export B=2\n" in diff
    assert "\n+# END ZYLOS MANAGED hooks\n" in diff
    assert rc.read_bytes() == b"echo hi\n"


def test_remove_restores_original_bytes(tmp_path):
    original = b"# user line\r\nexport X=1\r\n"
    rc = tmp_path / ".profile"
    rc.write_bytes(original)
    demarcate.set(rc, owner="ZYLOS", name="hooks", content="export A=1")
    assert b"export A=1\r\n" in rc.read_bytes()
    r = demarcate.remove(rc, owner="ZYLOS", name="hooks")
    assert r["files"][0]["changed"] is True
    assert r["files"][0]["regions"][0]["action"] == "removed"
    assert rc.read_bytes() == original
    assert demarcate.remove(rc, owner="ZYLOS", name="hooks")["files"][0]["changed"] is False
    assert rc.read_bytes() == original


def test_sync_v1_then_v2_then_nothing(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"echo mine\n")
    v1 = tmp_path / "v1.sh"
    v1.write_text("# BEGIN ZYLOS MANAGED a\nA=1\n# END ZYLOS MANAGED a\n# BEGIN ZYLOS MANAGED b\nB=1\n# END ZYLOS MANAGED b\n")
    v2 = tmp_path / "v2.sh"
    v2.write_text("# BEGIN ZYLOS MANAGED a\nA=2\n# END ZYLOS MANAGED a\n# BEGIN ZYLOS MANAGED c\nC=2\n# END ZYLOS MANAGED c\n")
    r1 = demarcate.sync(rc, template=v1, owner="ZYLOS")
    assert [(r["name"], r["action"]) for r in r1["files"][0]["regions"]] == [("a", "inserted"), ("b", "inserted")]
    r2 = demarcate.sync([rc], template=str(v2), owner="ZYLOS")
    assert {r["name"]: r["action"] for r in r2["files"][0]["regions"]} == {"a": "updated", "b": "pruned", "c": "inserted"}
    text = rc.read_text()
    assert text.startswith("echo mine\n# BEGIN ZYLOS MANAGED a hash=")
    assert "\nA=2\n# END ZYLOS MANAGED a\n# BEGIN ZYLOS MANAGED c hash=" in text
    assert "B=1" not in text
    r3 = demarcate.sync(rc, template=v2, owner="ZYLOS")
    assert r3["files"][0]["changed"] is False
    assert rc.read_text() == text


def test_list_and_check_see_a_hand_edit(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"")
    demarcate.set(rc, owner="ZYLOS", name="hooks", content="A=1")
    rc.write_text(rc.read_text().replace("A=1", "A=edited"))
    assert demarcate.list(rc)["files"][0]["regions"][0]["state"] == "drifted"
    c = demarcate.check([rc])
    assert c["exit_code"] == 1
    assert [p["kind"] for p in c["files"][0]["problems"]] == ["drift"]
    kept = demarcate.set(rc, owner="ZYLOS", name="hooks", content="A=2")
    assert kept["files"][0]["regions"][0]["action"] == "kept-drifted"
    assert "A=edited" in rc.read_text()


def test_error_raises_with_message_and_exit_code(tmp_path):
    damaged = b"# BEGIN ZYLOS MANAGED hooks\nA=1\n"
    rc = tmp_path / ".bashrc"
    rc.write_bytes(damaged)
    with pytest.raises(demarcate.DemarcateError) as info:
        demarcate.set(rc, owner="ZYLOS", name="other", content="B=1")
    e = info.value
    assert e.exit_code == 2
    assert re.search(r'\.bashrc:1:1: BEGIN marker for "ZYLOS MANAGED hooks" has no END', e.message)
    assert str(e) == e.message
    assert e.report["files"][0]["problems"][0]["kind"] == "unclosed-begin"
    assert rc.read_bytes() == damaged
    c = demarcate.check(rc)
    assert c["exit_code"] == 1
    assert c["files"][0]["problems"][0]["kind"] == "unclosed-begin"


def test_usage_error_message_comes_from_stderr(tmp_path):
    with pytest.raises(demarcate.DemarcateError) as info:
        demarcate.set(tmp_path / "x.conf", owner="Z", name="a", content="x", format="klingon")
    assert info.value.exit_code == 2
    assert "klingon" in info.value.message


def test_on_drift_fail_raises(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"")
    demarcate.set(rc, owner="ZYLOS", name="hooks", content="A=1")
    rc.write_text(rc.read_text().replace("A=1", "A=mine"))
    before = rc.read_bytes()
    with pytest.raises(demarcate.DemarcateError) as info:
        demarcate.set(rc, owner="ZYLOS", name="hooks", content="A=2", on_drift="fail")
    assert info.value.exit_code == 2
    assert "hooks" in info.value.message
    assert rc.read_bytes() == before


def test_apply_converges_then_nothing_to_do(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_bytes(b"echo mine\n")
    (tmp_path / "profile.sh").write_text("# BEGIN ZYLOS MANAGED path\nexport PATH=/opt/z:$PATH\n# END ZYLOS MANAGED path\n")
    manifest = tmp_path / "release.toml"
    manifest.write_text(
        'owner = "ZYLOS"\n\n[[file]]\npath = "home/.bashrc"\ntemplate = "profile.sh"\n\n'
        '[[block]]\npath = "home/app.env"\nname = "api"\ncontent = "API_URL=https://api.example/v2"\n'
    )
    r1 = demarcate.apply(manifest)
    assert len(r1["files"]) == 2 and all(f["changed"] for f in r1["files"])
    assert re.sub(r"hash=[0-9a-f]+", "hash=H", (home / ".bashrc").read_text()) == (
        "echo mine\n# BEGIN ZYLOS MANAGED path hash=H\nexport PATH=/opt/z:$PATH\n# END ZYLOS MANAGED path\n"
    )
    assert re.fullmatch(
        r"# BEGIN ZYLOS MANAGED api hash=[0-9a-f]+\nAPI_URL=https://api\.example/v2\n# END ZYLOS MANAGED api\n",
        (home / "app.env").read_text(),
    )
    assert not any(f["changed"] for f in demarcate.apply(manifest)["files"])
    assert demarcate.apply(manifest, check=True)["exit_code"] == 0


def test_missing_binary_raises_with_no_exit_code(tmp_path):
    with pytest.raises(demarcate.DemarcateError) as info:
        demarcate.list("x", binary=str(tmp_path / "no-such-binary"))
    assert info.value.exit_code is None
    assert "cannot run" in info.value.message


def test_find_binary_order(tmp_path, monkeypatch):
    bindir = tmp_path / "pathdir"
    bindir.mkdir()
    fake = bindir / "demarcate"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert demarcate.find_binary({"DEMARCATE_BINARY": "/opt/x/demarcate", "PATH": str(bindir)}) == "/opt/x/demarcate"
    found = demarcate.find_binary({"PATH": str(bindir)})
    scripts = __import__("sysconfig").get_path("scripts")
    if os.path.exists(os.path.join(scripts, "demarcate")):
        # The wheel is installed: its binary comes before the PATH.
        assert found == os.path.join(scripts, "demarcate")
    else:
        assert found == str(fake)


def test_readme_quotes_the_example():
    example = EXAMPLE.read_text()
    for readme in (REPO / "README.md", REPO / "integrations" / "python" / "README.md"):
        assert "```python\n" + example + "```\n" in readme.read_text(), readme


def test_example_installs_then_finds_it_there(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_bytes(b"alias ll='ls -l'\n")
    env = dict(os.environ, HOME=str(home))
    # The example imports the package as a user would: from the installed wheel when there is one.
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in map(pathlib.Path, sys.path) if (p / "demarcate").is_dir()])

    def run():
        return subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, check=True).stdout

    assert run() == "installed\n"
    data = (home / ".bashrc").read_bytes()
    assert re.fullmatch(
        rb"alias ll='ls -l'\n# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]{12}\nexport PATH=\"\$HOME/\.zylos/bin:\$PATH\"\n# END ZYLOS MANAGED hooks\n",
        data,
    )
    assert run() == "already there\n"
    assert (home / ".bashrc").read_bytes() == data


def test_peers_options_no_insert_require_encoding_line_ending(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"export A=1\n")
    skipped = demarcate.set(rc, owner="ZYLOS", name="hooks", content="export B=2", no_insert=True)
    assert skipped["files"][0]["regions"][0]["action"] == "not-inserted"
    assert rc.read_bytes() == b"export A=1\n"
    with pytest.raises(demarcate.DemarcateError) as e:
        demarcate.set(rc, owner="ZYLOS", name="hooks", content="export B=2", require=True)
    assert e.value.exit_code == 2 and "hooks" in str(e.value)
    profile = tmp_path / "profile.ps1"
    profile.write_bytes(b"\xff\xfe" + "$a = 1\r\n".encode("utf-16le"))
    demarcate.set(profile, owner="ZYLOS", name="p", content="$b = 2", encoding="utf-16le")
    text = profile.read_bytes()[2:].decode("utf-16le")
    assert text.startswith("$a = 1\r\n# BEGIN ZYLOS MANAGED p") and text.endswith("# END ZYLOS MANAGED p\r\n")
    listed = demarcate.list(profile, encoding="utf-16le")
    assert listed["files"][0]["regions"][0]["state"] == "pristine"
    crlf = tmp_path / "app.conf"
    demarcate.set(crlf, owner="ZYLOS", name="c", content="x=1", format="text", line_ending="crlf")
    assert crlf.read_bytes().endswith(b"x=1\r\n# END ZYLOS MANAGED c\r\n")
