#!/usr/bin/env node
"use strict";
// The `demarcate` command of the npm package: run the binary with the same arguments.
const { spawnSync } = require("node:child_process");
const { findBinary } = require("./lib/binary.js");

const bin = findBinary();
if (!bin) {
  process.stderr.write(
    "error: demarcate binary not found; set DEMARCATE_BINARY or reinstall the package\n",
  );
  process.exit(2);
}
const r = spawnSync(bin, process.argv.slice(2), { stdio: "inherit" });
if (r.error) {
  process.stderr.write(`error: cannot run ${bin}: ${r.error.message}\n`);
  process.exit(2);
}
process.exit(r.status === null ? 2 : r.status);
