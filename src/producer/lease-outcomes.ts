import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import { CostTally, type Result } from '../spec/index.js';
import type { DraftEnqueuer } from './draft-enqueuer.js';
import { EvaluationCache } from './evaluation-cache.js';
import type { LeaseTracker } from './lease-tracker.js';
import type { PlacementQueues } from './placement-queues.js';
import type { JobOutcome } from './read-job-outcomes.js';
import { resultForMissingJob, resultFromFailedJob, resultFromReturnValue } from './result-from-job.js';
import type { RollbackWatch } from './rollback-watch.js';
import type { RunEnding } from './run-ending.js';
import { redisNowMs } from './run-retention.js';
import type { RunHead, RunStore } from './run-store.js';

/** What turning a run's job outcomes into Results needs from its `RunSession`; the functions read the session's state live. */
export interface LeaseOutcomesDeps {
  readonly runId: string;
  readonly redis: Redis;
  /** The base queue and its placement queues (evaluation hashes of leases). */
  readonly queue: PlacementQueues;
  readonly keys: QueueKeys;
  readonly store: RunStore;
  readonly logger: Logger;
  /** How long a cached evaluation is kept, ms (the producer's `retainMs`). */
  readonly retainMs: number;
  /** Producer option `costCeilingUsd`: stop dispatching once the run's delivered receipts reach it, USD. */
  readonly costCeilingUsd?: number | undefined;
  /** `SessionPlan.stopOnCaller`: a caller Result stops the run. */
  readonly stopOnCaller: boolean;
  readonly tracker: LeaseTracker;
  readonly rollback: RollbackWatch;
  readonly ending: RunEnding;
  /** The session's enqueuer, once it has one (a session with drafts). */
  readonly enqueuer: () => DraftEnqueuer | undefined;
  /** The run's head when it was stopped or cancelled before the session began, else undefined. */
  readonly earlier: () => RunHead | undefined;
  /** The run did not exist when the session took its coordinator lease. */
  readonly madeRun: () => boolean;
  /** The session made the run's record again (`RunRecordRestorer.restored`). */
  readonly recordRestored: () => boolean;
  /** Adds again the lost jobs of the leases the session keeps (`RunRecordRestorer.readdLostJobs`). */
  readonly readdLostJobs: () => void;
}

/**
 * The Results of a run's leases as their jobs end: accepts each Result into the session's
 * tracker (a caller Result or the cost ceiling may stop the run; an `ok` evaluation is cached),
 * and settles a job outcome read by reconciliation, a missing job included.
 */
export class LeaseOutcomes {
  /** Receipts of this session's delivered Results, for `costCeilingUsd`. */
  private readonly cost = new CostTally();

  constructor(private readonly deps: LeaseOutcomesDeps) {}

  /** Takes `result` as its lease's Result, unless the lease was already answered or is not awaited. Never throws. */
  accept(result: Result): void {
    const { runId, tracker, rollback, ending, logger } = this.deps;
    if (!tracker.finish(result)) return;
    rollback.accepted(result.leaseId, this.deps.enqueuer()?.indexOf(result.leaseId));
    this.deps.enqueuer()?.finished(result.leaseId);
    logger.debug({ runId, leaseId: result.leaseId, kind: result.kind }, 'result ready');
    if (result.kind === 'caller' && this.deps.stopOnCaller && !this.deps.earlier()) ending.stopAt(result);
    if (result.kind === 'ok' && !result.cached) {
      this.cacheEvaluation(result).catch((err: Error) => logger.warn({ leaseId: result.leaseId, err: err.message }, 'storing the evaluation in the cache failed; it runs again next time'));
    }
    const ceiling = this.deps.costCeilingUsd;
    if (ceiling !== undefined) {
      this.cost.add(result.cost, result.leaseId);
      if (this.cost.totalUsd >= ceiling && !this.deps.earlier()) ending.stopAtCeiling(this.cost.totalUsd, ceiling);
    }
  }

  /**
   * Settles the job outcome of lease `leaseId` read by reconciliation (`head`: the run's head read
   * by the same pass, undefined when the record is gone): a completed or failed job gives its
   * Result; a missing one is forgotten (the run is ending), added again, or ends JobMissing.
   * @throws the Redis error of a read or of the quarantine write.
   */
  async settle(leaseId: string, outcome: JobOutcome, head: RunHead | undefined): Promise<void> {
    const { runId, tracker } = this.deps;
    if (!tracker.awaits(leaseId)) return;
    if (outcome.state === 'completed') return this.accept(resultFromReturnValue(leaseId, runId, outcome.returnvalue));
    if (outcome.state === 'failed') {
      const result = resultFromFailedJob(leaseId, runId, outcome, await redisNowMs(this.deps.redis));
      if (result.error?.type === 'WorkerLost') {
        await this.deps.store.quarantine(runId, leaseId, { reason: outcome.failedReason, exitCode: null, signal: null, stderrTail: '' });
      }
      return this.accept(result);
    }
    if (outcome.state === 'missing') {
      // A stopped or cancelled run's waiting jobs were removed on purpose: nothing will answer them.
      const ending = this.deps.ending.begun || this.deps.earlier() || (head && head.status !== 'running' && head.status !== 'completed');
      if (ending) tracker.forget(leaseId);
      // Redis lost the run's data (its record is gone, or was made again by this session): the
      // job is added again from its kept draft rather than ended (readdLostJobs; the record is
      // made again on the way, by RunHeadWatch.notice or by the add's own record write).
      else if ((!head || this.deps.recordRestored()) && this.deps.enqueuer()?.keeps(leaseId)) this.deps.readdLostJobs();
      // Redis went back to an older state (a failover, an older snapshot; BR-49): its lease
      // record is gone too although this session recorded it (a job removed by hand keeps it),
      // or a check already found Redis rolled back. Added again from the kept draft.
      else if (this.deps.enqueuer()?.keeps(leaseId) && (await this.lostByRollback(leaseId))) {
        void this.deps.rollback.recover(`the job of lease ${leaseId} is gone`);
      } else this.accept(resultForMissingJob(leaseId, runId, this.deps.keys.queue, this.deps.enqueuer()?.metaOf(leaseId)));
    }
  }

  /** True when the missing job of kept lease `leaseId` was lost by Redis going back to an older state (see `RollbackWatch`). */
  private async lostByRollback(leaseId: string): Promise<boolean> {
    // A check under way (started by this pass's record read) decides first.
    await this.deps.rollback.idle();
    if (this.deps.rollback.rolledBack) return true;
    return !(await this.deps.store.leaseFlags(this.deps.runId, [leaseId])).get(leaseId)?.enqueued;
  }

  /**
   * Stores an `ok` evaluation Result in the evaluation cache. The hash of a lease an earlier
   * session of the run enqueued (this one resumed it: `attach`, or the run again after a crash)
   * is read from its lease record (fresh-user report: an evaluation delivered by `resume` was run
   * and paid for again by the next identical run). A lease of a run this session made is known here.
   */
  private async cacheEvaluation(result: Result): Promise<void> {
    const { queue } = this.deps;
    let hash = this.deps.enqueuer()?.evaluationHashOf(result.leaseId) ?? queue.evaluationHashOf(result.leaseId);
    if (hash === undefined && !this.deps.madeRun()) {
      await queue.resolve([result.leaseId]);
      hash = queue.evaluationHashOf(result.leaseId);
    }
    if (hash !== undefined) await new EvaluationCache(this.deps.redis, this.deps.keys, this.deps.retainMs).store(hash, result);
  }
}
