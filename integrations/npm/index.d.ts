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
  /** 0: done or nothing to do. 1: with `check: true` a change is due; for check(): problems found. */
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

/** The flags every editing command takes (see docs/cli.md). */
export interface EditOptions extends RunOptions {
  format?: "auto" | "shell" | "env" | "toml" | "jsonc" | (string & {});
  /** Write nothing; each file's `diff` holds what would change. */
  dryRun?: boolean;
  /** Write nothing; resolve with exitCode 1 when a change is due. */
  check?: boolean;
  onDrift?: "keep" | "overwrite" | "merge" | "fail";
  /** Where a new region goes: end, start, after:REGEX, before:REGEX, table:a.b, /json/pointer. */
  at?: string;
  noHash?: boolean;
  noCreate?: boolean;
  backup?: boolean;
  /** A command run on the new content before it replaces the file: 'CMD %s'. */
  validate?: string;
  force?: boolean;
  markerBegin?: string;
  markerEnd?: string;
}

export interface SetOptions extends EditOptions {
  owner?: string;
  name?: string;
  /** The region's body (a final line break is added if missing). */
  content: string;
}

export interface RemoveOptions extends EditOptions {
  owner?: string;
  name?: string;
}

export interface SyncOptions extends EditOptions {
  /** A file of the same format whose regions are the desired ones. */
  template: string;
  /** Only reconcile this owner's regions. */
  owner?: string;
  respectRemovals?: boolean;
}

export interface ApplyOptions extends EditOptions {
  respectRemovals?: boolean;
}

export interface ReadOptions extends RunOptions {
  format?: EditOptions["format"];
}

/** Make each target's regions equal to the template's: insert, update, prune. */
export function sync(targets: string | string[], options: SyncOptions): Promise<Report>;
/** Insert or update one region. */
export function set(target: string, options: SetOptions): Promise<Report>;
/** Remove one region, markers included. */
export function remove(target: string, options: RemoveOptions): Promise<Report>;
/** The regions of each file and their state. */
export function list(targets: string | string[], options?: ReadOptions): Promise<Report>;
/** Damaged markers, drift and duplicate keys; exitCode 1 when anything is found. */
export function check(targets: string | string[], options?: ReadOptions): Promise<Report>;
/** Reconcile every file a manifest names. */
export function apply(manifest: string, options?: ApplyOptions): Promise<Report>;
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
