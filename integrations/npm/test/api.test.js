"use strict";
// The API against the real binary ($DEMARCATE_BINARY, else the repository's target/release or
// target/debug build), on real files in temporary directories.

const { test, before } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const PKG = path.join(__dirname, "..");
const REPO = path.join(PKG, "..", "..");

function builtBinary() {
  if (process.env.DEMARCATE_BINARY) return path.resolve(process.env.DEMARCATE_BINARY);
  for (const profile of ["release", "debug"]) {
    const p = path.join(REPO, "target", profile, "demarcate");
    if (fs.existsSync(p)) return p;
  }
  throw new Error("no built binary: run `cargo build --release` or set DEMARCATE_BINARY");
}

const BIN = builtBinary();
// The state store goes to a temporary directory, never the user's.
const STATE = fs.mkdtempSync(path.join(os.tmpdir(), "demarcate-node-state-"));
process.env.DEMARCATE_BINARY = BIN;
process.env.XDG_STATE_HOME = STATE;

const demarcate = require("..");

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), "demarcate-node-"));
}

function write(file, text) {
  fs.writeFileSync(file, text);
  return file;
}

const read = (file) => fs.readFileSync(file, "utf8");

before(() => {
  assert.ok(fs.existsSync(BIN), `binary ${BIN} exists`);
});

test("set inserts a region, and a second run changes nothing", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "alias ll='ls -l'\n");
  const first = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "export A=1" });
  assert.equal(first.exitCode, 0);
  assert.equal(first.files.length, 1);
  const f = first.files[0];
  assert.equal(f.path, rc);
  assert.equal(f.format, "shell");
  assert.equal(f.changed, true);
  assert.deepEqual(
    f.regions.map((r) => [r.owner, r.name, r.begin_line, r.end_line, r.state, r.action]),
    [["ZYLOS", "hooks", 2, 4, "pristine", "inserted"]],
  );
  const bytes = read(rc);
  assert.match(
    bytes,
    /^alias ll='ls -l'\n# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]{12}\nexport A=1\n# END ZYLOS MANAGED hooks\n$/,
  );
  const mtime = fs.statSync(rc).mtimeMs;

  const second = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "export A=1" });
  assert.equal(second.files[0].changed, false);
  assert.equal(second.files[0].regions[0].action, "unchanged");
  assert.equal(read(rc), bytes);
  assert.equal(fs.statSync(rc).mtimeMs, mtime, "an unchanged file is not rewritten");
});

test("content goes through standard input untouched: quotes, dollars, a leading dash", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "");
  const content = "--not-a-flag() { echo \"$HOME\" '$PATH' `date`; }\n";
  await demarcate.set(rc, { owner: "ZYLOS", name: "odd", content });
  assert.ok(read(rc).includes("\n" + content + "# END ZYLOS MANAGED odd\n"), read(rc));
});

test("check: a change due is exitCode 1 and writes nothing; not an error", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "echo hi\n");
  const due = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "x=1", check: true });
  assert.equal(due.exitCode, 1);
  assert.equal(due.files[0].changed, true);
  assert.equal(read(rc), "echo hi\n");
  await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "x=1" });
  const none = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "x=1", check: true });
  assert.equal(none.exitCode, 0);
  assert.equal(none.files[0].changed, false);
});

test("dryRun: the diff is in the file's report and nothing is written", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "echo hi\n");
  const r = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "export B=2", dryRun: true });
  assert.equal(r.exitCode, 0);
  assert.equal(r.files[0].changed, true);
  assert.equal(typeof r.files[0].diff, "string");
  assert.match(r.files[0].diff, /^\+export B=2$/m);
  assert.match(r.files[0].diff, /^\+# END ZYLOS MANAGED hooks$/m);
  assert.equal(read(rc), "echo hi\n");
});

test("remove restores the original bytes; a second remove is a no-op", async () => {
  const dir = tmpdir();
  const original = "# user line\r\nexport X=1\r\n";
  const rc = write(path.join(dir, ".profile"), original);
  await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "export A=1" });
  assert.ok(read(rc).includes("export A=1\r\n"), "CRLF file gets CRLF lines");
  const r = await demarcate.remove(rc, { owner: "ZYLOS", name: "hooks" });
  assert.equal(r.files[0].changed, true);
  assert.equal(r.files[0].regions[0].action, "removed");
  assert.equal(read(rc), original);
  const again = await demarcate.remove(rc, { owner: "ZYLOS", name: "hooks" });
  assert.equal(again.files[0].changed, false);
  assert.equal(read(rc), original);
});

