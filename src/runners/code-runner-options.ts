import { CallerError } from '../spec/errors.js';
import { configRecord, describeValue, optionalInteger } from './config-check.js';
import { normalizeRelativePath } from './relative-path.js';

/** Default of {@link CodeRunnerOptions.timeoutMs}: 60 000 ms (1 min). */
export const DEFAULT_CODE_TIMEOUT_MS = 60_000;
/** Upper bound of {@link CodeRunnerOptions.timeoutMs}: 24 h, the same as a spec's `timeouts.runMs`. */
export const MAX_CODE_TIMEOUT_MS = 86_400_000;
/** Default of {@link CodeRunnerOptions.maxOutputBytes}: 1 MiB per stream. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1_048_576;
/** Upper bound of {@link CodeRunnerOptions.maxOutputBytes}: 256 MiB per stream (the output is held in memory and sent as JSON). */
export const MAX_MAX_OUTPUT_BYTES = 268_435_456;

const MIB = 1024 * 1024;
/** Heap a rollout child needs besides the output it reports, MiB (measured ~12 MiB on Node 20, with margin). */
const CHILD_BASE_HEAP_MB = 16;
/** Heap budgeted per byte of `maxOutputBytes` (two streams, each as text and in the report's JSON, with growth room). */
const OUTPUT_COPIES = 6;

/**
 * The smallest `sandbox.memoryMb` (MiB) under which a rollout child can report what
 * `maxOutputBytes` lets codeRunner keep: the child's heap is `sandbox.memoryMb`
 * (`--max-old-space-size`), and it holds stdout and stderr each up to `maxOutputBytes` as text
 * and again, growing, as the JSON of its report to the worker: 6 × `maxOutputBytes` is budgeted,
 * on top of {@link CHILD_BASE_HEAP_MB}. Measured on Node 20 with both streams full under 64
 * MiB: 10 MiB kept fitted in 4 runs of 4, 12 MiB crashed the child in 1 of 4 (a heap out of
 * memory of the child is a plane crash, `infrastructure` after re-dispatches, not the artifact's fault).
 */
export function memoryMbForOutput(maxOutputBytes: number): number {
  return CHILD_BASE_HEAP_MB + Math.ceil((OUTPUT_COPIES * maxOutputBytes) / MIB);
}

/**
 * Refuses a `maxOutputBytes` the rollout child cannot report within `memoryMb` (see
 * {@link memoryMbForOutput}), before the artifact runs.
 * @throws CallerError naming both settings and the value each would need.
 */
export function checkOutputFits(maxOutputBytes: number, memoryMb: number): void {
  const needMb = memoryMbForOutput(maxOutputBytes);
  if (memoryMb >= needMb) return;
  const fitsBytes = Math.max(0, Math.floor(((memoryMb - CHILD_BASE_HEAP_MB) * MIB) / OUTPUT_COPIES));
  throw new CallerError(
    `${FACTORY}: config.maxOutputBytes = ${maxOutputBytes} (per stream) does not fit in sandbox.memoryMb = ${memoryMb} MiB: the rollout child holds ` +
      `stdout and stderr, each up to maxOutputBytes, as text and again while reporting them (${OUTPUT_COPIES} × maxOutputBytes is budgeted), besides ~${CHILD_BASE_HEAP_MB} MiB of its own; ` +
      `raise sandbox.memoryMb to at least ${needMb} or lower maxOutputBytes to at most ${fitsBytes}`,
  );
}

/** Entrypoint extensions run with this worker's own node (`process.execPath`) by default. */
export const NODE_EXTENSIONS: readonly string[] = ['.js', '.mjs', '.cjs'];

/**
 * Config of {@link codeRunner} (a Ref's `config`: plain JSON).
 */
export interface CodeRunnerOptions {
  /**
   * Path of the file to run, relative to the artifact directory (e.g. `"main.js"`,
   * `"src/solve.py"`). Required. When `rendered` is a string it is written to this path;
   * when it is `{ files }`, this file must be one of them (else an `InfrastructureError`:
   * the artifact is missing). No absolute paths, no `..` out of the directory.
   *
   * The argv form of the evolution engine, `["python3", "main.py"]`, is accepted too: it is
   * the `command`, and the file to write is the first argument after the program that names a
   * relative file path (not an option starting with `-`, and holding a `.` or a `/`), here
   * `main.py`. Give `command` besides it and it is refused (say the command once).
   */
  readonly entrypoint: string | readonly string[];
  /**
   * The artifact's own wall-clock limit in ms, from spawn. Default 60 000, bounds
   * 1–86 400 000 (24 h). Past it the whole process group is killed (SIGTERM, SIGKILL after
   * 200 ms) and the run throws `ModelError('RunTimeout')`. `ctx.signal` (which aborts at the
   * spec's `timeouts.runMs`, on cancellation or shutdown) bounds it too; keep `timeoutMs`
   * below `runMs` so a slow artifact is judged `model` by this runner.
   */
  readonly timeoutMs?: number;
  /**
   * Bytes kept of stdout and, separately, of stderr. A longer stream keeps its first and its
   * last half of this budget (the answer is usually at the end); the middle is read and
   * dropped, a marker line says how many bytes, and `stdoutTruncated`/`stdoutDroppedBytes`
   * (`stderr…` likewise) say so. Default 1 048 576 (1 MiB), bounds 1–268 435 456 (256 MiB).
   * The rollout child holds the kept output on its heap: `sandbox.memoryMb` must be at least
   * 16 + 6 × maxOutputBytes in MiB (`memoryMbForOutput`), else the rollout is refused (`caller`).
   */
  readonly maxOutputBytes?: number;
  /**
   * Program and arguments to run in the artifact directory, e.g. `["python3", "main.py"]`.
   * The program is looked up on the worker's `PATH`; a path with a `/` is taken relative to
   * the artifact directory. Default: `[process.execPath, entrypoint]` (this worker's node)
   * for a `.js`/`.mjs`/`.cjs` entrypoint, `["python3", entrypoint]` for a `.py` one (the
   * worker's `python3` on `PATH`; a `.py` file without a `#!` line would otherwise be run by
   * `/bin/sh` and fail with shell syntax errors), else the entrypoint itself, which is written
   * with mode 0755 and needs a `#!` line.
   */
  readonly command?: readonly string[];
}

