#!/usr/bin/env python3
"""demarcate benchmarks: each row compares demarcate with a baseline in the same run.

Usage: python3 tests/bench/bench.py [--bin target/release/demarcate] [--ansible] [--quick]
                                    [--only set,latency,list,check,crafted,entries,apply]

Rows (SPEC "Performance targets" in brackets):
  set on a 5 KB profile, whole process   vs  cat FILE                     [within 2.5x]
  set on a 5 KB profile                  vs  ansible blockinfile (opt.)   [400x faster]
  list, check and set on a 1 MB realistic file of each format, whole process
                                                                         [< 100 ms; set < 300 ms]
  list on a 100 MB shell / env file      vs  cat FILE, grep -c MANAGED    [>= 1 GB/s; 3x grep]
  list on a 20 MB TOML / JSONC file      vs  cat FILE, grep -c MANAGED    [>= 500 MB/s]
  list on a 100 MB YAML / PowerShell file vs cat FILE, grep -c MANAGED    [>= 300 MB/s]
  set --check (plan and validation), same files                          [>= 300 MB/s]
  check on crafted 10 MB files (deep TOML and JSONC nesting, interleaved BEGIN/END
  lines, many regions, one key repeated or many keys in one JSONC object
  or YAML mapping)                                                       [a few seconds, 4x]
  sync of the 19-release settings history on a 50 KB strict JSON file    [within 3x of cat]
  apply over 10,000 small files, first and second run                    [< 2 s; < 0.3 s]
Peak memory (GNU time's maximum resident size) is reported against the file size [1.2x].
Times are medians of whole-process wall times; "cpu" is user + system time of the same runs,
steadier than wall time on a busy machine. The baselines run in the same invocation.
Nothing here is a test: it prints numbers and ratios, and never fails on a slow machine.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timed(argv, runs, stdin=None, cwd=None, ok=(0, 1)):
    """Median wall time of `runs` runs of argv (seconds), and the peak RSS of one run."""
    return timed_cpu(argv, runs, stdin, cwd, ok)[:2]


class TimedOut(Exception):
    pass


def timed_cpu(argv, runs, stdin=None, cwd=None, ok=(0, 1), limit=None):
    """As timed, plus the median CPU time (user + system) of the runs. With `limit`
    (seconds), a run still going after it is killed and TimedOut raised."""
    times, cpus = [], []
    for _ in range(runs):
        # Output goes to a file, not /dev/null: GNU grep stops at the first match when its
        # output is /dev/null, which would make the baseline meaningless.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd, stdin=stdin)
            status, usage = wait(p, t0, limit)
            times.append(time.perf_counter() - t0)
            cpus.append(usage.ru_utime + usage.ru_stime)
            code = os.waitstatus_to_exitcode(status)
            p.returncode = code
            if code not in ok:
                err.seek(0)
                raise RuntimeError(f"exit {code}: {err.read().decode(errors='replace')[:200]}")
    return statistics.median(times), peak_rss(argv, cwd), statistics.median(cpus)


def wait(p, t0, limit):
    if limit is None:
        _, status, usage = os.wait4(p.pid, 0)
        return status, usage
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            return status, usage
        if time.perf_counter() - t0 > limit:
            p.kill()
            os.wait4(p.pid, 0)
            raise TimedOut()
        time.sleep(0.01)


def peak_rss(argv, cwd=None):
    """Peak RSS of one run, in bytes, measured by GNU time: a direct child of this (large)
    Python process would inherit its high-water mark across exec. 0 when GNU time is absent."""
    gnu_time = shutil.which("time") and os.path.exists("/usr/bin/time")
    if not gnu_time:
        return 0
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], cwd=cwd,
                       stdout=subprocess.DEVNULL if argv[0] != "grep" else subprocess.PIPE,
                       stderr=subprocess.PIPE)
    last = p.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["0"]
    try:
        return int(last[0]) * 1024
    except ValueError:
        return 0


def profile_5k():
    lines = ["# ~/.bashrc", "case $- in *i*) ;; *) return;; esac"]
    i = 0
    while sum(len(l) + 1 for l in lines) < 5000:
        lines += [f'export VAR_{i}="value $HOME/{i}"', f"alias a{i}='ls -l {i}'",
                  f'if [ -d "$HOME/d{i}" ]; then PATH="$HOME/d{i}:$PATH"; fi']
        i += 1
    return ("\n".join(lines) + "\n").encode()


def shell_file(size):
    block = (
        b'# a comment line with some text\n'
        b'export PATH="$HOME/bin:$PATH"\n'
        b"alias ll='ls -alF' # trailing comment\n"
        b'if [ -f "$HOME/.x" ]; then . "$HOME/.x"; fi\n'
        b'msg="multi\nline # not a comment\nstring"\n'
        b"cat <<'EOF'\n# BEGIN NOT MANAGED x\nEOF\n"
        b'v=$(echo "${HOME#/}" | tr a b)\n'
    )
    region = b"# BEGIN ZYLOS MANAGED r%d\nexport Z%d=1\n# END ZYLOS MANAGED r%d\n"
    return fill(block, region, size)


def env_file(size):
    block = (
        b"# settings\n"
        b"export FOO=bar\n"
        b'DB_URL="postgres://u:p@localhost/db"\n'
        b"INLINE=value # inline comment\n"
        b"SINGLE='single # not a comment'\n"
        b'CERT="-----BEGIN-----\nabc\n-----END-----"\n'
    )
    region = b"# BEGIN ZYLOS MANAGED r%d\nZ%d=1\n# END ZYLOS MANAGED r%d\n"
    return fill(block, region, size, keyed=True)


def toml_file(size):
    out = bytearray(b'title = "bench"\n')
    i = 0
    while len(out) < size:
        out += (b'[table_%d]\nname = "n # not a comment"\nport = %d\nlist = [1, 2, 3]\n'
                b"desc = '''\nmulti # line\n'''\n# a comment\n" % (i, i))
        i += 1
    return bytes(out)


def jsonc_file(size):
    out = bytearray(b"{\n  // settings\n")
    i = 0
    while len(out) < size:
        out += (b'  "key_%d": {"name": "n // not a comment", "port": %d, "list": [1, 2, 3]},'
                b" // trailing\n" % (i, i))
        i += 1
    out += b'  "last": true\n}\n'
    return bytes(out)


def deep_toml(size):
    """Inline tables nested as deep as the size allows: `a = {b = {b = ... 1}}`."""
    n = (size - 8) // 7
    return b"a = " + b"{b = " * n + b"1" + b"}" * n + b"\n"


def toml_tables(size):
    """A table header on every line: `[t0]`, `[t1]`, ... (a table each)."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += b"[t%d]\n" % i
        i += 1
    return bytes(out)


