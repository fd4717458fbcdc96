"use strict";
// A small API over the demarcate binary: each function runs one command with --json and
// resolves to the parsed report. See index.d.ts for the types and docs/integrations.md.

const { spawn } = require("node:child_process");
const { findBinary } = require("./lib/binary.js");

/** The tool failed (exit code 2, or it could not be run): nothing was written to the failed file. */
class DemarcateError extends Error {
  constructor(message, { exitCode = null, stderr = "", report = null, args = [] } = {}) {
    super(message);
    this.name = "DemarcateError";
    /** The exit code (2 for the tool's errors), or null when the binary could not be run. */
    this.exitCode = exitCode;
    /** Everything the tool printed on standard error. */
    this.stderr = stderr;
    /** The parsed report when the tool printed one (several files: the others' results). */
    this.report = report;
    /** The arguments the binary was run with. */
    this.args = args;
  }
}

// Each command takes only the flags that mean something for it (docs/cli.md, "Flags"); the
// options are grouped the same way, from the options object's camelCase names.
const READ = ["format", "comment", "marker", "markerBegin", "markerEnd", "encoding", "lineEnding"];
const BLANK = ["blankBefore", "blankAfter"];
const WRITE = ["dryRun", "check", "backup", "validate", "force"];
const INSERT = ["at", "noHash", "noCreate", "noInsert", "require", "adopt"];
const RUN = ["binary", "env", "cwd"];
const ALLOWED = {
  sync: [...READ, ...BLANK, ...INSERT, ...WRITE, "onDrift", "template", "owner", "allowEmpty", "templateFormat", "respectRemovals", "keys", "seeds", "pruneAdopted", "entries"],
  set: [...READ, ...BLANK, ...INSERT, ...WRITE, "onDrift", "owner", "name", "content"],
  remove: [...READ, ...BLANK, ...WRITE, "onDrift", "owner", "name", "keys"],
  list: [...READ, "keys"],
  check: [...READ, "keys"],
  apply: [...WRITE, "onDrift", "noHash", "allowEmpty", "respectRemovals"],
  uninstall: [...WRITE],
};

