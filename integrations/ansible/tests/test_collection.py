"""The demarcate.core collection under ansible-playbook, against the real binary.

The collection is built and installed with ansible-galaxy as a user would; plays run over an
inventory of several hosts with ansible_connection=local, each pointing at its own temporary
home. Assertions are on the play recap (changed counts, as Molecule's idempotence check reads
them), on the diff output, and on the files' bytes.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
COLLECTION = HERE.parent
REPO = COLLECTION.parent.parent
BIN_DIR = pathlib.Path(sys.executable).parent
HOSTS = ["web1", "web2", "db1"]


def built_binary():
    if os.environ.get("DEMARCATE_BINARY"):
        return str(pathlib.Path(os.environ["DEMARCATE_BINARY"]).resolve())
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "demarcate"
        if p.exists():
            return str(p)
    pytest.exit("no demarcate binary: run cargo build --release or set DEMARCATE_BINARY", 2)


def tool(name):
    path = BIN_DIR / name
    if not path.exists():
        found = shutil.which(name)
        if not found:
            pytest.exit(f"{name} not found: pip install ansible-core", 2)
        return found
    return str(path)


@pytest.fixture(scope="session")
def collections(tmp_path_factory):
    """Build the collection and install it, as `ansible-galaxy collection install` would."""
    out = tmp_path_factory.mktemp("galaxy")
    subprocess.run([tool("ansible-galaxy"), "collection", "build", str(COLLECTION), "--output-path", str(out)],
                   check=True, capture_output=True, env=base_env(out))
    (tarball,) = out.glob("demarcate-core-*.tar.gz")
    path = out / "collections"
    subprocess.run([tool("ansible-galaxy"), "collection", "install", str(tarball), "-p", str(path)],
                   check=True, capture_output=True, env=base_env(out))
    assert (path / "ansible_collections" / "demarcate" / "core" / "plugins" / "modules" / "demarcate.py").exists()
    return path


def base_env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_HOME=str(tmp / ".ansible"),
        ANSIBLE_LOCAL_TEMP=str(tmp / ".ansible" / "tmp"),
        ANSIBLE_REMOTE_TEMP=str(tmp / ".ansible" / "remote"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_DEPRECATION_WARNINGS="0",
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
        PATH=str(BIN_DIR) + os.pathsep + env.get("PATH", ""),
    )
    return env


RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


class Fleet:
    """A temporary fleet: an inventory of local hosts, each with its own home."""

    def __init__(self, root, collections):
        self.root = root
        self.collections = collections
        self.binary = built_binary()
        self.templates = root / "templates"
        self.templates.mkdir()
        for release, (a, c) in {"v1": ("1", None), "v2": ("2", "C=2")}.items():
            text = f"# BEGIN ZYLOS MANAGED path\nexport PATH=/opt/zylos/{release}/bin:$PATH\n# END ZYLOS MANAGED path\n"
            text += f"# BEGIN ZYLOS MANAGED alias\nalias z='zylos --level {a}'\n# END ZYLOS MANAGED alias\n"
            if c:
                text += f"# BEGIN ZYLOS MANAGED completion\neval \"$(zylos completion bash)\"\n# END ZYLOS MANAGED completion\n"
            (self.templates / f"bashrc-{release}.sh").write_text(text)
        lines = ["[fleet]"]
        for host in HOSTS:
            home = root / "homes" / host
            home.mkdir(parents=True)
            lines.append(f"{host} ansible_connection=local ansible_python_interpreter={sys.executable} home={home}")
        (root / "inventory.ini").write_text("\n".join(lines) + "\n")
        (root / "site.yml").write_text(SITE)

    def home(self, host):
        return self.root / "homes" / host

    def seed(self):
        """Each host's own bytes: a .bashrc the user wrote, a .profile holding a legacy region."""
        originals = {}
        for host in HOSTS:
            home = self.home(host)
            bashrc = f"# {host}'s own profile\r\nalias ll='ls -l'\r\n".encode() if host == "db1" else f"# {host}'s own profile\nalias ll='ls -l'\n".encode()
            (home / ".bashrc").write_bytes(bashrc)
            profile = f"# {host} profile\nexport EDITOR=vi\n".encode()
            (home / ".profile").write_bytes(profile)
            subprocess.run([self.binary, "set", str(home / ".profile"), "--owner", "ZYLOS", "--name", "legacy",
                            "--content", "export ZYLOS_OLD=1"], check=True, capture_output=True,
                           env=dict(os.environ, XDG_STATE_HOME=str(home / ".state")))
            assert b"ZYLOS_OLD" in (home / ".profile").read_bytes()
            originals[host] = {".bashrc": bashrc, ".profile": profile}
        return originals

    def play(self, *extra, release="v1", playbook="site.yml", inventory="inventory.ini", env=None, expect_rc=0):
        run_env = base_env(self.root)
        run_env["ANSIBLE_COLLECTIONS_PATH"] = str(self.collections)
        run_env.update(env or {})
        cmd = [tool("ansible-playbook"), "-i", inventory, playbook, "-e", f"release={release}",
               "-e", f"templates={self.templates}", "-e", f"demarcate_binary={self.binary}", *extra]
        r = subprocess.run(cmd, cwd=self.root, env=run_env, capture_output=True, text=True)
        assert r.returncode == expect_rc, r.stdout + r.stderr
        recap = {m[0]: dict(ok=int(m[1]), changed=int(m[2]), unreachable=int(m[3]), failed=int(m[4]))
                 for m in RECAP.findall(r.stdout)}
        return r.stdout + r.stderr, recap

    def snapshot(self):
        """Every file's bytes and mtime under every home (the state store excluded)."""
        snap = {}
        for host in HOSTS:
            for p in sorted(self.home(host).iterdir()):
                if p.is_file():
                    snap[(host, p.name)] = (p.read_bytes(), p.stat().st_mtime_ns)
        return snap


