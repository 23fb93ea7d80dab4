import type { ErrorInfo, Result, ResultKind } from '../../spec/index.js';

/** Why a failed dispatch is its cell's final answer for its run attempt (see {@link DispatchError.final}). */
export interface FinalAnswer {
  /** Times the Dispatch ran for the cell (the lease's attempts; the plane re-dispatches a transient at most twice: ≤ 3). */
  readonly executions: number;
  /** Epoch ms until which a retry of the same `(runAttemptId, cellId)` gets this same answer (and receipts) without a run. */
  readonly keptUntilMs: number;
}

/**
 * What a `queueDispatch` call throws for a Result that is not `ok`, as data the harness can
 * branch on: `kind` (the Result kind), `type` (the Result's error type), `retryable` and
 * `final`. `result` is the lease's Result, when one exists. An aborted call throws the
 * producer's `AbortError` instead (never retried).
 * - `retryable`: true only for an `infrastructure` answer that is not final (nothing ran: no
 *   worker within the deadline, an earlier cancelled call still being cleaned up): a retry of
 *   the cell may run it. A `caller` problem is terminal, a `model` failure the dispatch's own error.
 * - `final`: set when the failure is the cell's kept answer: a `model` failure, or an
 *   `infrastructure` one the plane already spent the cell's re-dispatch budget on. A retry of the
 *   same cell attempt gets it again (never a 4th execution) until `final.keptUntilMs`; a new
 *   `runAttemptId` runs the cell afresh.
 */
export class DispatchError extends Error {
  readonly kind: Exclude<ResultKind, 'ok'>;
  readonly type: string;
  readonly retryable: boolean;
  readonly final: FinalAnswer | undefined;
  readonly result: Result | undefined;

  constructor(kind: Exclude<ResultKind, 'ok'>, error: ErrorInfo, result?: Result, final?: FinalAnswer) {
    super(error.message);
    this.name = kind === 'model' ? 'DispatchModelError' : kind === 'infrastructure' ? 'DispatchInfrastructureError' : 'DispatchCallerError';
    this.kind = kind;
    this.type = error.type;
    this.final = final;
    this.retryable = kind === 'infrastructure' && final === undefined;
    this.result = result;
  }
}
