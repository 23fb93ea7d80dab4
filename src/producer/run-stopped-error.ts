import type { Result } from '../spec/index.js';

/**
 * Thrown by `mapRollouts` / `attach` after a run stopped early: at its first `caller` Result
 * (with `stopOnCaller`, the default), or when re-attaching to a run that was stopped or
 * cancelled before. The message says which lease and why, and how to go on.
 *
 * `leaseId` and `result` name the lease whose caller Result stopped the run; both are null
 * when the run had already been stopped by an earlier coordinator (its reason is in the message).
 * `status` is the run's: `cancelled` when it was cancelled before this session (`cancel`), else `stopped`.
 */
export class RunStoppedError extends Error {
  readonly runId: string;
  readonly leaseId: string | null;
  readonly result: Result | null;
  readonly status: 'stopped' | 'cancelled';

  constructor(runId: string, result: Result | null, message: string, status: 'stopped' | 'cancelled' = 'stopped') {
    super(message);
    this.name = 'RunStoppedError';
    this.runId = runId;
    this.leaseId = result?.leaseId ?? null;
    this.result = result;
    this.status = status;
  }

  /** The error for a run stopped by this caller Result, in words a caller can act on. */
  static fromResult(result: Result): RunStoppedError {
    return new RunStoppedError(
      result.runId,
      result,
      `${stoppedAtText(result)} ` +
        'No further specs were enqueued and its waiting jobs were removed; fix the spec or Ref and start a new run, ' +
        'or create the RolloutQueue with stopOnCaller: false to keep going past caller errors.',
    );
  }
}

/** "run "R" stopped at lease L, a caller error (Type: message)." for the caller Result that stopped a run. */
export function stoppedAtText(result: Result): string {
  const why = result.error ? `${result.error.type}: ${result.error.message}` : 'caller error';
  return `run "${result.runId}" stopped at lease ${result.leaseId}, a caller error (${why}).`;
}

/**
 * Thrown by `rollout(draft, { runId })` when that run's one Result was delivered before, to an
 * earlier call with the same `runId` (its acknowledgement is in Redis): a run delivers each
 * Result once, and the run is not run again while Redis keeps it (`retainMs`). A process
 * killed before the acknowledgement gets the Result again instead; one killed after it does
 * not. Use a new `runId` to run the draft again.
 */
export class ResultDeliveredError extends Error {
  readonly runId: string;

  constructor(runId: string) {
    super(`run "${runId}" delivered its Result before, to an earlier rollout() or mapRollouts() of this runId (a run delivers each Result once); use a new runId to run the draft again`);
    this.name = 'ResultDeliveredError';
    this.runId = runId;
  }
}
