import type { RunStatus } from '../lease/index.js';
import type { RunReuse } from './run-reuse.js';
import type { RunCreation, RunHead } from './run-store.js';

/** One call of `mapRollouts` (with drafts) or `attach` (without). */
export interface SessionPlan {
  readonly runId: string;
  readonly drafts: Iterable<unknown> | AsyncIterable<unknown> | undefined;
  readonly signal: AbortSignal | undefined;
  readonly runAttemptId: string;
  readonly specCount: number | undefined;
  /** `MapRolloutsOptions.sourceFingerprint`, stored with a new run's record. */
  readonly sourceFingerprint?: string;
  /** `CoordinatorOptions.coordinatorNote`, stored once this session holds the run. */
  readonly coordinatorNote?: string;
  /** `CoordinatorOptions.checkPreviousNote`: may refuse the run (throwing) before anything is stored or delivered. */
  readonly checkPreviousNote?: ((previous: string | null) => void | Promise<void>) | undefined;
  /** `MapRolloutsOptions.onDeliveredBefore`: told of drafts whose leases the run delivered before. */
  readonly onDeliveredBefore?: ((reuse: RunReuse) => void) | undefined;
  /** `MapRolloutsOptions.reattach`: drafts delivered before are expected (info, not a warning). */
  readonly reattach?: boolean;
  readonly stopOnCaller: boolean;
  /** `MapRolloutsOptions.weight`, checked: the run's share of the queue's workers (`fair-share.ts`). */
  readonly weight: number;
}

/**
 * What a `RunSession` makes the run's record again with after Redis lost it mid-run
 * (`RunStore.restoreRun`): the run's stored runAttemptId and final spec count where the session
 * knows them (else the plan's), the status of a run stopped or cancelled before the session
 * began (`earlier`; else running), and the plan's source fingerprint and coordinator note.
 */
export function restoredRunOf(plan: SessionPlan, known: { readonly runAttemptId: string | undefined; readonly specCount: number | undefined; readonly earlier: RunHead | undefined }): RunCreation & { readonly status: RunStatus; readonly stopReason?: string; readonly coordinatorNote?: string } {
  const { sourceFingerprint, coordinatorNote } = plan;
  const { earlier } = known;
  return {
    runAttemptId: known.runAttemptId ?? plan.runAttemptId,
    specCount: known.specCount ?? plan.specCount,
    status: earlier?.status ?? 'running',
    ...(earlier?.stopReason ? { stopReason: earlier.stopReason } : {}),
    ...(sourceFingerprint !== undefined ? { sourceFingerprint } : {}),
    ...(coordinatorNote !== undefined ? { coordinatorNote } : {}),
  };
}
