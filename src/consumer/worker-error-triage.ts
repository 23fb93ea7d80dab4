import type { Logger } from '../platform/logger.js';
import { isRedisTimeout } from '../platform/redis-timeout.js';
import { isLostOwnership, lostOwnershipText } from './lost-ownership.js';
import type { RedisReachability } from './redis-reachability.js';
import type { WriteBackoff } from './write-backoff.js';

/** Where {@link triageWorkerError} sends what an error means. */
export interface WorkerErrorSinks {
  /** Pauses intake while Redis refuses writes; takes the errors that say so. */
  readonly writeBackoff: WriteBackoff;
  /** Reports a lost connection once per outage. */
  readonly reachability: RedisReachability;
  /** The processor's attempts whose finish BullMQ is writing: lease id → run id. */
  readonly finishing: Map<string, string>;
  /** Counts a late duplicate answer of the run. */
  readonly countDuplicate: (runId: string) => void;
  readonly logger: Logger;
}

/**
 * Handles an error of a BullMQ worker or queue of this worker (or of its own info write): each
 * kind goes where it is reported once, so BullMQ's retries do not flood the log, and only what
 * none of them explains is logged as 'worker error'.
 */
export function triageWorkerError(err: Error, sinks: WorkerErrorSinks): void {
  // Before anything else: BullMQ retries a refused write at once, thousands of times a second.
  if (sinks.writeBackoff.onError(err)) return;
  if (isLostOwnership(err)) {
    for (const [leaseId, runId] of sinks.finishing) {
      if (!err.message.includes(`job ${leaseId}.`)) continue;
      // BullMQ refused this attempt's finish: another attempt owns the lease. Counted once;
      // BullMQ's follow-up moveToFailed refusal finds the entry gone.
      sinks.finishing.delete(leaseId);
      sinks.countDuplicate(runId);
      sinks.logger.warn({ runId, leaseId }, `late answer dropped: ${lostOwnershipText(err)}`);
      return;
    }
    return;
  }
  // BullMQ emits this right after 'lockRenewalFailed' for the same jobs (lock-manager.js
  // extendLocks), which the worker's wiring handles: a warn for the attempt it aborts, nothing
  // for a lease no longer run here (handed back on shutdown).
  if (err.message.startsWith('could not renew lock for job ')) return;
  // A command Redis did not answer in time: the probe reports the silence once (and /healthz).
  if (isRedisTimeout(err)) return;
  // BullMQ's own clients often notice an outage first; reported once, like ours.
  if (sinks.reachability.noticeConnectionError(err)) return;
  sinks.logger.error({ err: err.message }, 'worker error');
}