def toml_inline_tables(size):
    """A one-line inline table on every line: `x0={a=1}`, ... (a key and a table each)."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += b"x%d={a=1}\n" % i
        i += 1
    return bytes(out)


def deep_jsonc(size):
    """Objects nested as deep as the size allows: `{"a": {"b": ... 1}}`."""
    n = (size - 12) // 7
    return b'{"a": ' + b'{"b": ' * n + b"1" + b"}" * n + b"}\n"


def interleaved(size):
    """BEGIN/END lines where every END closes the region before the innermost one."""
    out = bytearray(b"# BEGIN X MANAGED r0\n")
    i = 1
    while len(out) < size:
        out += b"# BEGIN X MANAGED r%d\n# END X MANAGED r%d\n" % (i, i - 1)
        i += 1
    return bytes(out)


def begins_then_ends(size):
    """Half the file BEGIN lines, then their ENDs in the order opened: every END closes the
    BEGIN at the bottom of the stack (this was quadratic)."""
    n = size // 42
    out = bytearray()
    for i in range(n):
        out += b"# BEGIN X MANAGED a%d\n" % i
    for i in range(n):
        out += b"# END X MANAGED a%d\n" % i
    return bytes(out)


def many_regions(size):
    """As many small well-formed regions as fit."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += b"# BEGIN X MANAGED r%d\nexport A%d=1\n# END X MANAGED r%d\n" % (i, i, i)
        i += 1
    return bytes(out)