test("sync: template v1 then v2 inserts, updates, prunes; then nothing to do", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "echo mine\n");
  const v1 = write(
    path.join(dir, "v1.sh"),
    "# BEGIN ZYLOS MANAGED a\nA=1\n# END ZYLOS MANAGED a\n# BEGIN ZYLOS MANAGED b\nB=1\n# END ZYLOS MANAGED b\n",
  );
  const v2 = write(
    path.join(dir, "v2.sh"),
    "# BEGIN ZYLOS MANAGED a\nA=2\n# END ZYLOS MANAGED a\n# BEGIN ZYLOS MANAGED c\nC=2\n# END ZYLOS MANAGED c\n",
  );
  const r1 = await demarcate.sync(rc, { template: v1, owner: "ZYLOS" });
  assert.deepEqual(r1.files[0].regions.map((r) => [r.name, r.action]), [["a", "inserted"], ["b", "inserted"]]);
  const r2 = await demarcate.sync([rc], { template: v2, owner: "ZYLOS" });
  const actions = Object.fromEntries(r2.files[0].regions.map((r) => [r.name, r.action]));
  assert.deepEqual(actions, { a: "updated", b: "pruned", c: "inserted" });
  const text = read(rc);
  assert.ok(text.startsWith("echo mine\n# BEGIN ZYLOS MANAGED a hash="), text);
  assert.ok(text.includes("\nA=2\n# END ZYLOS MANAGED a\n# BEGIN ZYLOS MANAGED c hash="), text);
  assert.ok(!text.includes("B=1"), text);
  const r3 = await demarcate.sync(rc, { template: v2, owner: "ZYLOS" });
  assert.equal(r3.files[0].changed, false);
  assert.equal(read(rc), text);
});

test("list shows states; a hand edit is drifted and check reports it with exitCode 1", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "");
  await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "A=1" });
  fs.writeFileSync(rc, read(rc).replace("A=1", "A=edited"));
  const l = await demarcate.list(rc);
  assert.equal(l.exitCode, 0);
  assert.equal(l.files[0].regions[0].state, "drifted");
  const c = await demarcate.check([rc]);
  assert.equal(c.exitCode, 1);
  assert.deepEqual(c.files[0].problems.map((p) => p.kind), ["drift"]);
  // Drift is kept by default: a success with a warning.
  const s = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "A=2" });
  assert.equal(s.files[0].regions[0].action, "kept-drifted");
  assert.ok(read(rc).includes("A=edited"));
});

test("an error rejects with DemarcateError carrying the tool's message and exit code", async () => {
  const dir = tmpdir();
  const damaged = "# BEGIN ZYLOS MANAGED hooks\nA=1\n";
  const rc = write(path.join(dir, ".bashrc"), damaged);
  await assert.rejects(
    demarcate.set(rc, { owner: "ZYLOS", name: "other", content: "B=1" }),
    (e) => {
      assert.ok(e instanceof demarcate.DemarcateError);
      assert.ok(e instanceof Error);
      assert.equal(e.exitCode, 2);
      assert.match(e.message, /\.bashrc:1:1: BEGIN marker for "ZYLOS MANAGED hooks" has no END/);
      assert.equal(e.report.files[0].problems[0].kind, "unclosed-begin");
      return true;
    },
  );
  assert.equal(read(rc), damaged, "nothing was written");
  // check on the same file is a result, not an error.
  const c = await demarcate.check(rc);
  assert.equal(c.exitCode, 1);
  assert.equal(c.files[0].problems[0].kind, "unclosed-begin");
});

test("a usage error (no report) rejects with the message from standard error", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, "x.conf"), "");
  await assert.rejects(
    demarcate.set(rc, { owner: "ZYLOS", name: "a", content: "x", format: "klingon" }),
    (e) => {
      assert.ok(e instanceof demarcate.DemarcateError);
      assert.equal(e.exitCode, 2);
      assert.match(e.message, /klingon/);
      return true;
    },
  );
});