SITE = """\
- hosts: fleet
  gather_facts: false
  environment:
    XDG_STATE_HOME: "{{ home }}/.state"
  module_defaults:
    demarcate.core.demarcate:
      binary: "{{ demarcate_binary }}"
  tasks:
    - name: profile regions of the release
      demarcate.core.demarcate:
        path: "{{ home }}/.bashrc"
        template: "{{ templates }}/bashrc-{{ release }}.sh"
        owner: ZYLOS
    - name: the API address
      demarcate.core.demarcate:
        path: "{{ home }}/app.env"
        owner: ZYLOS
        name: api
        content: "API_URL=https://api.example/{{ release }}"
    - name: the legacy region goes
      demarcate.core.demarcate:
        path: "{{ home }}/.profile"
        owner: ZYLOS
        name: legacy
        state: absent
      register: legacy
    - name: the module returns the tool's report
      ansible.builtin.assert:
        that:
          - legacy.files | length == 1
          - legacy.files[0].path == home + '/.profile'
          - legacy.files[0].format == 'shell'
          - legacy.exit_code == 0
"""


def bashrc_regions(release):
    text = f"# BEGIN ZYLOS MANAGED path hash=H\nexport PATH=/opt/zylos/{release}/bin:$PATH\n# END ZYLOS MANAGED path\n"
    text += f"# BEGIN ZYLOS MANAGED alias hash=H\nalias z='zylos --level {release[1]}'\n# END ZYLOS MANAGED alias\n"
    if release == "v2":
        text += "# BEGIN ZYLOS MANAGED completion hash=H\neval \"$(zylos completion bash)\"\n# END ZYLOS MANAGED completion\n"
    return text


def unhash(data):
    return re.sub(rb"hash=[0-9a-f]{12}", b"hash=H", data)


@pytest.fixture()
def fleet(tmp_path, collections):
    return Fleet(tmp_path, collections)


