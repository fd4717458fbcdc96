"use strict";
// The packed package ships the binary: stage the built binary, `npm pack`, install the tarball
// into a fresh project, and use it with no DEMARCATE_BINARY and nothing on the PATH.

const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execFileSync, spawnSync } = require("node:child_process");

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

const npm = spawnSync("npm", ["--version"], { encoding: "utf8" });

test("npm pack ships bin/demarcate, and the installed package runs it", { skip: npm.status !== 0 && "npm is not installed" }, () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "demarcate-pack-"));
  const copy = path.join(work, "pkg");
  fs.cpSync(PKG, copy, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|test|types-test)$/.test(src) && !src.endsWith(".tgz"),
  });
  fs.rmSync(path.join(copy, "bin", "demarcate"), { force: true });
  execFileSync(process.execPath, [path.join(copy, "scripts", "stage-binary.js"), builtBinary()], { cwd: copy });

  const npmEnv = { ...process.env, npm_config_cache: path.join(work, "cache"), npm_config_update_notifier: "false" };
  const listing = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", work], { cwd: copy, env: npmEnv, encoding: "utf8" }));
  const files = Object.fromEntries(listing[0].files.map((f) => [f.path, f]));
  for (const f of ["package.json", "index.js", "index.d.ts", "cli.js", "lib/binary.js", "bin/demarcate"]) {
    assert.ok(files[f], `the tarball holds ${f}: ${Object.keys(files).join(", ")}`);
  }
  assert.ok(!files["test/api.test.js"], "tests are not shipped");
  assert.equal(files["bin/demarcate"].size, fs.statSync(builtBinary()).size);
  assert.equal(files["bin/demarcate"].mode & 0o111, 0o111, "the binary is executable");

  const project = path.join(work, "project");
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, "package.json"), '{"name": "p", "version": "1.0.0", "private": true}\n');
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", path.join(work, listing[0].filename)], {
    cwd: project,
    env: npmEnv,
    encoding: "utf8",
  });
  const rc = path.join(work, ".bashrc");
  fs.writeFileSync(rc, "echo hi\n");
  const env = { PATH: path.dirname(process.execPath), XDG_STATE_HOME: path.join(work, "state") };
  const script =
    'const d = require("demarcate");' +
    'if (!d.findBinary().endsWith("node_modules/demarcate/bin/demarcate")) throw new Error(d.findBinary());' +
    `d.set(${JSON.stringify(rc)}, { owner: "ZYLOS", name: "hooks", content: "A=1" }).then((r) => console.log(r.files[0].changed));`;
  assert.equal(execFileSync(process.execPath, ["-e", script], { cwd: project, env, encoding: "utf8" }), "true\n");
  assert.match(fs.readFileSync(rc, "utf8"), /^echo hi\n# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]{12}\nA=1\n# END ZYLOS MANAGED hooks\n$/);
  // The package's command, through node_modules/.bin.
  const cli = spawnSync(path.join(project, "node_modules", ".bin", "demarcate"), ["list", rc], { env, encoding: "utf8" });
  assert.equal(cli.status, 0, cli.stderr);
  assert.match(cli.stdout, /hooks/);
});
