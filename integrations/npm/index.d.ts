// Types for the demarcate package: a small API over the demarcate binary's --json report.

/** A region as the report lists it (1-based marker lines). */
export interface RegionReport {
  owner: string;
  name: string;
  begin_line: number;
  end_line: number;
  state: "pristine" | "drifted" | "unhashed" | "removed" | (string & {});
  action:
    | "unchanged"
    | "inserted"
    | "updated"
    | "removed"
    | "kept-drifted"
    | "merged"
    | "pruned"
    | "adopted"
    | (string & {});
}

/** An owned entry of a strict JSON file (docs/entries.md). */
export interface EntryReport {
  owner: string;
  /** The canonical key: `/model`, `/hooks/Stop[matcher=]/hooks[command=node /home/u/z/h.js]`. */
  key: string;
  /** The entry's JSON Pointer in the file as read (an element appended to an array ends in `/-`). */
  pointer: string;
  state: "pristine" | "drifted" | "missing" | "user" | (string & {});
  action:
    | "unchanged"
    | "inserted"
    | "updated"
    | "removed"
    | "kept-drifted"
    | "kept-user"
    | "merged"
    | "pruned"
    | "adopted"
    | "left"
    | (string & {});
}

/** A damaged marker, a hand edit or a duplicate key. */
export interface ProblemReport {
  kind: string;
  line: number;
  column: number;
  message: string;
}

/** One file's result. */
export interface FileReport {
  /** The path as given (for apply: as the manifest resolves it). */
  path: string;
  format: string;
  /** The command wrote the file (with dryRun/check: would write it). */
  changed: boolean;
  regions: RegionReport[];
  problems: ProblemReport[];
  /** Strict JSON files (format `json`): the owned entries and what the command did with each. */
  entries?: EntryReport[];
  /** Only when there are some. */
  warnings?: string[];
  /** Only when this file failed (the call then rejects, and the error carries the report). */
  error?: string;
  /** With dryRun: the unified diff of what would change. */
  diff?: string;
}

/** The parsed --json report, plus how the run ended. */
export interface Report {
  files: FileReport[];
  /**
   * 0: done or nothing to do. 1: with `check: true` a change is due; for check(): problems
   * found; for uninstall(): something edited by hand was kept.
   */
  exitCode: 0 | 1;
  /** What the tool printed on standard error (warnings, notes). */
  stderr: string;
}

/** How the binary is run. */
export interface RunOptions {
  /** The binary to run; default: $DEMARCATE_BINARY, the package's bin/ binary, then the PATH. */
  binary?: string;
  /** The environment of the run (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** The working directory relative paths are read from. */
  cwd?: string;
}

/** The file formats (`auto` detects it from the name, then the shebang; `json` is strict JSON). */
export type Format =
  | "auto"
  | "shell"
  | "env"
  | "toml"
  | "jsonc"
  | "json"
  | "text"
  | "markdown"
  | "markup"
  | "ini"
  | "fish"
  | "powershell"
  | "yaml"
  | (string & {});

/** The reading flags: how the file and its markers are read (list, check, set, sync, remove). */
export interface ReadOptions extends RunOptions {
  format?: Format;
  /** The text format's comment for markers: `#`, `;`, `//`, `--`, `REM`, `'<!-- -->'`, …; implies format text. */
  comment?: string;
  /** Markers in another tool's style: `'# {mark} ANSIBLE MANAGED BLOCK'`. */
  marker?: string;
  markerBegin?: string;
  markerEnd?: string;
  /** The file's encoding: utf-8 (default), utf-16le, utf-16be, latin-1, windows-1252. */
  encoding?: "utf-8" | "utf-16le" | "utf-16be" | "latin-1" | "iso-8859-1" | "windows-1252";
  /** The line ending of the lines written; default: the file's own. */
  lineEnding?: "lf" | "crlf" | "cr";
}

/** Ansible's prepend_newline/append_newline (set, sync, remove). */
export interface BlankOptions {
  /** An empty line before a new region (Ansible's prepend_newline); removed with it. */
  blankBefore?: boolean;
  /** An empty line after a new region (Ansible's append_newline); removed with it. */
  blankAfter?: boolean;
}

/** Strict JSON files: key rules for array elements, `POINTER=FIELD` (`/hooks/*=matcher`). */
export interface KeyOptions {
  /** Remembered with the registry, so later runs need not repeat them. */
  keys?: string | string[];
}