def test_converge_then_idempotent_then_check_and_diff_modes(fleet):
    originals = fleet.seed()

    # First run: every task changes something on every host.
    out, recap = fleet.play()
    assert set(recap) == set(HOSTS), out
    for host in HOSTS:
        assert recap[host]["failed"] == 0 and recap[host]["changed"] == 3, (host, out)
        home = fleet.home(host)
        nl = "\r\n" if host == "db1" else "\n"
        expected = originals[host][".bashrc"] + bashrc_regions("v1").replace("\n", nl).encode()
        assert unhash((home / ".bashrc").read_bytes()) == expected
        assert (home / ".profile").read_bytes() == originals[host][".profile"]
        assert unhash((home / "app.env").read_bytes()) == b"# BEGIN ZYLOS MANAGED api hash=H\nAPI_URL=https://api.example/v1\n# END ZYLOS MANAGED api\n"

    # Second run: changed=0 everywhere, and not a byte (nor an mtime) moves.
    before = fleet.snapshot()
    out, recap = fleet.play()
    for host in HOSTS:
        assert recap[host] == dict(ok=4, changed=0, unreachable=0, failed=0), (host, out)
    assert fleet.snapshot() == before

    # Check mode with the next release: reports the changes, writes nothing.
    out, recap = fleet.play("--check", release="v2")
    for host in HOSTS:
        assert recap[host]["changed"] == 2 and recap[host]["failed"] == 0, (host, out)
    assert fleet.snapshot() == before

    # Check and diff mode: the diffs are shown, still nothing is written.
    out, recap = fleet.play("--check", "--diff", release="v2")
    assert out.count("+API_URL=https://api.example/v2") == len(HOSTS), out
    assert out.count("-API_URL=https://api.example/v1") == len(HOSTS), out
    assert out.count("+export PATH=/opt/zylos/v2/bin:$PATH") == len(HOSTS), out
    assert out.count("+# BEGIN ZYLOS MANAGED completion hash=") == len(HOSTS), out
    assert fleet.snapshot() == before

    # Diff mode for real: the diff is shown and the files move to v2.
    out, recap = fleet.play("--diff", release="v2")
    assert out.count("+API_URL=https://api.example/v2") == len(HOSTS), out
    for host in HOSTS:
        assert recap[host]["changed"] == 2, (host, out)
        nl = "\r\n" if host == "db1" else "\n"
        expected = originals[host][".bashrc"] + bashrc_regions("v2").replace("\n", nl).encode()
        assert unhash((fleet.home(host) / ".bashrc").read_bytes()) == expected
        assert b"API_URL=https://api.example/v2\n" in (fleet.home(host) / "app.env").read_bytes()

    # And v2 again: idempotent.
    out, recap = fleet.play("--diff", release="v2")
    for host in HOSTS:
        assert recap[host]["changed"] == 0, (host, out)
    assert "+API_URL" not in out


def test_failure_carries_the_tools_message_and_spares_the_other_hosts(fleet):
    fleet.seed()
    broken = b"# BEGIN ZYLOS MANAGED path\nexport PATH=/x:$PATH\n"
    (fleet.home("web2") / ".bashrc").write_bytes(broken)
    out, recap = fleet.play(expect_rc=2)
    assert recap["web2"]["failed"] == 1, out
    assert 'BEGIN marker for \\"ZYLOS MANAGED path\\" has no END' in out or 'BEGIN marker for "ZYLOS MANAGED path" has no END' in out, out
    assert (fleet.home("web2") / ".bashrc").read_bytes() == broken
    for host in ("web1", "db1"):
        assert recap[host]["failed"] == 0 and recap[host]["changed"] == 3, (host, out)


def test_hand_edit_is_kept_and_reported_unchanged(fleet):
    fleet.seed()
    fleet.play()
    env_file = fleet.home("web1") / "app.env"
    env_file.write_bytes(env_file.read_bytes().replace(b"api.example/v1", b"api.internal"))
    edited = env_file.read_bytes()
    out, recap = fleet.play()
    assert recap["web1"]["changed"] == 0, out
    assert env_file.read_bytes() == edited
    assert 'region "ZYLOS MANAGED api" was edited by hand; kept as it is' in out, out


def test_bad_options_fail_with_a_clear_message(fleet):
    (fleet.root / "bad.yml").write_text(
        "- hosts: web1\n  gather_facts: false\n  tasks:\n"
        "    - demarcate.core.demarcate: {path: '{{ home }}/x.sh', name: a, binary: '{{ demarcate_binary }}'}\n"
    )
    out, recap = fleet.play(playbook="bad.yml", expect_rc=2)
    assert "state=present with `name` needs `content`" in out, out
    assert not (fleet.home("web1") / "x.sh").exists()


def test_readme_example_playbook(fleet):
    example = (COLLECTION / "examples" / "playbook.yml").read_text()
    for readme in (REPO / "README.md", COLLECTION / "README.md"):
        assert "```yaml\n" + example + "```\n" in readme.read_text(), readme
    shutil.copy(COLLECTION / "examples" / "playbook.yml", fleet.root / "example.yml")
    home = fleet.root / "me"
    home.mkdir()
    (home / ".bashrc").write_bytes(b"alias ll='ls -l'\n")
    (fleet.root / "local.ini").write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    env = dict(HOME=str(home), DEMARCATE_BINARY=fleet.binary, XDG_STATE_HOME=str(home / ".state"))
    out, recap = fleet.play(playbook="example.yml", inventory="local.ini", env=env)
    assert recap["localhost"]["changed"] == 1, out
    data = (home / ".bashrc").read_bytes()
    assert unhash(data) == b"alias ll='ls -l'\n# BEGIN ZYLOS MANAGED hooks hash=H\nexport PATH=\"$HOME/.zylos/bin:$PATH\"\n# END ZYLOS MANAGED hooks\n"
    out, recap = fleet.play(playbook="example.yml", inventory="local.ini", env=env)
    assert recap["localhost"]["changed"] == 0, out
    assert (home / ".bashrc").read_bytes() == data


