import type { ResultKind } from './result.js';

/**
 * Brand that marks an error's Result kind. It lives on the class prototype, so subclasses
 * (and errors from another copy of this package, through `Symbol.for`) classify like their
 * parents without `instanceof`.
 */
export const ERROR_KIND: unique symbol = Symbol.for('rollout-queue.error-kind') as never;

/**
 * Thrown by rollout code, runners or the plane for a transient of the execution plane
 * (a process could not be spawned, a secret is missing on this worker, out of memory).
 * Becomes an `infrastructure` Result.
 */
export class InfrastructureError extends Error {
  declare readonly [ERROR_KIND]: ResultKind;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}
Object.defineProperty(InfrastructureError.prototype, ERROR_KIND, { value: 'infrastructure' });

/**
 * Thrown for a broken caller contract (bad config, reward outside range, bad spec).
 * Becomes a `caller` Result, which stops the run by default.
 */
export class CallerError extends Error {
  declare readonly [ERROR_KIND]: ResultKind;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}
Object.defineProperty(CallerError.prototype, ERROR_KIND, { value: 'caller' });

/**
 * Thrown when the thing under test failed in a way a runner detected (non-zero exit,
 * its own time limit, unparsable output). Becomes a `model` Result. Any other exception
 * from rollout code is `model` too; this class only gives it a clear `type`.
 */
export class ModelError extends Error {
  declare readonly [ERROR_KIND]: ResultKind;
  /** Stable error type string for the Result, e.g. "NonZeroExit", "RunTimeout". */
  readonly type: string;
  constructor(type: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.type = type;
  }
}
Object.defineProperty(ModelError.prototype, ERROR_KIND, { value: 'model' });

/** The kind branded on `err` or one of its prototypes, or undefined. */
export function brandedKind(err: unknown): ResultKind | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const kind = (err as { [ERROR_KIND]?: unknown })[ERROR_KIND];
  return kind === 'ok' || kind === 'model' || kind === 'infrastructure' || kind === 'caller' ? kind : undefined;
}
