import { WaitingError, type Job } from 'bullmq';
import type { Logger } from '../platform/logger.js';
import type { RolloutSpec } from '../spec/index.js';
import type { LeaseLedger } from './lease-ledger.js';
import { isLostOwnership } from './lost-ownership.js';
import type { AttemptOutcome } from './rollout-child.js';

/** What a hand-back reports through: the lease ledger, the log, the re-dispatch counter. */
export interface HandBackDeps {
  readonly ledger: LeaseLedger;
  readonly logger: Logger;
  /** Counts one re-dispatch by its cause (metrics). */
  onRedispatch(cause: string): void;
}

/**
 * Ends an attempt the worker chose to stop: planned hand-back (shutdown) or lost lock. Throws
 * BullMQ's WaitingError always (the job is back in wait, or another attempt owns it).
 */
export async function handBack(deps: HandBackDeps, job: Job, token: string | undefined, spec: RolloutSpec, reason: string): Promise<never> {
  try {
    await job.moveToWait(token);
    if (reason === 'lock-lost') {
      // Our lock token was still in Redis, so nobody else has the lease: a real re-dispatch.
      await deps.ledger.noteRedispatch(spec.leaseId, spec.runId, { reason: 'LockLost', exitCode: null, signal: null, stderrTail: 'lock renewal failed; attempt aborted' });
      deps.onRedispatch('lock-lost');
    }
    deps.logger.info({ runId: spec.runId, leaseId: spec.leaseId, reason }, 'rollout handed back to the queue');
  } catch (err) {
    if (!isLostOwnership(err)) throw err;
    // Another attempt owns the lease now; this one's answer is a late duplicate.
    await deps.ledger.countDuplicate(spec.runId);
    deps.logger.warn({ runId: spec.runId, leaseId: spec.leaseId, reason }, 'late attempt dropped: the lease belongs to another attempt');
  }
  throw new WaitingError();
}

/**
 * Hands a lease back after its shared child died of a crash it did not cause alone: no
 * re-dispatch is counted (the lease's budget and the run's counter stay), and with blame
 * `shared` its later attempts run alone (`LeaseLedger.noteSharedLoss`). Written before the hand-back,
 * so the next attempt, on any worker, reads it. Throws BullMQ's WaitingError always.
 */
export async function requeue(deps: HandBackDeps, job: Job, token: string | undefined, spec: RolloutSpec, outcome: AttemptOutcome & { type: 'crashed' }): Promise<never> {
  await deps.ledger.noteSharedLoss(spec.leaseId, outcome.blame === 'shared');
  try {
    await job.moveToWait(token);
  } catch (err) {
    if (!isLostOwnership(err)) throw err;
    await deps.ledger.countDuplicate(spec.runId);
    throw new WaitingError();
  }
  const cause = outcome.blame === 'shared' ? 'shared-child-crash' : 'neighbour-crash';
  deps.onRedispatch(cause);
  const exit = { exitCode: outcome.exitCode, signal: outcome.signal };
  deps.logger.warn(
    { runId: spec.runId, leaseId: spec.leaseId, cause, ...exit },
    outcome.blame === 'shared'
      ? 'lease handed back uncounted: its shared rollout child died and no single rollout of it is to blame; it runs in a child of its own next'
      : 'lease handed back uncounted: another rollout of its shared child crashed it',
  );
  throw new WaitingError();
}
