"use strict";
// Strict JSON entries (sync with key rules and seeds, remove by owner), uninstall, and the
// options each command takes, against the real binary on real files. Each test has its own
// state store, since uninstall reaches every file the store knows.

const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

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
const demarcate = require("..");

// A temporary directory and the run options pointing the state store into it.
function sandbox() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "demarcate-node-entries-"));
  const run = { binary: BIN, env: { ...process.env, HOME: dir, XDG_STATE_HOME: path.join(dir, "state") } };
  return { dir, run };
}

const read = (file) => fs.readFileSync(file, "utf8");
const write = (file, text) => (fs.writeFileSync(file, text), file);

// The file must stay strict JSON at every step: JSON.parse is what its readers use.
function parsed(file) {
  return JSON.parse(read(file));
}

const USER_SETTINGS =
  '{\n  "theme": "dark",\n  "hooks": {\n    "SessionStart": [\n' +
  '      {"matcher": "", "hooks": [{"type": "command", "command": "echo mine"}]}\n    ]\n  }\n}\n';

const KEYS = ["/hooks/*=matcher", "/hooks/*/*/hooks=command:path", "/permissions/allow=."];

function template(dir, name, { start = "node ~/z/start.js", allow = ["Bash(zylos status)"], model } = {}) {
  const t = {
    hooks: {
      SessionStart: [{ matcher: "", hooks: [{ type: "command", command: start }] }],
      Stop: [{ matcher: "", hooks: [{ type: "command", command: "node ~/z/stop.js" }] }],
    },
    permissions: { allow },
  };
  if (model !== undefined) t.model = model;
  return write(path.join(dir, name), JSON.stringify(t, null, 2) + "\n");
}

test("sync with key rules installs hooks beside the user's, then changes nothing; uninstall gives the bytes back", async () => {
  const { dir, run } = sandbox();
  const settings = write(path.join(dir, "settings.json"), USER_SETTINGS);
  const v1 = template(dir, "v1.json");

  const first = await demarcate.sync(settings, { ...run, template: v1, owner: "ZYLOS", keys: KEYS });
  const f = first.files[0];
  assert.equal(f.format, "json");
  assert.equal(f.changed, true);
  assert.deepEqual(f.regions, []);
  assert.deepEqual(
    f.entries.map((e) => [e.owner, e.state, e.action]),
    [["ZYLOS", "missing", "inserted"], ["ZYLOS", "missing", "inserted"], ["ZYLOS", "missing", "inserted"]],
  );
  assert.ok(f.entries.some((e) => e.key === "/permissions/allow[.=Bash(zylos status)]"), JSON.stringify(f.entries));
  const v = parsed(settings);
  assert.equal(v.theme, "dark");
  assert.deepEqual(
    v.hooks.SessionStart[0].hooks.map((h) => h.command),
    ["echo mine", "node ~/z/start.js"],
    "the user's hook stays, ours joins its matcher group",
  );
  assert.deepEqual(v.permissions.allow, ["Bash(zylos status)"]);
  const installed = read(settings);
  const mtime = fs.statSync(settings).mtimeMs;

  // The key rules are remembered: the second run need not repeat them.
  const second = await demarcate.sync(settings, { ...run, template: v1, owner: "ZYLOS" });
  assert.equal(second.files[0].changed, false);
  assert.ok(second.files[0].entries.every((e) => e.state === "pristine" && e.action === "unchanged"));
  assert.equal(read(settings), installed);
  assert.equal(fs.statSync(settings).mtimeMs, mtime);
  assert.equal((await demarcate.sync(settings, { ...run, template: v1, owner: "ZYLOS", check: true })).exitCode, 0);

  // The next release, previewed: the diff is in the report, nothing is written.
  const v2 = template(dir, "v2.json", { start: "node ~/z/start2.js" });
  const preview = await demarcate.sync(settings, { ...run, template: v2, owner: "ZYLOS", dryRun: true });
  assert.equal(preview.files[0].changed, true);
  assert.match(preview.files[0].diff, /^\+.*node ~\/z\/start2\.js/m);
  assert.match(preview.files[0].diff, /^-.*node ~\/z\/start\.js/m);
  assert.equal(read(settings), installed);
  const due = await demarcate.sync(settings, { ...run, template: v2, owner: "ZYLOS", check: true });
  assert.equal(due.exitCode, 1);
  assert.equal(read(settings), installed);

  const upgraded = await demarcate.sync(settings, { ...run, template: v2, owner: "ZYLOS" });
  assert.ok(upgraded.files[0].changed);
  assert.deepEqual(
    parsed(settings).hooks.SessionStart[0].hooks.map((h) => h.command),
    ["echo mine", "node ~/z/start2.js"],
    "the new command replaces ours, not a second copy",
  );

  // uninstall: a preview and a check first, both writing nothing.
  const upgradedBytes = read(settings);
  const dry = await demarcate.uninstall("ZYLOS", { ...run, dryRun: true });
  assert.equal(dry.files.length, 1);
  assert.equal(fs.realpathSync(dry.files[0].path), fs.realpathSync(settings));
  assert.match(dry.files[0].diff, /^-.*node ~\/z\/stop\.js/m);
  assert.equal((await demarcate.uninstall("ZYLOS", { ...run, check: true })).exitCode, 1);
  assert.equal(read(settings), upgradedBytes);

  const gone = await demarcate.uninstall("ZYLOS", run);
  assert.equal(gone.exitCode, 0);
  assert.ok(gone.files[0].changed);
  assert.ok(gone.files[0].entries.every((e) => e.action === "removed"), JSON.stringify(gone.files[0].entries));
  assert.equal(read(settings), USER_SETTINGS, "the original bytes");
  parsed(settings);
  const again = await demarcate.uninstall("ZYLOS", run);
  assert.ok(again.files.every((x) => !x.changed));
  assert.equal(read(settings), USER_SETTINGS);
});

