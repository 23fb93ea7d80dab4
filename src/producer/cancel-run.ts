import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';
import { removeWaitingJobs, type RemovableQueue } from './remove-waiting-jobs.js';
import type { RunStore } from './run-store.js';

/** What cancelling a run did. */
export interface CancelOutcome {
  /** False when no run of that id exists on the queue (nothing was done). */
  readonly found: boolean;
  /** Lease ids whose waiting jobs were removed. */
  readonly removed: readonly string[];
  /** Workers subscribed to the cancel channel when it was published. */
  readonly workersNotified: number;
}

/**
 * Cancels a run, in the order the worker contract needs: status `cancelled` first (a worker
 * refuses to start a job of a cancelled run, so none slips in while we clean up), then remove
 * its waiting jobs, then PUBLISH the run id on the cancel channel (workers abort its active
 * rollouts, which complete with a `caller` Result of type `Cancelled`). Publishing last means a
 * worker freed by an aborted rollout finds no waiting job of the run to pull next.
 * A completed run is left as it is. Idempotent: cancelling twice repeats harmless steps.
 */
export async function cancelRun(
  redis: Redis,
  queue: RemovableQueue,
  store: RunStore,
  logger: Logger,
  runId: string,
  reason: string,
): Promise<CancelOutcome> {
  const head = await store.readHead(runId);
  if (!head) return { found: false, removed: [], workersNotified: 0 };
  await store.setStatus(runId, 'cancelled', ['running', 'stopped'], reason);
  const removed = await removeWaitingJobs(redis, queue, runId);
  const workersNotified = await store.publishCancel(runId);
  logger.info({ runId, removed: removed.length, workersNotified }, `run cancelled (${reason})`);
  return { found: true, removed, workersNotified };
}
