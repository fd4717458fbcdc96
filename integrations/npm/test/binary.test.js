"use strict";
// The order the package looks for the binary in: $DEMARCATE_BINARY, the package's bin/, PATH.
// Run on a copy of the package so the real bin/ is never touched.

const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const PKG = path.join(__dirname, "..");

function copyPackage() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "demarcate-pkg-"));
  fs.mkdirSync(path.join(dir, "lib"));
  fs.copyFileSync(path.join(PKG, "lib", "binary.js"), path.join(dir, "lib", "binary.js"));
  return dir;
}

function fakeBinary(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, process.platform === "win32" ? "demarcate.exe" : "demarcate");
  fs.writeFileSync(p, "#!/bin/sh\n");
  fs.chmodSync(p, 0o755);
  return p;
}

test("DEMARCATE_BINARY wins, then the shipped bin/, then the PATH, else null", () => {
  const pkg = copyPackage();
  const { findBinary } = require(path.join(pkg, "lib", "binary.js"));
  const onPath = fakeBinary(path.join(pkg, "pathdir"));
  const env = { PATH: path.join(pkg, "pathdir") };

  assert.equal(findBinary({ PATH: path.join(pkg, "empty") }), null);
  assert.equal(findBinary(env), onPath);
  // A non-executable file in bin/ is not a binary.
  fs.mkdirSync(path.join(pkg, "bin"));
  fs.writeFileSync(path.join(pkg, "bin", "demarcate"), "");
  if (process.platform !== "win32") assert.equal(findBinary(env), onPath);
  fs.rmSync(path.join(pkg, "bin"), { recursive: true });
  const shipped = fakeBinary(path.join(pkg, "bin"));
  assert.equal(findBinary(env), shipped);
  assert.equal(findBinary({ ...env, DEMARCATE_BINARY: "/opt/x/demarcate" }), "/opt/x/demarcate");
});

test("stage-binary copies a built binary into bin/ as an executable", () => {
  const pkg = copyPackage();
  fs.mkdirSync(path.join(pkg, "scripts"));
  fs.copyFileSync(path.join(PKG, "scripts", "stage-binary.js"), path.join(pkg, "scripts", "stage-binary.js"));
  const src = fakeBinary(path.join(pkg, "build"));
  const { execFileSync } = require("node:child_process");
  execFileSync(process.execPath, [path.join(pkg, "scripts", "stage-binary.js"), src], { cwd: pkg });
  const staged = path.join(pkg, "bin", "demarcate");
  assert.equal(fs.readFileSync(staged, "utf8"), "#!/bin/sh\n");
  assert.equal(fs.statSync(staged).mode & 0o111, 0o111);
});