/** The writing flags (every command that edits files). */
export interface WriteOptions extends RunOptions {
  /** Write nothing; each changed file's `diff` holds what would change. */
  dryRun?: boolean;
  /** Write nothing; resolve with exitCode 1 when a change is due. */
  check?: boolean;
  backup?: boolean;
  /** A command run on the new content before it replaces the file: 'CMD %s'. */
  validate?: string;
  /** Edit what is refused without it: a read-only file (its mode is kept), a signed PowerShell script, a duplicate key in a JSONC object, an entry another owner holds (transferred). */
  force?: boolean;
}

export interface DriftOptions {
  onDrift?: "keep" | "overwrite" | "merge" | "fail";
}

/** The flags of commands that insert regions (set, sync). */
export interface InsertOptions {
  /** Where a new region goes: end, start, after:REGEX, before:REGEX, table:a.b, /json/pointer. */
  at?: string;
  noHash?: boolean;
  noCreate?: boolean;
  /** Update regions only where they are: a missing one is not inserted (a warning). */
  noInsert?: boolean;
  /** As noInsert, but a missing region is an error (exit code 2). */
  require?: boolean;
  /** Lines an older installer wrote without markers (`re:REGEX` for a pattern): the new region takes their place. */
  adopt?: string | string[];
}

export interface SetOptions extends ReadOptions, BlankOptions, WriteOptions, DriftOptions, InsertOptions {
  /** The region's owner (the word before MANAGED); required unless `marker`/`markerBegin` name a foreign block. */
  owner?: string;
  name?: string;
  /** The region's body (a final line break is added if missing). */
  content: string;
}

export interface RemoveOptions extends ReadOptions, BlankOptions, WriteOptions, DriftOptions, KeyOptions {
  /** The region's owner; required unless `marker`/`markerBegin` name a foreign block. */
  owner?: string;
  /** The region to remove. Without it, on a strict JSON file, every entry of `owner` goes. */
  name?: string;
}

export interface SyncOptions extends ReadOptions, BlankOptions, WriteOptions, DriftOptions, InsertOptions, KeyOptions {
  /** A file of the same format whose regions (strict JSON: entries) are the desired ones. */
  template: string;
  /** Whose regions (strict JSON: entries) these are; required unless `marker`/`markerBegin` name a foreign block. The template's regions must all be this owner's. */
  owner?: string;
  /** A template without regions prunes the owner's regions (a release that ships nothing) instead of being an error. */
  allowEmpty?: boolean;
  /** The template's format when its name does not tell it (it must be the target's). */
  templateFormat?: string;
  respectRemovals?: boolean;
  /** Strict JSON: entries (canonical keys or key prefixes) written only when absent, never updated. */
  seeds?: string | string[];
  /** Strict JSON: the reverse pass also deletes entries adopted without a registry. */
  pruneAdopted?: boolean;
  /** Handle a JSONC file as strict JSON entries (it must have no comments). */
  entries?: boolean;
}

export interface ApplyOptions extends WriteOptions, DriftOptions {
  respectRemovals?: boolean;
  noHash?: boolean;
  /** Every `[[file]]` template without regions prunes its owner's regions instead of being an error. */
  allowEmpty?: boolean;
}

export interface ListOptions extends ReadOptions, KeyOptions {}

export type UninstallOptions = WriteOptions;

/** Make each target's regions equal to the template's: insert, update, prune. */
export function sync(targets: string | string[], options: SyncOptions): Promise<Report>;
/** Insert or update one region. */
export function set(target: string, options: SetOptions): Promise<Report>;
/** Remove one region, markers included; on a strict JSON file without `name`, every entry of `owner`. */
export function remove(target: string, options: RemoveOptions): Promise<Report>;
/** The regions (strict JSON: entries) of each file and their state. */
export function list(targets: string | string[], options?: ListOptions): Promise<Report>;
/** Damaged markers, drift and duplicate keys; exitCode 1 when anything is found. */
export function check(targets: string | string[], options?: ListOptions): Promise<Report>;
/** Reconcile every file a manifest names. */
export function apply(manifest: string, options?: ApplyOptions): Promise<Report>;
/**
 * Remove every region and entry `owner` wrote, in every file the state store knows (the
 * report's paths are absolute). exitCode 1: something was kept because it was edited by hand
 * (each file's `warnings` say what), or with `check: true` a change is due.
 */
export function uninstall(owner: string, options?: UninstallOptions): Promise<Report>;
/** The binary the API would run, or null. */
export function findBinary(env?: NodeJS.ProcessEnv): string | null;

/** The tool failed (exit code 2) or could not be run; nothing was written to the failed file. */
export class DemarcateError extends Error {
  name: "DemarcateError";
  /** 2 for the tool's errors; null when the binary could not be run or was killed. */
  exitCode: number | null;
  stderr: string;
  /** The report, when the tool printed one: with several files, the others' results. */
  report: (Omit<Report, "exitCode" | "stderr">) | null;
  args: string[];
}