test("remove by owner without a name takes the owner's entries out of a strict JSON file", async () => {
  const { dir, run } = sandbox();
  const settings = write(path.join(dir, "settings.json"), USER_SETTINGS);
  await demarcate.sync(settings, { ...run, template: template(dir, "t.json"), owner: "ZYLOS", keys: KEYS });
  const installed = read(settings);
  parsed(settings);

  const due = await demarcate.remove(settings, { ...run, owner: "ZYLOS", check: true });
  assert.equal(due.exitCode, 1);
  assert.equal(read(settings), installed);

  const r = await demarcate.remove(settings, { ...run, owner: "ZYLOS" });
  assert.equal(r.files[0].changed, true);
  assert.equal(r.files[0].entries.length, 3);
  assert.ok(r.files[0].entries.every((e) => e.action === "removed"));
  assert.equal(read(settings), USER_SETTINGS);
  assert.equal((await demarcate.remove(settings, { ...run, owner: "ZYLOS" })).files[0].changed, false);
});

test("seeds are written once and never updated; pruneAdopted drops co-owned entries", async () => {
  const { dir, run } = sandbox();
  // The user already allows what the release ships: adopted (co-owned) on the first run.
  const settings = write(path.join(dir, "settings.json"), '{\n  "permissions": {\n    "allow": [\n      "Bash(zylos status)"\n    ]\n  }\n}\n');
  const v1 = template(dir, "v1.json", { model: "opus" });
  const first = await demarcate.sync(settings, { ...run, template: v1, owner: "ZYLOS", keys: KEYS, seeds: "/model" });
  const actions = Object.fromEntries(first.files[0].entries.map((e) => [e.key, e.action]));
  assert.equal(actions["/model"], "inserted");
  assert.equal(actions["/permissions/allow[.=Bash(zylos status)]"], "adopted");
  assert.equal(parsed(settings).model, "opus");

  // The user picks another model: a later release with another seed value leaves it.
  fs.writeFileSync(settings, read(settings).replace('"opus"', '"haiku"'));
  const v2 = template(dir, "v2.json", { model: "sonnet", allow: [] });
  const r2 = await demarcate.sync(settings, { ...run, template: v2, owner: "ZYLOS", seeds: ["/model"] });
  assert.equal(parsed(settings).model, "haiku");
  // Without pruneAdopted the adopted permission stays (it may be the user's) …
  assert.deepEqual(parsed(settings).permissions.allow, ["Bash(zylos status)"]);
  assert.equal(
    r2.files[0].entries.find((e) => e.key === "/permissions/allow[.=Bash(zylos status)]").action,
    "left",
  );

  // … with it, a co-owned entry the release drops goes too.
  const other = write(path.join(dir, "other.json"), '{"permissions": {"allow": ["Bash(zylos status)"]}}\n');
  await demarcate.sync(other, { ...run, template: v1, owner: "ZYLOS", keys: KEYS });
  const pruned = await demarcate.sync(other, { ...run, template: v2, owner: "ZYLOS", pruneAdopted: true });
  assert.equal(
    pruned.files[0].entries.find((e) => e.key === "/permissions/allow[.=Bash(zylos status)]").action,
    "pruned",
  );
  assert.deepEqual(parsed(other).permissions?.allow ?? [], []);
});

