"use strict";
// The README's Node example: the same text as examples/set-hook.mjs, run twice in a temporary
// HOME against the real binary.

const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execFileSync } = require("node:child_process");

const PKG = path.join(__dirname, "..");
const REPO = path.join(PKG, "..", "..");
const EXAMPLE = path.join(PKG, "examples", "set-hook.mjs");

function builtBinary() {
  if (process.env.DEMARCATE_BINARY) return path.resolve(process.env.DEMARCATE_BINARY);
  for (const profile of ["release", "debug"]) {
    const p = path.join(REPO, "target", profile, "demarcate");
    if (fs.existsSync(p)) return p;
  }
  throw new Error("no built binary: run `cargo build --release` or set DEMARCATE_BINARY");
}

test("the README quotes the example verbatim", () => {
  const example = fs.readFileSync(EXAMPLE, "utf8");
  for (const readme of ["README.md", path.join("integrations", "npm", "README.md")]) {
    const text = fs.readFileSync(path.join(REPO, readme), "utf8");
    assert.ok(text.includes("```js\n" + example + "```\n"), `${readme} quotes examples/set-hook.mjs`);
  }
});

test("the example installs the hook, then finds it already there", () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "demarcate-home-"));
  fs.writeFileSync(path.join(home, ".bashrc"), "alias ll='ls -l'\n");
  const env = { ...process.env, HOME: home, XDG_STATE_HOME: path.join(home, ".state"), DEMARCATE_BINARY: builtBinary() };
  const run = () => execFileSync(process.execPath, [EXAMPLE], { env, encoding: "utf8" });
  assert.equal(run(), "installed\n");
  const bytes = fs.readFileSync(path.join(home, ".bashrc"), "utf8");
  assert.match(
    bytes,
    /^alias ll='ls -l'\n# BEGIN ZYLOS MANAGED hooks hash=[0-9a-f]{12}\nexport PATH="\$HOME\/\.zylos\/bin:\$PATH"\n# END ZYLOS MANAGED hooks\n$/,
  );
  assert.equal(run(), "already there\n");
  assert.equal(fs.readFileSync(path.join(home, ".bashrc"), "utf8"), bytes);
});
