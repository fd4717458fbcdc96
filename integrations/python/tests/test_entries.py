"""Strict JSON entries, uninstall and the options each command takes, against the real binary.

Every test has its own state store (conftest.py), since uninstall reaches every file it knows.
"""

import json
import os
import re

import pytest

import demarcate

USER_SETTINGS = (
    '{\n  "theme": "dark",\n  "hooks": {\n    "SessionStart": [\n'
    '      {"matcher": "", "hooks": [{"type": "command", "command": "echo mine"}]}\n    ]\n  }\n}\n'
).encode()

KEYS = ["/hooks/*=matcher", "/hooks/*/*/hooks=command:path", "/permissions/allow=."]


def template(path, start="node ~/z/start.js", allow=("Bash(zylos status)",), model=None):
    t = {
        "hooks": {
            "SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": start}]}],
            "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "node ~/z/stop.js"}]}],
        },
        "permissions": {"allow": [*allow]},
    }
    if model is not None:
        t["model"] = model
    path.write_text(json.dumps(t, indent=2) + "\n")
    return path


def parsed(path):
    """The file stays strict JSON at every step: json.loads is what its readers do."""
    return json.loads(path.read_bytes())


def test_sync_with_key_rules_then_nothing_then_uninstall_gives_the_bytes_back(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    v1 = template(tmp_path / "v1.json")

    first = demarcate.sync(settings, template=v1, owner="ZYLOS", keys=KEYS)
    (f,) = first["files"]
    assert f["format"] == "json" and f["changed"] is True and f["regions"] == []
    assert [(e["owner"], e["state"], e["action"]) for e in f["entries"]] == [("ZYLOS", "missing", "inserted")] * 3
    assert "/permissions/allow[.=Bash(zylos status)]" in [e["key"] for e in f["entries"]]
    v = parsed(settings)
    assert v["theme"] == "dark"
    assert [h["command"] for h in v["hooks"]["SessionStart"][0]["hooks"]] == ["echo mine", "node ~/z/start.js"]
    installed = settings.read_bytes()
    mtime = settings.stat().st_mtime_ns

    # The key rules are remembered with the registry.
    second = demarcate.sync(settings, template=v1, owner="ZYLOS")
    assert second["files"][0]["changed"] is False
    assert all(e["state"] == "pristine" and e["action"] == "unchanged" for e in second["files"][0]["entries"])
    assert settings.read_bytes() == installed and settings.stat().st_mtime_ns == mtime
    assert demarcate.sync(settings, template=v1, owner="ZYLOS", check=True)["exit_code"] == 0

    v2 = template(tmp_path / "v2.json", start="node ~/z/start2.js")
    preview = demarcate.sync(settings, template=v2, owner="ZYLOS", dry_run=True)
    assert preview["files"][0]["changed"] is True
    assert re.search(r"^\+.*node ~/z/start2\.js", preview["files"][0]["diff"], re.M)
    assert re.search(r"^-.*node ~/z/start\.js", preview["files"][0]["diff"], re.M)
    assert demarcate.sync(settings, template=v2, owner="ZYLOS", check=True)["exit_code"] == 1
    assert settings.read_bytes() == installed

    demarcate.sync(settings, template=v2, owner="ZYLOS")
    hooks = parsed(settings)["hooks"]["SessionStart"][0]["hooks"]
    assert [h["command"] for h in hooks] == ["echo mine", "node ~/z/start2.js"]

    upgraded = settings.read_bytes()
    dry = demarcate.uninstall("ZYLOS", dry_run=True)
    (d,) = dry["files"]
    assert os.path.realpath(d["path"]) == os.path.realpath(settings)
    assert re.search(r"^-.*node ~/z/stop\.js", d["diff"], re.M)
    assert demarcate.uninstall("ZYLOS", check=True)["exit_code"] == 1
    assert settings.read_bytes() == upgraded

    gone = demarcate.uninstall("ZYLOS")
    assert gone["exit_code"] == 0
    assert gone["files"][0]["changed"] is True
    assert {e["action"] for e in gone["files"][0]["entries"]} == {"removed"}
    assert settings.read_bytes() == USER_SETTINGS
    parsed(settings)
    assert not any(x["changed"] for x in demarcate.uninstall("ZYLOS")["files"])
    assert settings.read_bytes() == USER_SETTINGS


def test_remove_by_owner_without_a_name_on_strict_json(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    demarcate.sync(settings, template=template(tmp_path / "t.json"), owner="ZYLOS", keys=KEYS)
    installed = settings.read_bytes()
    parsed(settings)
    assert demarcate.remove(settings, owner="ZYLOS", check=True)["exit_code"] == 1
    assert settings.read_bytes() == installed
    r = demarcate.remove(settings, owner="ZYLOS")
    assert r["files"][0]["changed"] is True
    assert [e["action"] for e in r["files"][0]["entries"]] == ["removed"] * 3
    assert settings.read_bytes() == USER_SETTINGS
    assert demarcate.remove(settings, owner="ZYLOS")["files"][0]["changed"] is False


def test_seeds_are_written_once_and_prune_adopted_drops_co_owned_entries(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{\n  "permissions": {\n    "allow": [\n      "Bash(zylos status)"\n    ]\n  }\n}\n')
    v1 = template(tmp_path / "v1.json", model="opus")
    first = demarcate.sync(settings, template=v1, owner="ZYLOS", keys=KEYS, seeds="/model")
    actions = {e["key"]: e["action"] for e in first["files"][0]["entries"]}
    assert actions["/model"] == "inserted"
    assert actions["/permissions/allow[.=Bash(zylos status)]"] == "adopted"
    assert parsed(settings)["model"] == "opus"

    settings.write_text(settings.read_text().replace('"opus"', '"haiku"'))
    v2 = template(tmp_path / "v2.json", model="sonnet", allow=())
    r2 = demarcate.sync(settings, template=v2, owner="ZYLOS", seeds=["/model"])
    assert parsed(settings)["model"] == "haiku"
    assert parsed(settings)["permissions"]["allow"] == ["Bash(zylos status)"]
    left = {e["key"]: e["action"] for e in r2["files"][0]["entries"]}
    assert left["/permissions/allow[.=Bash(zylos status)]"] == "left"

    other = tmp_path / "other.json"
    other.write_text('{"permissions": {"allow": ["Bash(zylos status)"]}}\n')
    demarcate.sync(other, template=v1, owner="ZYLOS", keys=KEYS)
    pruned = demarcate.sync(other, template=v2, owner="ZYLOS", prune_adopted=True)
    assert {e["key"]: e["action"] for e in pruned["files"][0]["entries"]}["/permissions/allow[.=Bash(zylos status)]"] == "pruned"
    assert parsed(other).get("permissions", {}).get("allow", []) == []


def test_uninstall_keeps_a_hand_edited_region_with_exit_code_1(tmp_path):
    a = tmp_path / "a.sh"
    a.write_text("echo a\n")
    b = tmp_path / "b.env"
    b.write_text("B=1\n")
    demarcate.set(a, owner="ZYLOS", name="hooks", content="export A=1")
    demarcate.set(b, owner="ZYLOS", name="api", content="API=1")
    demarcate.set(b, owner="OTHER", name="x", content="X=1")
    a.write_text(a.read_text().replace("export A=1", "export A=mine"))
    edited = a.read_bytes()
    r = demarcate.uninstall("ZYLOS")
    assert r["exit_code"] == 1
    by = {os.path.basename(f["path"]): f for f in r["files"]}
    assert by["a.sh"]["changed"] is False
    assert by["a.sh"]["regions"][0]["action"] == "kept-drifted"
    assert any("edited by hand" in w for w in by["a.sh"]["warnings"])
    assert by["b.env"]["changed"] is True
    assert a.read_bytes() == edited
    assert re.fullmatch(r"B=1\n# BEGIN OTHER MANAGED x hash=[0-9a-f]+\nX=1\n# END OTHER MANAGED x\n", b.read_text())


def test_adopt_force_comment_and_marker_pass_through(tmp_path):
    line = 'export PATH="$HOME/.zylos/bin:$PATH"'
    rc = tmp_path / ".bashrc"
    rc.write_text(line + "\nalias ll=ls\n")
    r = demarcate.set(rc, owner="ZYLOS", name="hooks", content=line, adopt=line)
    assert r["files"][0]["regions"][0]["action"] == "adopted"
    assert re.fullmatch(r"# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]+\n" + re.escape(line) + r"\n# END ZYLOS MANAGED hooks\nalias ll=ls\n", rc.read_text())

    jsonc = tmp_path / "c.jsonc"
    jsonc.write_text('{\n  // mine\n  "a": 1\n}\n')
    with pytest.raises(demarcate.DemarcateError, match="also assigned"):
        demarcate.set(jsonc, owner="Z", name="n", content='"a": 2,')
    assert demarcate.set(jsonc, owner="Z", name="n", content='"a": 2,', force=True)["files"][0]["changed"] is True

    sql = tmp_path / "init.sql"
    sql.write_text("select 1;\n")
    demarcate.set(sql, owner="Z", name="n", content="select 2;", comment="--")
    assert re.fullmatch(r"select 1;\n-- BEGIN Z MANAGED n hash=[0-9a-f]+\nselect 2;\n-- END Z MANAGED n\n", sql.read_text())

    conf = tmp_path / "app.conf"
    conf.write_text("x\n")
    demarcate.set(conf, content="y = 1", marker="# {mark} ANSIBLE MANAGED BLOCK", format="text")
    assert conf.read_text() == "x\n# BEGIN ANSIBLE MANAGED BLOCK\ny = 1\n# END ANSIBLE MANAGED BLOCK\n"


def test_an_option_the_command_does_not_take_is_a_type_error(tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_bytes(b"")
    with pytest.raises(TypeError, match="at"):
        demarcate.remove(rc, name="n", at="start")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="format"):
        demarcate.apply(tmp_path / "m.toml", format="shell")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="dry_run"):
        demarcate.list(rc, dry_run=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="on_drift"):
        demarcate.uninstall("Z", on_drift="overwrite")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="owner is required"):
        demarcate.uninstall("")
    assert rc.read_bytes() == b""
