import { CallerError } from '../spec/errors.js';

/**
 * Stable codes of {@link RefError}, one per way a Ref can be wrong:
 * - `malformed-target`: `$ref` is not `"module:export"` with a bare package specifier;
 * - `not-allowed`: the module is refused by the allowlist (or is always refused: a Node
 *   builtin, a path, a URL);
 * - `cannot-import`: `import(module)` failed on the worker (not installed, or its top level threw);
 * - `no-such-export`: the module has no export of that name;
 * - `not-callable`: the export (or what its factory returned) is not a function;
 * - `factory-threw`: `factory(config)` threw or rejected;
 * - `bad-config`: the Ref's shape or config is not plain JSON data (the path is named);
 * - `too-deep`: nested Refs, or the config itself, nest deeper than the limits.
 */
export const REF_ERROR_CODES = [
  'malformed-target',
  'not-allowed',
  'cannot-import',
  'no-such-export',
  'not-callable',
  'factory-threw',
  'bad-config',
  'too-deep',
] as const;

/** One of {@link REF_ERROR_CODES}. */
export type RefErrorCode = (typeof REF_ERROR_CODES)[number];

/** Longest target shown in a message, in characters (a target is caller data). */
const MAX_SHOWN_TARGET = 200;

/** JSON-quotes a target, so newlines or control characters cannot forge log lines, and shortens it. */
function quote(target: string): string {
  return JSON.stringify(target.length > MAX_SHOWN_TARGET ? `${target.slice(0, MAX_SHOWN_TARGET)}…` : target);
}

/** Longest problem text kept in a message, in characters (it may quote caller data). */
const MAX_PROBLEM = 1000;

/** Escapes control characters (a newline in caller data must not start a new log line) and caps the length. */
function oneLine(text: string): string {
  const escaped = text.replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1));
  return escaped.length > MAX_PROBLEM ? `${escaped.slice(0, MAX_PROBLEM)}…` : escaped;
}

/** What a {@link RefError} is built from. */
export interface RefErrorDetails {
  /** The Ref's `$ref` string as given, or undefined when it was not a string. */
  readonly target?: string | undefined;
  /** Where the offending Ref sits, e.g. `config.judge` for a nested Ref; `''` for the outermost. */
  readonly path?: string;
  /** What is wrong, without a trailing period. */
  readonly problem: string;
  /** How to fix it, one or two sentences. */
  readonly fix: string;
  /** The underlying error (import failure, what the factory threw). */
  readonly cause?: unknown;
}

/**
 * A broken Ref: refused at build time by `ref()` or on the worker by `resolveRef()`.
 * A {@link CallerError}, so it becomes a `caller` Result. Recognise it by `code`
 * (a stable string), not by message text.
 *
 * The message reads `Ref "<target>" [at <path>]: <problem>. <fix>` on one line: the target
 * JSON-quoted and cut at 200 characters, control characters in the problem escaped and
 * the problem cut at 1000 characters.
 */
export class RefError extends CallerError {
  /** Stable code, see {@link REF_ERROR_CODES}. */
  readonly code: RefErrorCode;
  /** The `$ref` string, or undefined when it was not a string. */
  readonly target: string | undefined;
  /** Path of the offending Ref inside the outermost one (`''` for the outermost itself). */
  readonly path: string;
  /** What is wrong (also in `message`). */
  readonly problem: string;
  /** How to fix it (also in `message`). */
  readonly fix: string;

  constructor(code: RefErrorCode, details: RefErrorDetails) {
    const path = details.path ?? '';
    const subject = details.target === undefined ? 'Ref' : `Ref ${quote(details.target)}`;
    super(`${subject}${path ? ` at ${oneLine(path)}` : ''}: ${oneLine(details.problem)}. ${details.fix}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.target = details.target;
    this.path = path;
    this.problem = details.problem;
    this.fix = details.fix;
  }

  /**
   * The same error for a Ref nested at `prefix` inside another one (`prefix` + `.` + this
   * path). Returns a new RefError; this one is left as is (it may be shared by a cache).
   */
  under(prefix: string): RefError {
    if (!prefix) return this;
    return new RefError(this.code, {
      target: this.target,
      path: this.path ? `${prefix}.${this.path}` : prefix,
      problem: this.problem,
      fix: this.fix,
      cause: this.cause,
    });
  }
}
