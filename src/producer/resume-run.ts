import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { LeaseTracker } from './lease-tracker.js';
import type { PlacementQueues } from './placement-queues.js';
import { removeWaitingJobs } from './remove-waiting-jobs.js';
import { persistRun } from './run-retention.js';
import { runReattachText, runReuseText, type RunReuse } from './run-reuse.js';
import type { OpenedRun, RunHead, RunStore } from './run-store.js';
import type { SessionPlan } from './session-plan.js';

/** What {@link resumeRun} reads and writes: a `RunSession`'s connections. */
export interface ResumeDeps {
  readonly redis: Redis;
  readonly queue: PlacementQueues;
  readonly keys: QueueKeys;
  readonly store: RunStore;
  readonly logger: Logger;
}

/**
 * What a `RunSession` does on taking a run that exists (`head`, read when its coordinator lease
 * was taken, `opened`): every undelivered lease is awaited again; a run stopped or cancelled
 * earlier has its waiting jobs removed (finishing what a coordinator killed mid-stop left: no
 * waiting job of a stopped run may start); a completed run given drafts runs again, its records
 * kept from expiring mid-run (`persistRun`).
 * The session knows whether the run ended before it ({@link endedEarlier}) before calling this:
 * a Result of a tracked lease can arrive while this still awaits Redis.
 */
export async function resumeRun(deps: ResumeDeps, tracker: LeaseTracker, runId: string, head: RunHead, opened: OpenedRun, hasDrafts: boolean): Promise<void> {
  const { store, logger } = deps;
  for (const leaseId of await store.undeliveredLeases(runId)) tracker.track(leaseId, 'outstanding');
  if (endedEarlier(head)) {
    for (const leaseId of await removeWaitingJobs(deps.redis, deps.queue, runId)) tracker.forget(leaseId);
  } else if (head.status === 'completed' && hasDrafts) {
    // Drafts of leases it delivered are counted and told once every draft is read (tellReuse).
    logger.info({ runId }, 'this run id completed earlier: only drafts of new leases run (a new runId runs them all)');
    // Running again inside its retention window: its records must not expire mid-run.
    const reopened = opened.created ? opened.created.reopened : await store.setStatus(runId, 'running', ['completed']);
    if (reopened) await persistRun(deps.redis, deps.keys, runId);
  }
  logger.info({ runId, status: head.status, undelivered: tracker.unfinishedCount }, 'resuming run');
}

/** `head` when its run was stopped or cancelled (before the session that read it began), else undefined. */
export function endedEarlier(head: RunHead): RunHead | undefined {
  return head.status === 'stopped' || head.status === 'cancelled' ? head : undefined;
}

/**
 * Drafts of a call named leases the run delivered before (a run id used again): a warning (an
 * info line for a `reattach` call, where that is the expected path) and the plan's
 * `onDeliveredBefore` say how many (no silent empties). `counts` is the enqueuer's, once its
 * draft list was read to the end.
 * @returns the error `onDeliveredBefore` threw (the iteration ends with it), else undefined.
 */
export function tellReuse(runId: string, counts: { readonly deliveredBefore: number; readonly distinctLeases: number }, logger: Logger, plan: Pick<SessionPlan, 'reattach' | 'onDeliveredBefore'>): Error | undefined {
  const reuse: RunReuse = { runId, deliveredBefore: counts.deliveredBefore, leases: counts.distinctLeases, nothingNew: counts.deliveredBefore >= counts.distinctLeases };
  const fields = { runId, deliveredBefore: reuse.deliveredBefore, leases: reuse.leases };
  if (plan.reattach === true) logger.info(fields, runReattachText(reuse));
  else logger.warn(fields, runReuseText(reuse));
  try {
    plan.onDeliveredBefore?.(reuse);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
  return undefined;
}