test("onDrift fail is an error with exit code 2", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "");
  await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "A=1" });
  fs.writeFileSync(rc, read(rc).replace("A=1", "A=mine"));
  const before = read(rc);
  await assert.rejects(
    demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "A=2", onDrift: "fail" }),
    (e) => e.exitCode === 2 && /hooks/.test(e.message),
  );
  assert.equal(read(rc), before);
});

test("apply converges every file of a manifest; a second apply changes nothing", async () => {
  const dir = tmpdir();
  const home = path.join(dir, "home");
  fs.mkdirSync(home);
  write(path.join(home, ".bashrc"), "echo mine\n");
  write(path.join(dir, "profile.sh"), "# BEGIN ZYLOS MANAGED path\nexport PATH=/opt/z:$PATH\n# END ZYLOS MANAGED path\n");
  const manifest = write(
    path.join(dir, "release.toml"),
    'owner = "ZYLOS"\n\n[[file]]\npath = "home/.bashrc"\ntemplate = "profile.sh"\n\n' +
      '[[block]]\npath = "home/app.env"\nname = "api"\ncontent = "API_URL=https://api.example/v2"\n',
  );
  const r1 = await demarcate.apply(manifest);
  assert.equal(r1.files.length, 2);
  assert.ok(r1.files.every((f) => f.changed));
  assert.equal(
    read(path.join(home, ".bashrc")).replace(/hash=[0-9a-f]+/, "hash=H"),
    "echo mine\n# BEGIN ZYLOS MANAGED path hash=H\nexport PATH=/opt/z:$PATH\n# END ZYLOS MANAGED path\n",
  );
  assert.match(read(path.join(home, "app.env")), /^# BEGIN ZYLOS MANAGED api hash=[0-9a-f]+\nAPI_URL=https:\/\/api\.example\/v2\n# END ZYLOS MANAGED api\n$/);
  const r2 = await demarcate.apply(manifest);
  assert.ok(r2.files.every((f) => !f.changed));
  const r3 = await demarcate.apply(manifest, { check: true });
  assert.equal(r3.exitCode, 0);
});

test("a missing binary is a DemarcateError with exitCode null", async () => {
  await assert.rejects(
    demarcate.list("x", { binary: path.join(tmpdir(), "no-such-binary") }),
    (e) => e instanceof demarcate.DemarcateError && e.exitCode === null && /cannot run/.test(e.message),
  );
});

test("the cli.js shim runs the binary with the same arguments and exit code", () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "echo hi\n");
  const r = spawnSync(process.execPath, [path.join(PKG, "cli.js"), "set", rc, "--owner", "Z", "--name", "n", "--content", "q=1", "--check"], {
    encoding: "utf8",
  });
  assert.equal(r.status, 1, r.stderr);
  assert.equal(read(rc), "echo hi\n");
});

test("the peers' options: noInsert, require, encoding, lineEnding", async () => {
  const dir = tmpdir();
  const rc = write(path.join(dir, ".bashrc"), "export A=1\n");
  const skipped = await demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "export B=2", noInsert: true });
  assert.equal(skipped.files[0].regions[0].action, "not-inserted");
  assert.equal(read(rc), "export A=1\n");
  await assert.rejects(
    demarcate.set(rc, { owner: "ZYLOS", name: "hooks", content: "export B=2", require: true }),
    (e) => e.exitCode === 2 && /hooks/.test(e.message),
  );
  const profile = path.join(dir, "profile.ps1");
  fs.writeFileSync(profile, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("$a = 1\r\n", "utf16le")]));
  await demarcate.set(profile, { owner: "ZYLOS", name: "p", content: "$b = 2", encoding: "utf-16le" });
  const text = fs.readFileSync(profile).subarray(2).toString("utf16le");
  assert.ok(text.startsWith("$a = 1\r\n# BEGIN ZYLOS MANAGED p"), text);
  assert.ok(text.endsWith("# END ZYLOS MANAGED p\r\n"), text);
  const conf = path.join(dir, "app.conf");
  await demarcate.set(conf, { owner: "ZYLOS", name: "c", content: "x=1", format: "text", lineEnding: "crlf" });
  assert.ok(read(conf).endsWith("x=1\r\n# END ZYLOS MANAGED c\r\n"));
});