// An option the command does not take is a mistake (a typo, or a flag of another command, which
// the binary would refuse as a usage error): say so before anything runs.
function checkOptions(command, o) {
  const allowed = new Set([...ALLOWED[command], ...RUN]);
  const unknown = Object.keys(o).filter((k) => o[k] !== undefined && !allowed.has(k));
  if (unknown.length) {
    throw new TypeError(
      `demarcate.${command}: ${unknown.map((k) => `\`${k}\``).join(", ")} ` +
        `${unknown.length === 1 ? "is not an option" : "are not options"} of ${command} ` +
        `(it takes: ${ALLOWED[command].join(", ") || "no options besides binary, env, cwd"})`,
    );
  }
}

function many(value) {
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

function flagArgs(o) {
  const a = [];
  if (o.format) a.push("--format", o.format);
  if (o.comment !== undefined) a.push(`--comment=${o.comment}`);
  if (o.marker !== undefined) a.push("--marker", o.marker);
  if (o.markerBegin !== undefined) a.push("--marker-begin", o.markerBegin);
  if (o.markerEnd !== undefined) a.push("--marker-end", o.markerEnd);
  if (o.encoding) a.push("--encoding", o.encoding);
  if (o.lineEnding) a.push("--line-ending", o.lineEnding);
  if (o.blankBefore) a.push("--blank-before");
  if (o.blankAfter) a.push("--blank-after");
  for (const k of many(o.keys)) a.push("--key", k);
  for (const s of many(o.seeds)) a.push("--seed", s);
  if (o.pruneAdopted) a.push("--prune-adopted");
  if (o.entries) a.push("--entries");
  if (o.at) a.push("--at", o.at);
  if (o.noHash) a.push("--no-hash");
  if (o.noCreate) a.push("--no-create");
  if (o.noInsert) a.push("--no-insert");
  if (o.require) a.push("--require");
  if (o.force) a.push("--force");
  for (const t of many(o.adopt)) a.push(`--adopt=${t}`);
  if (o.onDrift) a.push("--on-drift", o.onDrift);
  if (o.respectRemovals) a.push("--respect-removals");
  if (o.allowEmpty) a.push("--allow-empty");
  if (o.templateFormat) a.push("--template-format", o.templateFormat);
  if (o.dryRun) a.push("--dry-run");
  if (o.check) a.push("--check");
  if (o.backup) a.push("--backup");
  if (o.validate) a.push("--validate", o.validate);
  return a;
}

function targetsOf(targets) {
  const list = Array.isArray(targets) ? targets : [targets];
  if (list.length === 0) throw new TypeError("demarcate: at least one target is needed");
  return list.map(String);
}

// `--` keeps a target that starts with `-` from being read as a flag.
function idArgs(o) {
  const a = [];
  if (o.owner !== undefined) a.push("--owner", o.owner);
  if (o.name !== undefined) a.push("--name", o.name);
  return a;
}

// Older binaries print the --dry-run diff before the JSON on standard output; newer ones put it
// in each file's "diff" field. Accept both: split a leading diff by its `--- a/PATH` headers.
function parseReport(stdout) {
  const text = stdout.trim();
  if (text.startsWith("{")) return JSON.parse(text);
  const m = [...stdout.matchAll(/^\{$/gm)].pop();
  if (!m) throw new SyntaxError("no JSON report on standard output");
  const report = JSON.parse(stdout.slice(m.index));
  const diffText = stdout.slice(0, m.index);
  const pieces = new Map();
  let current = null;
  for (const line of diffText.split(/(?<=\n)/)) {
    if (line.startsWith("--- a/")) {
      current = line.slice(6).replace(/\r?\n$/, "");
      pieces.set(current, "");
    }
    if (current !== null) pieces.set(current, pieces.get(current) + line);
  }
  const files = report.files || [];
  for (const f of files) {
    if (f.diff === undefined && pieces.has(f.path)) f.diff = pieces.get(f.path);
  }
  if (files.length === 1 && files[0].diff === undefined && diffText) files[0].diff = diffText;
  return report;
}

function errorMessage(report, stderr, code) {
  const fromReport = ((report && report.files) || [])
    .filter((f) => f.error)
    .map((f) => f.error);
  if (fromReport.length) return fromReport.join("\n");
  const lines = stderr.split("\n").filter((l) => l.trim());
  const errors = lines.filter((l) => /^error/.test(l));
  if (errors.length) return errors.join("\n");
  if (lines.length) return lines.join("\n");
  return `demarcate exited with code ${code}`;
}

/**
 * Run the binary with `args` (the subcommand first) plus --json; resolve to the report with `exitCode` and `stderr`.
 * Exit 0 and 1 resolve (1: --check found a change due, or `check` found problems); anything
 * else rejects with a DemarcateError.
 */
function run(args, { input, binary, env, cwd } = {}) {
  const bin = binary || findBinary(env || process.env);
  const fullArgs = [args[0], "--json", ...args.slice(1)];
  if (!bin) {
    return Promise.reject(
      new DemarcateError(
        "demarcate binary not found: set DEMARCATE_BINARY, install the package with its " +
          "bin/ binary, or put demarcate on the PATH (cargo install --locked demarcate)",
        { args: fullArgs },
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const child = spawn(bin, fullArgs, {
      cwd,
      env: { ...(env || process.env), NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out = [];
    const err = [];
    child.stdout.on("data", (d) => out.push(d));
    child.stderr.on("data", (d) => err.push(d));
    child.on("error", (e) =>
      reject(new DemarcateError(`cannot run ${bin}: ${e.message}`, { args: fullArgs })),
    );
    child.on("close", (code, signal) => {
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      let report = null;
      let parseError = null;
      try {
        report = parseReport(stdout);
      } catch (e) {
        parseError = e;
      }
      if ((code === 0 || code === 1) && report) {
        report.exitCode = code;
        report.stderr = stderr;
        resolve(report);
        return;
      }
      const exitCode = code === null ? null : code;
      let message = errorMessage(report, stderr, signal || code);
      if ((code === 0 || code === 1) && parseError) {
        message = `demarcate printed no JSON report (${parseError.message})`;
      }
      reject(new DemarcateError(message, { exitCode, stderr, report, args: fullArgs }));
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input === undefined ? "" : input);
  });
}

function sync(targets, options = {}) {
  checkOptions("sync", options);
  if (!options.template) throw new TypeError("demarcate.sync: options.template is required");
  const a = ["sync", ...flagArgs(options), "--template", String(options.template)];
  if (options.owner !== undefined) a.push("--owner", options.owner);
  return run([...a, "--", ...targetsOf(targets)], options);
}

function set(target, options = {}) {
  checkOptions("set", options);
  if (options.content === undefined) throw new TypeError("demarcate.set: options.content is required");
  const a = ["set", ...flagArgs(options), ...idArgs(options), "--content-file", "-"];
  return run([...a, "--", String(target)], { ...options, input: String(options.content) });
}

// Without `name`, on a strict JSON file: every entry `owner` wrote goes (docs/entries.md).
function remove(target, options = {}) {
  checkOptions("remove", options);
  const a = ["remove", ...flagArgs(options), ...idArgs(options)];
  return run([...a, "--", String(target)], options);
}

function list(targets, options = {}) {
  checkOptions("list", options);
  return run(["list", ...flagArgs(options), "--", ...targetsOf(targets)], options);
}

function check(targets, options = {}) {
  checkOptions("check", options);
  return run(["check", ...flagArgs(options), "--", ...targetsOf(targets)], options);
}

function apply(manifest, options = {}) {
  checkOptions("apply", options);
  return run(["apply", ...flagArgs(options), "--", String(manifest)], options);
}

// Every region and entry `owner` wrote, in every file the state store knows.
function uninstall(owner, options = {}) {
  checkOptions("uninstall", options);
  if (typeof owner !== "string" || owner === "") {
    throw new TypeError("demarcate.uninstall: the owner is required");
  }
  return run(["uninstall", ...flagArgs(options), "--owner", owner], options);
}

module.exports = { sync, set, remove, list, check, apply, uninstall, findBinary, DemarcateError };
