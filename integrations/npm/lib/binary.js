"use strict";
// Finding the demarcate binary: $DEMARCATE_BINARY, then the binary shipped in this package's
// bin/ directory, then the PATH. The same order as the Python package.

const fs = require("node:fs");
const path = require("node:path");

const EXE = process.platform === "win32" ? "demarcate.exe" : "demarcate";
const SHIPPED = path.join(__dirname, "..", "bin", EXE);

function isExecutableFile(file) {
  try {
    if (!fs.statSync(file).isFile()) return false;
    if (process.platform !== "win32") fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(env) {
  const dirs = (env.PATH || "").split(path.delimiter).filter(Boolean);
  for (const dir of dirs) {
    const candidate = path.join(dir, EXE);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/**
 * The path of the binary to run, or null when there is none.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string | null}
 */
function findBinary(env = process.env) {
  if (env.DEMARCATE_BINARY) return env.DEMARCATE_BINARY;
  if (isExecutableFile(SHIPPED)) return SHIPPED;
  return onPath(env);
}

module.exports = { findBinary, SHIPPED };