test("uninstall removes the owner's regions everywhere; a hand-edited one is kept with exitCode 1", async () => {
  const { dir, run } = sandbox();
  const a = write(path.join(dir, "a.sh"), "echo a\n");
  const b = write(path.join(dir, "b.env"), "B=1\n");
  await demarcate.set(a, { ...run, owner: "ZYLOS", name: "hooks", content: "export A=1" });
  await demarcate.set(b, { ...run, owner: "ZYLOS", name: "api", content: "API=1" });
  await demarcate.set(b, { ...run, owner: "OTHER", name: "x", content: "X=1" });
  fs.writeFileSync(a, read(a).replace("export A=1", "export A=mine"));
  const edited = read(a);

  const r = await demarcate.uninstall("ZYLOS", run);
  assert.equal(r.exitCode, 1, "the kept region is a finding");
  const byName = Object.fromEntries(r.files.map((f) => [path.basename(f.path), f]));
  assert.equal(byName["a.sh"].changed, false);
  assert.equal(byName["a.sh"].regions[0].action, "kept-drifted");
  assert.ok(byName["a.sh"].warnings.some((w) => /edited by hand/.test(w)), byName["a.sh"].warnings);
  assert.equal(byName["b.env"].changed, true);
  assert.equal(read(a), edited);
  assert.match(read(b), /^B=1\n# BEGIN OTHER MANAGED x hash=[0-9a-f]+\nX=1\n# END OTHER MANAGED x\n$/, "another owner's region stays");
});

test("adopt, force, comment and marker pass through", async () => {
  const { dir, run } = sandbox();
  const rc = write(path.join(dir, ".bashrc"), 'export PATH="$HOME/.zylos/bin:$PATH"\nalias ll=ls\n');
  const line = 'export PATH="$HOME/.zylos/bin:$PATH"';
  const r = await demarcate.set(rc, { ...run, owner: "ZYLOS", name: "hooks", content: line, adopt: line });
  assert.equal(r.files[0].regions[0].action, "adopted");
  assert.match(read(rc), /^# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]+\nexport PATH="\$HOME\/\.zylos\/bin:\$PATH"\n# END ZYLOS MANAGED hooks\nalias ll=ls\n$/);

  const jsonc = write(path.join(dir, "c.jsonc"), '{\n  // mine\n  "a": 1\n}\n');
  await assert.rejects(demarcate.set(jsonc, { ...run, owner: "Z", name: "n", content: '"a": 2,' }), /also assigned/);
  const forced = await demarcate.set(jsonc, { ...run, owner: "Z", name: "n", content: '"a": 2,', force: true });
  assert.equal(forced.files[0].changed, true);

  const sql = write(path.join(dir, "init.sql"), "select 1;\n");
  await demarcate.set(sql, { ...run, owner: "Z", name: "n", content: "select 2;", comment: "--" });
  assert.match(read(sql), /^select 1;\n-- BEGIN Z MANAGED n hash=[0-9a-f]+\nselect 2;\n-- END Z MANAGED n\n$/);

  const conf = write(path.join(dir, "app.conf"), "x\n");
  await demarcate.set(conf, { ...run, content: "y = 1", marker: "# {mark} ANSIBLE MANAGED BLOCK", format: "text" });
  assert.equal(read(conf), "x\n# BEGIN ANSIBLE MANAGED BLOCK\ny = 1\n# END ANSIBLE MANAGED BLOCK\n");
});

test("an option the command does not take is a TypeError before anything runs", () => {
  const { dir, run } = sandbox();
  const rc = write(path.join(dir, ".bashrc"), "");
  assert.throws(() => demarcate.remove(rc, { ...run, name: "n", at: "start" }), /demarcate\.remove: `at` is not an option of remove/);
  assert.throws(() => demarcate.apply("m.toml", { ...run, format: "shell" }), /`format` is not an option of apply/);
  assert.throws(() => demarcate.list(rc, { ...run, dryRun: true, backup: true }), /`dryRun`, `backup` are not options of list/);
  assert.throws(() => demarcate.uninstall("Z", { ...run, onDrift: "overwrite" }), /`onDrift` is not an option of uninstall/);
  assert.throws(() => demarcate.uninstall("", run), /owner is required/);
  assert.throws(() => demarcate.set(rc, { ...run, name: "n", content: "x", dryrun: true }), /`dryrun` is not an option/);
  assert.equal(read(rc), "");
});