def one_key(size):
    """`a=1` on every line: a duplicate key each (problems are capped per kind)."""
    return b"a=1\n" * (size // 4)


def near_misses(size):
    """A comment that is almost a marker on every line."""
    line = b"# BEGN X MANAGED r\n"
    return line * (size // len(line))


def comments_only(size):
    """`#` alone on every line: the shortest comment there is."""
    return b"#\n" * (size // 2)


def deep_arrays(size):
    """Arrays nested as deep as the size allows: `[[[...]]]`."""
    n = (size - 1) // 2
    return b"[" * n + b"]" * n + b"\n"


def nested_subst(size):
    """Command substitutions opened and never closed: `$($($(...`."""
    return b"$(" * (size // 2)


def pending_heredocs(size):
    """One line of `<<E` operators whose bodies never come."""
    return b": " + b"<<E " * (size // 4) + b"\n"


def nested_braces(size):
    """Script blocks opened and never closed: `{{{...`."""
    return b"{" * size


def nested_parens(size):
    """fish command substitutions opened and never closed: `(((...`."""
    return b"(" * size


def ini_sections(size):
    """A distinct section header on every line."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += b"[s%d]\n" % i
        i += 1
    return bytes(out)


def env_multiline(size):
    """A quoted value spanning two lines, on every other line: an inner line each."""
    return b'A="\n"\n' * (size // 6)


def jsonc_one_key(size):
    """One object assigning one key over and over, on one line: `{"a":1,"a":1,...}`."""
    n = max((size - 8) // 6, 1)
    return b"{" + b'"a":1,' * n + b'"a":1}\n'


def jsonc_keys(size):
    """One object of distinct keys, on one line: `{"k0":1,"k1":1,...}`."""
    out = bytearray(b"{")
    i = 0
    while len(out) < size:
        out += b'"k%d":1,' % i
        i += 1
    return bytes(out) + b'"a":1}\n'


def yaml_one_key(size):
    """A mapping assigning one key on every line."""
    return b"a: 1\n" * (size // 5)


def jsonc_pairs(size):
    """An array of small objects, each assigning one key twice, on one line."""
    n = max((size - 4) // 14, 1)
    return b"[" + b'{"a":1,"a":2},' * n + b"{}]\n"


def jsonc_nested_pairs(size):
    """Objects nested as deep as the size allows, each assigning one key twice."""
    n = max((size - 2) // 18, 1)
    return b'{"a":1,"a":2,"x":' * n + b"0" + b"}" * n + b"\n"


def yaml_pairs(size):
    """A sequence of small mappings, each assigning one key twice."""
    return b"- a: 1\n  a: 2\n" * (size // 14)


def yaml_keys(size):
    """A mapping of distinct keys, one per line."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += b"k%d: 1\n" % i
        i += 1
    return bytes(out)


def yaml_file(size):
    out = bytearray()
    i = 0
    while len(out) < size:
        out += (b"s%d:\n  web:\n    image: nginx:1.27\n    command: |\n      # not a comment\n"
                b"      nginx -g 'daemon off;'\n    ports: [\"8080:80\", \"443:443\"]\n"
                b"    environment:\n      - KEY=value\n      - \"QUOTED=it's\"\n"
                b"    labels: {a: 1, b: 'two'}\n  # a comment\n" % i)
        if i % 1000 == 0:
            out += b"# BEGIN Z MANAGED r%d\nz%d: 1\n# END Z MANAGED r%d\n" % (i, i, i)
        i += 1
    return bytes(out)


def powershell_file(size):
    block = (b"# Profile line\nSet-Alias ll Get-ChildItem\n$env:PATH = \"$HOME/bin;\" + $env:PATH\n"
             b"function Get-Thing { param($a) if ($a -eq 'x') { Write-Output \"a $($a) b\" } }\n"
             b"$h = @{ Name = 'value'; Count = 3 }\n<# a block\ncomment #>\n"
             b"$s = @'\nhere string # not a comment\n'@\n")
    region = b"# BEGIN Z MANAGED r%d\n$env:Z%d = 1\n# END Z MANAGED r%d\n"
    return fill(block, region, size)


def fill(block, region, size, keyed=False):
    out = bytearray()
    i = 0
    while len(out) < size:
        if keyed:
            out += block.replace(b"FOO", b"FOO%d" % i).replace(b"DB_URL", b"DB%d" % i) \
                .replace(b"INLINE", b"IN%d" % i).replace(b"SINGLE", b"S%d" % i) \
                .replace(b"CERT", b"C%d" % i)
        else:
            out += block
        if i % 1000 == 0:
            out += region % (i, i, i)
        i += 1
    return bytes(out)


def apply_home(tmp, n=10_000, dirs=100, k=0):
    """A fresh HOME with `dirs` folders of small shell files and a manifest of `n` [[block]]s
    (one per file) under it; returns (manifest, home). Each run gets its own HOME, all
    deleted at the end: deleting 40,000 inodes right before a run slows ext4's inode
    allocation during it (it skips recently deleted inodes), which is not the tool's cost."""
    home = os.path.join(tmp, f"apply-home-{k}")
    lines = ['owner = "ZYLOS"\n']
    for i in range(n):
        d = os.path.join(home, f"d{i % dirs}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.sh"), "w") as f:
            f.write(f"# user file {i}\nalias a{i}='ls -l'\n")
        lines.append(f'[[block]]\npath = "~/d{i % dirs}/f{i}.sh"\nname = "hook"\n'
                     f'content = "export ZYLOS_{i}=1"\n')
    manifest = os.path.join(home, "manifest.toml")
    with open(manifest, "w") as f:
        f.write("\n".join(lines))
    return manifest, home


def apply_rows(bin_, tmp, runs):
    """apply over 10,000 files: the first run (writes every file) and the second (no change)."""
    first, second = [], []
    for k in range(runs):
        manifest, home = apply_home(tmp, k=k)
        env = dict(os.environ, HOME=home)
        env.pop("XDG_STATE_HOME", None)
        for out in (first, second):
            t0 = time.perf_counter()
            p = subprocess.run([bin_, "apply", manifest, "-q"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            out.append(time.perf_counter() - t0)
            if p.returncode != 0:
                sys.exit(f"apply failed ({p.returncode}): {p.stderr.decode()[:300]}")
    cores = os.cpu_count()
    return [(f"apply, 10,000 files, first run ({cores} cores)",
             f"{statistics.median(first):.2f} s", "", "", "< 2 s on 2 cores"),
            (f"apply, 10,000 files, second run ({cores} cores)",
             f"{statistics.median(second):.2f} s", "", "", "< 0.3 s")]


def mbps(size, secs):
    return size / secs / 1e6


def row(name, demarcate, baseline="", ratio="", target=""):
    return (name, demarcate, baseline, ratio, target)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/demarcate"))
    ap.add_argument("--ansible", action="store_true",
                    help="also compare with ansible blockinfile (installs ansible-core into target/)")
    ap.add_argument("--quick", action="store_true", help="smaller files, fewer runs")
    ap.add_argument("--only", default="set,latency,list,check,crafted,entries,apply",
                    help="comma-separated groups of rows to run")
    a = ap.parse_args()
    only = set(a.only.split(","))
    bin_ = os.path.abspath(a.bin)
    big = 10_000_000 if a.quick else 100_000_000
    mid = 2_000_000 if a.quick else 20_000_000
    crafted = 1_000_000 if a.quick else 10_000_000
    runs = 3 if a.quick else 5
    tmp = tempfile.mkdtemp(prefix="demarcate-bench-")
    rows = []
    try:
        if "set" in only:
            rows += set_rows(bin_, tmp, a.ansible)
        if "latency" in only:
            rows += latency_rows(bin_, tmp, 5 if a.quick else 11)
        if only & {"list", "check"}:
            for fmt, gen, name, size in (("shell", shell_file, "big.sh", big),
                                         ("env", env_file, "big.env", big),
                                         ("toml", toml_file, "big.toml", mid),
                                         ("jsonc", jsonc_file, "big.jsonc", mid),
                                         ("yaml", yaml_file, "big.yaml", big),
                                         ("powershell", powershell_file, "big.ps1", big)):
                rows += big_file_rows(bin_, tmp, fmt, gen, name, size, runs, only)
        if "crafted" in only:
            for what, fmt, gen, name in (("deep TOML nesting", "toml", deep_toml, "deep.toml"),
                                         ("TOML table headers, one per line", "toml", toml_tables,
                                          "tables.toml"),
                                         ("TOML inline tables, one per line", "toml",
                                          toml_inline_tables, "inline.toml"),
                                         ("deep JSONC nesting", "jsonc", deep_jsonc, "deep.jsonc"),
                                         ("interleaved BEGIN/END", "shell", interleaved, "il.sh"),
                                         ("BEGINs, then their ENDs in the same order", "shell",
                                          begins_then_ends, "fifo.sh"),
                                         ("many regions", "shell", many_regions, "regions.sh"),
                                         ("one key assigned on every line", "env", one_key, "keys.env"),
                                         ("near-miss markers", "shell", near_misses, "near.sh"),
                                         ("nothing but comments", "shell", comments_only, "c.sh"),
                                         ("nothing but comments", "fish", comments_only, "c.fish"),
                                         ("JSONC arrays nested deep", "jsonc", deep_arrays, "arr.jsonc"),
                                         ("YAML keys, one per line", "yaml", yaml_keys, "k.yaml"),
                                         ("`$(` nested deep", "shell", nested_subst, "n.sh"),
                                         ("heredocs waiting on one line", "shell",
                                          pending_heredocs, "hd.sh"),
                                         ("`{` nested deep", "powershell", nested_braces, "n.ps1"),
                                         ("`(` nested deep", "fish", nested_parens, "n.fish"),
                                         ("one section per line", "ini", ini_sections, "s.ini"),
                                         ("multi-line quoted values", "env", env_multiline, "m.env"),
                                         ("YAML one key on every line", "yaml", yaml_one_key,
                                          "onekey.yaml"),
                                         ("JSONC object of distinct keys", "jsonc", jsonc_keys,
                                          "keys.jsonc"),
                                         ("JSONC one key repeated on one line", "jsonc",
                                          jsonc_one_key, "onekey.jsonc"),
                                         ("JSONC small objects, each a key twice", "jsonc",
                                          jsonc_pairs, "pairs.jsonc"),
                                         ("YAML small mappings, each a key twice", "yaml",
                                          yaml_pairs, "pairs.yaml"),
                                         ("JSONC objects nested, each a key twice", "jsonc",
                                          jsonc_nested_pairs, "npairs.jsonc")):
                rows += crafted_rows(bin_, tmp, what, fmt, gen, name, crafted)
        if "entries" in only:
            rows += entries_rows(bin_, tmp, runs)
        if "apply" in only:
            rows += apply_rows(bin_, tmp, 1 if a.quick else 3)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {machine()}")
    w = [max(len(r[i]) for r in rows) for i in range(5)]
    head = ("row", "demarcate", "baseline", "ratio", "target")
    w = [max(w[i], len(head[i])) for i in range(5)]
    print(" | ".join(h.ljust(w[i]) for i, h in enumerate(head)))
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(" | ".join(c.ljust(w[i]) for i, c in enumerate(r)))


def entries_rows(bin_, tmp, runs):
    """Strict JSON entries: sync of the real 19-release settings history on a 50 KB
    settings.json, one release per run (median per run) vs cat of the same file."""
    fixtures = os.path.join(ROOT, "tests", "fixtures", "zylos-settings")
    releases = sorted(f for f in os.listdir(fixtures) if f.endswith(".json"))
    home = os.path.join(tmp, "entries-home")
    os.makedirs(home, exist_ok=True)
    target = os.path.join(home, "settings.json")
    # The user's own settings: 50 KB of permissions and keys beside the runtime's hooks.
    allow = ",\n".join(f'      "Bash(tool-{i} --flag)"' for i in range(1500))
    with open(target, "w") as f:
        f.write('{\n  "permissions": {\n    "allow": [\n' + allow + '\n    ]\n  },\n'
                '  "theme": "dark"\n}\n')
    env = dict(os.environ, HOME=home, XDG_STATE_HOME=os.path.join(home, ".state"))
    times = []
    for name in releases:
        tpl = os.path.join(tmp, "release.json")
        with open(os.path.join(fixtures, name)) as src, open(tpl, "w") as dst:
            dst.write(src.read().replace("@ZYLOS_DIR@", os.path.join(home, "zylos")))
        argv = [bin_, "sync", target, "--template", tpl, "--owner", "ZYLOS", "-q",
                "--key", "/hooks/*=matcher", "--key", "/hooks/*/*/hooks=command:path"]
        t0 = time.perf_counter()
        p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            return [("entries sync, 50 KB settings", "failed", p.stderr.decode()[:60], "", "")]
    size = os.path.getsize(target)
    t_sync = statistics.median(times)
    t_cat, _ = timed(["cat", target], runs)
    return [(f"entries sync, {size/1e3:.0f} KB settings, 19 releases (per run)",
             f"{t_sync*1000:.2f} ms", f"cat: {t_cat*1000:.2f} ms", f"{t_sync/t_cat:.2f}x cat",
             "within 3x of cat")]


def machine():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def set_rows(bin_, tmp, ansible):
    """set on a 5 KB profile vs cat (and ansible blockinfile)."""
    prof = os.path.join(tmp, "profile.sh")
    with open(prof, "wb") as f:
        f.write(profile_5k())
    bodies = []
    for k in "ab":
        p = os.path.join(tmp, f"body_{k}")
        with open(p, "w") as f:
            f.write(f"export ZYLOS_{k.upper()}=1\n")
        bodies.append(p)
    set_times = []
    for i in range(30):
        t, _ = timed([bin_, "set", prof, "--owner", "Z", "--name", "n", "--content-file",
                      bodies[i % 2], "-q"], 1)
        set_times.append(t)
    t_set = statistics.median(set_times)
    t_cat, _ = timed(["cat", prof], 30)
    out = [row("set, 5 KB profile (writes)", f"{t_set*1000:.2f} ms", f"cat: {t_cat*1000:.2f} ms",
               f"{t_set/t_cat:.2f}x cat", "<= 2.5x cat")]
    if ansible:
        ans = ansible_time(tmp, prof)
        if ans:
            out.append(row("set vs ansible blockinfile", f"{t_set*1000:.2f} ms",
                           f"ansible: {ans*1000:.0f} ms", f"{ans/t_set:.0f}x faster",
                           ">= 400x faster"))
    return out


def latency_rows(bin_, tmp, runs):
    """What a user feels: list, check and set, whole process, on a 1 MB realistic file of
    each format (config files are rarely a tenth of that), with peak memory."""
    out = []
    for fmt, gen, name in (("shell", shell_file, "m.sh"), ("env", env_file, "m.env"),
                           ("toml", toml_file, "m.toml"), ("jsonc", jsonc_file, "m.jsonc"),
                           ("yaml", yaml_file, "m.yaml"), ("powershell", powershell_file, "m.ps1")):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(gen(1_000_000))
        n = os.path.getsize(path)
        for cmd in ("list", "check"):
            t, peak = timed([bin_, cmd, path, "--format", fmt, "-q"], runs)
            # At 1 MB the process's own few megabytes weigh as much as the file: the peak
            # is shown in MB (the crafted rows hold the ratio to the file).
            out.append(row(f"{cmd}, 1 MB {fmt}", f"{t*1000:.1f} ms", "", f"peak {peak/1e6:.1f} MB",
                           "< 100 ms"))
        extra = ["--at", "/"] if fmt == "jsonc" else []
        set_argv = [bin_, "set", path, "--format", fmt, "--owner", "B", "--name", "x",
                    "--content", body_for(fmt), *extra]
        rm_argv = [bin_, "remove", path, "--format", fmt, "--owner", "B", "--name", "x"]
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(set_argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True, env=dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "st")))
            times.append(time.perf_counter() - t0)
            subprocess.run(rm_argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True, env=dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "st")))
        out.append(row(f"set (inserted), 1 MB {fmt}", f"{statistics.median(times)*1000:.1f} ms",
                       "", "", "< 300 ms"))
        os.unlink(path)
    return out


def big_file_rows(bin_, tmp, fmt, gen, name, size, runs, only):
    """list (and set --check) on one big generated file, with cat and grep -c baselines."""
    path = os.path.join(tmp, name)
    data = gen(size)
    with open(path, "wb") as f:
        f.write(data)
    del data
    n = os.path.getsize(path)
    label = f"{n/1e6:.0f} MB {fmt}"
    out = []
    t_cat, _, c_cat = timed_cpu(["cat", path], runs)
    t_grep, _, c_grep = timed_cpu(["grep", "-c", "MANAGED", path], runs)
    line = "shell", "env"
    if "list" in only:
        try:
            t, peak, c = timed_cpu([bin_, "list", path, "--format", fmt], runs)
        except RuntimeError as e:
            out.append(row(f"list, {label}", "failed", str(e)[:60]))
        else:
            out.append(row(f"list, {label}", f"{mbps(n, t):.0f} MB/s (cpu {mbps(n, c):.0f})",
                           f"cat {mbps(n, t_cat):.0f}, grep -c {mbps(n, t_grep):.0f} MB/s",
                           f"{t/t_cat:.1f}x cat, {t/t_grep:.1f}x grep (cpu {c/max(c_grep, 1e-3):.1f}x)",
                           ">= 1 GB/s; 3x grep" if fmt in line
                           else ">= 500 MB/s" if fmt in ("toml", "jsonc") else ">= 300 MB/s"))
            out.append(row(f"list, {label}, peak memory", f"{peak/n:.2f}x file", "", "",
                           "<= 1.2x"))
    if "check" in only:
        extra = ["--at", "/"] if fmt == "jsonc" else []
        try:
            t, peak, c = timed_cpu([bin_, "set", path, "--format", fmt, "--owner", "B",
                                    "--name", "x", "--content", body_for(fmt), "--check",
                                    *extra], runs)
        except RuntimeError as e:
            out.append(row(f"set --check, {label}", "failed", str(e)[:60]))
        else:
            out.append(row(f"set --check, {label}", f"{mbps(n, t):.0f} MB/s (cpu {mbps(n, c):.0f})",
                           f"cat {mbps(n, t_cat):.0f} MB/s", f"{t/t_cat:.1f}x cat; "
                           f"peak {peak/n:.2f}x file", ">= 300 MB/s"))
    os.unlink(path)
    return out


def crafted_rows(bin_, tmp, what, fmt, gen, name, size, limit=60):
    """list and check on a crafted file: seconds and peak memory against the file size; a
    run longer than `limit` seconds is stopped and reported as such."""
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(gen(size))
    n = os.path.getsize(path)
    t_cat, _ = timed(["cat", path], 3)
    out = []
    for cmd in ("list", "check"):
        label = f"{cmd}, {n/1e6:.0f} MB crafted: {what}"
        try:
            # check exits 1 when it reports problems, as it does for most of these files, and
            # 2 when the format's own reader rejects the file (TOML nested beyond its limit).
            t, peak, c = timed_cpu([bin_, cmd, path, "--format", fmt, "-q"], 1,
                                   ok=(0, 1, 2), limit=limit)
        except TimedOut:
            out.append(row(label, f"> {limit} s (stopped)", f"cat: {t_cat*1000:.0f} ms", "",
                           "a few seconds; <= 4x"))
            continue
        except RuntimeError as e:
            out.append(row(label, "failed", str(e)[:60]))
            continue
        out.append(row(label, f"{t:.2f} s (cpu {c:.2f} s)", f"cat: {t_cat*1000:.0f} ms",
                       f"peak {peak/n:.2f}x file", "a few seconds; <= 4x"))
    os.unlink(path)
    return out


def body_for(fmt):
    return {"shell": "export B=1", "env": "B=1", "toml": "[bench_x]\nk = 1",
            "jsonc": '"bench_x": 1', "yaml": "bench_x: 1", "powershell": "$env:B = 1"}[fmt]


def ansible_time(tmp, prof):
    venv = os.path.join(ROOT, "target", "bench-ansible")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, "bin", "ansible")):
        print("installing ansible-core into target/bench-ansible ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", venv], check=False)
        subprocess.run([py, "-m", "pip", "install", "-q", "ansible-core"], check=False)
    ansible = os.path.join(venv, "bin", "ansible")
    if not os.path.exists(ansible):
        print("ansible unavailable; row skipped", file=sys.stderr)
        return None
    args = f"path={prof} block='export ANS=1' marker='# {{mark}} ANSIBLE MANAGED BLOCK'"
    t, _ = timed([ansible, "localhost", "-m", "blockinfile", "-a", args], 3)
    return t


if __name__ == "__main__":
    main()