JSON_SITE = """\
- hosts: fleet
  gather_facts: false
  environment:
    XDG_STATE_HOME: "{{ home }}/.state"
  module_defaults:
    demarcate.core.demarcate:
      binary: "{{ demarcate_binary }}"
  tasks:
    - name: our hooks and permissions in the settings, beside the user's
      demarcate.core.demarcate:
        path: "{{ home }}/settings.json"
        template: "{{ templates }}/settings-{{ release }}.json"
        owner: ZYLOS
        keys: ['/hooks/*=matcher', '/hooks/*/*/hooks=command:path', '/permissions/allow=.']
      register: settings
    - name: the report lists the entries
      ansible.builtin.assert:
        that:
          - settings.files[0].format == 'json'
          - settings.files[0]['entries'] | selectattr('key', 'equalto', '/model') | list | length == 1
"""

UNINSTALL_SITE = """\
- hosts: fleet
  gather_facts: false
  environment:
    XDG_STATE_HOME: "{{ home }}/.state"
  tasks:
    - name: everything ZYLOS wrote goes
      demarcate.core.demarcate:
        owner: ZYLOS
        state: absent
        binary: "{{ demarcate_binary }}"
"""

USER_SETTINGS = (
    '{\n  "theme": "dark",\n  "hooks": {\n    "SessionStart": [\n'
    '      {"matcher": "", "hooks": [{"type": "command", "command": "echo mine"}]}\n    ]\n  }\n}\n'
)


def settings_template(release):
    import json
    return json.dumps({
        "hooks": {
            "SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": f"node ~/z/{release}/start.js"}]}],
            "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "node ~/z/stop.js"}]}],
        },
        "permissions": {"allow": ["Bash(zylos status)"]},
        "model": "opus",
    }, indent=2) + "\n"


def test_json_entries_converge_idempotent_check_mode_then_uninstall(fleet):
    import json
    (fleet.root / "json.yml").write_text(JSON_SITE)
    (fleet.root / "uninstall.yml").write_text(UNINSTALL_SITE)
    for release in ("v1", "v2"):
        (fleet.templates / f"settings-{release}.json").write_text(settings_template(release))
    for host in HOSTS:
        (fleet.home(host) / "settings.json").write_text(USER_SETTINGS)
        # A shell region too, so that uninstall has more than one file to reach.
        subprocess.run([fleet.binary, "set", str(fleet.home(host) / ".bashrc"), "--owner", "ZYLOS", "--name", "h",
                        "--content", "export Z=1"], check=True, capture_output=True,
                       env=dict(os.environ, XDG_STATE_HOME=str(fleet.home(host) / ".state")))

    out, recap = fleet.play(playbook="json.yml")
    for host in HOSTS:
        assert recap[host]["changed"] == 1 and recap[host]["failed"] == 0, (host, out)
        v = json.loads((fleet.home(host) / "settings.json").read_bytes())
        assert v["theme"] == "dark" and v["model"] == "opus" and v["permissions"]["allow"] == ["Bash(zylos status)"]
        assert [h["command"] for h in v["hooks"]["SessionStart"][0]["hooks"]] == ["echo mine", "node ~/z/v1/start.js"]

    before = fleet.snapshot()
    out, recap = fleet.play(playbook="json.yml")
    for host in HOSTS:
        assert recap[host] == dict(ok=2, changed=0, unreachable=0, failed=0), (host, out)
    assert fleet.snapshot() == before

    out, recap = fleet.play("--check", "--diff", playbook="json.yml", release="v2")
    for host in HOSTS:
        assert recap[host]["changed"] == 1, (host, out)
    assert out.count("node ~/z/v2/start.js") >= len(HOSTS), out
    assert fleet.snapshot() == before

    # Uninstall: check mode writes nothing, then every file goes back to the user's bytes.
    out, recap = fleet.play("--check", playbook="uninstall.yml")
    for host in HOSTS:
        assert recap[host]["changed"] == 1 and recap[host]["failed"] == 0, (host, out)
    assert fleet.snapshot() == before
    out, recap = fleet.play(playbook="uninstall.yml")
    for host in HOSTS:
        assert recap[host]["changed"] == 1, (host, out)
        assert (fleet.home(host) / "settings.json").read_text() == USER_SETTINGS
        json.loads((fleet.home(host) / "settings.json").read_bytes())
        assert (fleet.home(host) / ".bashrc").read_bytes() == b""
    out, recap = fleet.play(playbook="uninstall.yml")
    for host in HOSTS:
        assert recap[host]["changed"] == 0, (host, out)


