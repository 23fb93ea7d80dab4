import type { FinalAnswer } from '../coordinator/dispatch-errors.js';
import type { DispatchSpan } from '../../spec/index.js';
import type { HarnessCostReceipt } from '../worker/harness-shapes.js';

/**
 * The `POST /dispatch` wire beyond the harness' own (`{ artifact }` back for the request body
 * `{ scenario, cellId, runAttemptId, rep, seed, generation?, placement?, cycleId? }`): what the
 * gateway adds, shared by its route and the HTTP client. Type-only imports: the client loads this
 * module without the coordinator.
 */

/** Response header of a kept final answer: `executions=<n>; kept-until=<ISO 8601>`. */
export const FINAL_HEADER = 'x-rollout-queue-final';

/** The {@link FINAL_HEADER} value of a final answer. */
export const finalHeaderValue = (final: FinalAnswer): string => `executions=${final.executions}; kept-until=${new Date(final.keptUntilMs).toISOString()}`;

/** A `POST /dispatch` response body, any status. */
export interface DispatchResponseBody {
  readonly artifact?: unknown;
  /** The dispatch's paid calls in the harness' `CostReceipt` shape: replay each through the coordinator meter's `runPaidCall`. */
  readonly receipts?: readonly HarnessCostReceipt[];
  /** The same calls as `{ callId, usd, label?, units? }` (older clients). */
  readonly costReceipts?: ReadonlyArray<{ readonly callId: string; readonly usd: number; readonly label?: string; readonly units?: Readonly<Record<string, number>> }>;
  /** Files the dispatch wrote (`ctx.artifacts.write`): relative path → UTF-8 text, or base64 for the paths in `binary`. */
  readonly files?: Readonly<Record<string, string>>;
  readonly binary?: readonly string[];
  /** Spans the dispatch made on the worker. */
  readonly spans?: readonly DispatchSpan[];
  readonly error?: { readonly type: string; readonly message: string };
  readonly kind?: 'model' | 'infrastructure' | 'caller';
  /** Set on a kept failure the plane already spent the cell's re-dispatch budget on: a retry of the same cell attempt gets it again. */
  readonly final?: FinalAnswer;
}