/** {@link CodeRunnerOptions} checked and fully defaulted. */
export interface CompiledCodeRunnerOptions {
  /** Normalized relative path. */
  readonly entrypoint: string;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /** The configured command, or undefined for the default (see {@link CodeRunnerOptions.command}). */
  readonly command: readonly [string, ...string[]] | undefined;
}

const FACTORY = 'codeRunner';
/** The keys a codeRunner config may have (any other is refused, naming it). */
export const CODE_RUNNER_OPTION_KEYS = ['entrypoint', 'timeoutMs', 'maxOutputBytes', 'command'] as const;

/**
 * Checks `config` once, at factory time, into a {@link CompiledCodeRunnerOptions}.
 * @throws CallerError naming the field, the bad value and the fix.
 */
export function compileCodeRunnerOptions(config: unknown): CompiledCodeRunnerOptions {
  const record = configRecord(FACTORY, config, CODE_RUNNER_OPTION_KEYS);
  const argv = Array.isArray(record.entrypoint) ? argvEntrypoint(record.entrypoint as unknown[], record.command) : undefined;
  const rawEntrypoint = argv ? argv.file : record.entrypoint;
  if (typeof rawEntrypoint !== 'string') {
    throw new CallerError(
      `${FACTORY}: config.entrypoint must be the artifact's file to run as a relative path string like "main.js", got ${describeValue(rawEntrypoint)}`,
    );
  }
  const entrypoint = normalizeRelativePath(rawEntrypoint);
  if ('problem' in entrypoint) {
    throw new CallerError(`${FACTORY}: config.entrypoint ${JSON.stringify(rawEntrypoint)} ${entrypoint.problem}`);
  }
  return Object.freeze({
    entrypoint: entrypoint.path,
    timeoutMs: optionalInteger(FACTORY, record, 'timeoutMs', {
      min: 1,
      max: MAX_CODE_TIMEOUT_MS,
      fallback: DEFAULT_CODE_TIMEOUT_MS,
      unit: 'milliseconds',
    }),
    maxOutputBytes: optionalInteger(FACTORY, record, 'maxOutputBytes', {
      min: 1,
      max: MAX_MAX_OUTPUT_BYTES,
      fallback: DEFAULT_MAX_OUTPUT_BYTES,
      unit: 'bytes',
    }),
    command: compileCommand(argv ? argv.command : record.command),
  });
}

/**
 * Splits the argv form of `entrypoint` into the command and the file to write.
 * @throws CallerError when `command` is given as well, or no argument names a relative file.
 */
function argvEntrypoint(argv: readonly unknown[], command: unknown): { readonly command: readonly unknown[]; readonly file: string } {
  if (command !== undefined) {
    throw new CallerError(`${FACTORY}: config.entrypoint is an argv array and config.command is set too; give the command once: either { "entrypoint": ["python3", "main.py"] } or { "entrypoint": "main.py", "command": ["python3", "main.py"] }`);
  }
  const file = argv.slice(1).find((arg): arg is string => typeof arg === 'string' && !arg.startsWith('-') && /[./]/.test(arg) && !('problem' in normalizeRelativePath(arg)));
  const single = argv.length === 1 && typeof argv[0] === 'string' && !('problem' in normalizeRelativePath(argv[0])) ? argv[0] : undefined;
  if (file === undefined && single === undefined) {
    throw new CallerError(`${FACTORY}: config.entrypoint ${JSON.stringify(argv).slice(0, 200)} names no file to write: one argument after the program must be a relative file path like "main.py" (not an option, inside the artifact directory); e.g. ["python3", "main.py"]`);
  }
  return { command: argv, file: file ?? (single as string) };
}

function compileCommand(value: unknown): readonly [string, ...string[]] | undefined {
  if (value === undefined) return undefined;
  const fix = 'give the program and its arguments, e.g. ["python3", "main.py"], or omit it for the default';
  if (!Array.isArray(value) || value.length === 0) {
    throw new CallerError(`${FACTORY}: config.command must be a non-empty array of strings, got ${describeValue(value)}; ${fix}`);
  }
  value.forEach((part: unknown, i) => {
    if (typeof part !== 'string' || part.includes('\0') || (i === 0 && part.length === 0)) {
      throw new CallerError(`${FACTORY}: config.command[${i}] must be a string${i === 0 ? ' naming a program' : ''}, got ${describeValue(part)}; ${fix}`);
    }
  });
  const [program, ...args] = value as string[];
  return Object.freeze([program as string, ...args]) as readonly [string, ...string[]];
}

/** The argv that runs the entrypoint in `dir` (see {@link CodeRunnerOptions.command}). */
export function commandFor(options: CompiledCodeRunnerOptions, dir: string): readonly [string, ...string[]] {
  if (options.command) return options.command;
  const lower = options.entrypoint.toLowerCase();
  if (NODE_EXTENSIONS.some((ext) => lower.endsWith(ext))) return [process.execPath, options.entrypoint];
  if (lower.endsWith('.py')) return ['python3', options.entrypoint];
  return [`${dir}/${options.entrypoint}`];
}
