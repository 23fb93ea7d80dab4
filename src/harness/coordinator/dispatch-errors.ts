import type { ErrorInfo, Result, ResultKind } from '../../spec/index.js';

/**
 * What a `queueDispatch` call throws for a Result that is not `ok`, as data the harness can
 * branch on: `kind` (the Result kind), `type` (the Result's error type) and `retryable`
 * (true only for `infrastructure`: a transient of the plane; a `caller` problem is terminal,
 * a `model` failure is the dispatch's own error). `result` is the lease's Result, when one exists.
 * An aborted call throws the producer's `AbortError` instead (never retried).
 */
export class DispatchError extends Error {
  readonly kind: Exclude<ResultKind, 'ok'>;
  readonly type: string;
  readonly retryable: boolean;
  readonly result: Result | undefined;

  constructor(kind: Exclude<ResultKind, 'ok'>, error: ErrorInfo, result?: Result) {
    super(error.message);
    this.name = kind === 'model' ? 'DispatchModelError' : kind === 'infrastructure' ? 'DispatchInfrastructureError' : 'DispatchCallerError';
    this.kind = kind;
    this.type = error.type;
    this.retryable = kind === 'infrastructure';
    this.result = result;
  }
}