def test_remove_by_owner_adopt_and_force(fleet):
    import json
    home = fleet.home("web1")
    (home / "settings.json").write_text(USER_SETTINGS)
    (fleet.templates / "settings-v1.json").write_text(settings_template("v1"))
    line = 'export PATH="$HOME/.zylos/bin:$PATH"'
    (home / ".bashrc").write_text(line + "\nalias ll=ls\n")
    (home / "c.jsonc").write_text('{\n  // mine\n  "a": 1\n}\n')
    (fleet.root / "more.yml").write_text("""\
- hosts: web1
  gather_facts: false
  environment:
    XDG_STATE_HOME: "{{ home }}/.state"
  module_defaults:
    demarcate.core.demarcate:
      binary: "{{ demarcate_binary }}"
  tasks:
    - demarcate.core.demarcate:
        path: "{{ home }}/settings.json"
        template: "{{ templates }}/settings-v1.json"
        owner: ZYLOS
        keys: ['/hooks/*=matcher', '/hooks/*/*/hooks=command:path', '/permissions/allow=.']
    - name: a seed is written when absent
      demarcate.core.demarcate:
        path: "{{ home }}/seeded.json"
        template: "{{ templates }}/settings-v1.json"
        owner: ZYLOS
        seeds: [/model]
    - name: a line an older installer wrote becomes the region
      demarcate.core.demarcate:
        path: "{{ home }}/.bashrc"
        owner: ZYLOS
        name: hooks
        content: 'export PATH="$HOME/.zylos/bin:$PATH"'
        adopt: ['export PATH="$HOME/.zylos/bin:$PATH"']
      register: adopted
    - ansible.builtin.assert:
        that: adopted.files[0].regions[0].action == ('adopted' if adopted.changed else 'unchanged')
    - name: a duplicate key, written on purpose
      demarcate.core.demarcate:
        path: "{{ home }}/c.jsonc"
        owner: ZYLOS
        name: a
        content: '"a": 2,'
        force: true
""")
    out, recap = fleet.play(playbook="more.yml", env=dict(DEMARCATE_BINARY=fleet.binary))
    assert recap["web1"]["failed"] == 0 and recap["web1"]["changed"] == 4, out
    assert json.loads((home / "seeded.json").read_bytes())["model"] == "opus"
    assert json.loads((home / "settings.json").read_bytes())["permissions"]["allow"] == ["Bash(zylos status)"]
    assert unhash((home / ".bashrc").read_bytes()) == (
        b"# BEGIN ZYLOS MANAGED hooks hash=H\n" + line.encode() + b"\n# END ZYLOS MANAGED hooks\nalias ll=ls\n")
    assert b'"a": 2,\n  // END ZYLOS MANAGED a' in (home / "c.jsonc").read_bytes()
    out, recap = fleet.play(playbook="more.yml")
    assert recap["web1"]["changed"] == 0, out

    # state=absent with path and owner, no name: the owner's entries of the JSON file go.
    (fleet.root / "remove.yml").write_text(
        "- hosts: web1\n  gather_facts: false\n  environment:\n    XDG_STATE_HOME: '{{ home }}/.state'\n  tasks:\n"
        "    - demarcate.core.demarcate: {path: '{{ home }}/settings.json', owner: ZYLOS, state: absent,"
        " binary: '{{ demarcate_binary }}'}\n"
    )
    installed = (home / "settings.json").read_bytes()
    out, recap = fleet.play("--check", playbook="remove.yml")
    assert recap["web1"]["changed"] == 1, out
    assert (home / "settings.json").read_bytes() == installed
    out, recap = fleet.play(playbook="remove.yml")
    assert recap["web1"]["changed"] == 1, out
    assert (home / "settings.json").read_text() == USER_SETTINGS
    json.loads((home / "settings.json").read_bytes())
    out, recap = fleet.play(playbook="remove.yml")
    assert recap["web1"]["changed"] == 0, out


def test_an_option_the_command_does_not_take_fails_before_anything_runs(fleet):
    rc = fleet.home("web1") / ".bashrc"
    rc.write_bytes(b"x\n")
    (fleet.root / "misplaced.yml").write_text(
        "- hosts: web1\n  gather_facts: false\n  tasks:\n"
        "    - demarcate.core.demarcate: {path: '{{ home }}/.bashrc', owner: Z, name: a, state: absent, at: start,"
        " binary: '{{ demarcate_binary }}'}\n"
    )
    out, recap = fleet.play(playbook="misplaced.yml", expect_rc=2)
    assert "`at` does not apply to `demarcate remove`" in out, out
    assert rc.read_bytes() == b"x\n"
