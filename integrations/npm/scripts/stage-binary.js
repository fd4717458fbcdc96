#!/usr/bin/env node
"use strict";
// Copy a built binary into bin/ so that `npm pack` ships it:
//   cargo build --release && node scripts/stage-binary.js ../../target/release/demarcate
const fs = require("node:fs");
const path = require("node:path");
const { SHIPPED } = require("../lib/binary.js");

const from = process.argv[2];
if (!from) {
  process.stderr.write("usage: node scripts/stage-binary.js PATH-TO-BUILT-BINARY\n");
  process.exit(2);
}
fs.mkdirSync(path.dirname(SHIPPED), { recursive: true });
fs.copyFileSync(from, SHIPPED);
fs.chmodSync(SHIPPED, 0o755);
process.stdout.write(`staged ${from} as ${path.relative(process.cwd(), SHIPPED)}\n`);
