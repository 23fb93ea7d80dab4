import { ErrorCode, Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';
import { isRedisTimeout } from '../platform/redis-timeout.js';
import { hostTimeOf, runScriptsOnRedisClock, type RedisTimeSource } from './bull-redis-clock.js';

/**
 * Where a finished answer goes when Redis does not take it (`KeptAnswers`, wired by the worker).
 * `silent`: Redis does not answer now (the worker's probe), so the answer is kept without a try.
 */
export interface AnswerKeeper {
  readonly silent: boolean;
  /** @returns false when the answer could not be kept (bounds reached): BullMQ's own path goes on. */
  keep(worker: Worker, job: Job, token: string, result: unknown, why: string): boolean;
}

/**
 * BullMQ refusals of a finish that leave the lease possibly nobody's: the lock expired ("Missing
 * lock", BullMQ `ErrorCode.JobLockNotExist`) or the job left `active` (`JobNotInState`, BullMQ's
 * stalled check moved it back to wait). A lock held by another token (`JobLockMismatch`) is a
 * real re-dispatch, and a missing job (`JobNotExist`) a purge: those are not kept.
 */
const KEEPABLE_CODES: ReadonlySet<number> = new Set([ErrorCode.JobLockNotExist, ErrorCode.JobNotInState]);

/** The attempt of a job id this worker started last: its lock token and start time. */
interface LatestAttempt {
  readonly token: string;
  readonly processedOn: number | undefined;
  /** BullMQ's stalled count of the job when this attempt started (see `reclaimLease`). */
  readonly stalledCount: number;
}

/**
 * BullMQ's `Worker`, except that the end of one attempt of a job never stops the lock renewal of
 * a newer attempt of the same job on this worker.
 *
 * Why: BullMQ's lock manager tracks locks by job id alone (`LockManager.trackJob` /
 * `untrackJob`, `dist/cjs/classes/lock-manager.js`), and `processJob` untracks `job.id` in its
 * `finally` whatever attempt it ran (`dist/cjs/classes/worker.js`, BullMQ 6.7.0). A lease its own
 * attempt re-dispatches (`moveToWait` / `moveToDelayed`, then `WaitingError` / `DelayedError`)
 * can be fetched again by another slot of this worker before that attempt's `processJob`
 * returns; the old attempt's `finally` then dropped the new attempt's lock from renewal, the lock
 * expired after `lockDuration`, and the new attempt was taken for stalled: re-dispatched again
 * and counted as a lost worker although nothing died.
 *
 * With a `clock` (the Redis clock), its scripts run on that clock (`runScriptsOnRedisClock`:
 * delayed-job promotion, `processedOn`, `finishedOn`), and the two in-process comparisons BullMQ
 * makes with `Date.now()` are given host times again: a job's `processedOn` for the lock renewal
 * (`LockManager` renews a lock once `processedOn + lockRenewTime/2` is past by `Date.now()`: a
 * Redis-clock time 10 min ahead of this host would never be renewed), and the due time of the
 * next delayed job for the blocking wait ({@link getBlockTimeout}).
 */
export class LeaseWorker<DataType = unknown, ResultType = unknown> extends Worker<DataType, ResultType> {
  private readonly latest = new Map<string, LatestAttempt>();
  /** Set by the worker: keeps answers Redis does not take (see {@link handleCompleted}). */
  answerKeeper: AnswerKeeper | undefined;

  constructor(name: string, processor: Processor<DataType, ResultType>, opts: WorkerOptions, private readonly clock?: RedisTimeSource) {
    super(name, processor, opts);
    if (clock) runScriptsOnRedisClock(this.backend, clock);
  }

  /** BullMQ's wait for the next delayed job: its due time is on the Redis clock, the wait on this host's. */
  protected override getBlockTimeout(blockUntil: number): number {
    return super.getBlockTimeout(blockUntil && this.clock ? hostTimeOf(blockUntil, this.clock) : blockUntil);
  }

  /** Every attempt this worker runs now, with its lock token and the job's stalled count at its start (for reclaiming their locks). */
  runningLeases(): Array<{ leaseId: string; token: string; stalledCount: number }> {
    return [...this.latest].map(([leaseId, attempt]) => ({ leaseId, token: attempt.token, stalledCount: attempt.stalledCount }));
  }

  /** The attempt of `leaseId` running here, if any. */
  attemptOf(leaseId: string): { token: string; stalledCount: number } | undefined {
    return this.latest.get(leaseId);
  }

  /**
   * BullMQ's finish of a completed attempt, except that an answer Redis does not take is kept
   * (`answerKeeper`) instead of lost: while Redis does not answer (no try: the command would time
   * out with its outcome unknown), when the finish timed out, or when BullMQ refused it because
   * the lock expired meanwhile. Without this BullMQ's fallback `moveToFailed` follows, the job sits
   * in `active` until the stalled check hands it to another worker, and the rollout runs again.
   */
  protected override async handleCompleted(
    result: ResultType,
    job: Job<DataType, ResultType>,
    token: string,
    fetchNextCallback?: () => boolean,
    span?: Parameters<Worker<DataType, ResultType>['handleCompleted']>[4],
  ): Promise<Job<DataType, ResultType>> {
    const keeper = this.answerKeeper;
    const kept = undefined as unknown as Job<DataType, ResultType>;
    if (keeper?.silent && keeper.keep(this as unknown as Worker, job as Job, token, result, 'Redis does not answer')) return kept;
    try {
      return await super.handleCompleted(result, job, token, fetchNextCallback, span);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const why = isRedisTimeout(err) ? 'the finish timed out' : typeof code === 'number' && KEEPABLE_CODES.has(code) ? `BullMQ refused the finish: ${(err as Error).message}` : undefined;
      if (keeper && why && keeper.keep(this as unknown as Worker, job as Job, token, result, why)) return kept;
      throw err;
    }
  }

  override async processJob(job: Job<DataType, ResultType>, token: string, fetchNextCallback?: () => boolean): Promise<void | Job<DataType, ResultType>> {
    const jobId = job.id;
    // Redis clock (the start script's timestamp) → host clock, for BullMQ's lock renewal.
    if (this.clock && job.processedOn) job.processedOn = hostTimeOf(job.processedOn, this.clock);
    if (jobId) this.latest.set(jobId, { token, processedOn: job.processedOn, stalledCount: job.stalledCounter ?? 0 });
    try {
      return await super.processJob(job, token, fetchNextCallback);
    } finally {
      const latest = jobId ? this.latest.get(jobId) : undefined;
      if (jobId && latest && latest.token !== token) {
        // A newer attempt runs here: track its lock again (BullMQ's finally just untracked it).
        this.lockManager.trackJob(jobId, latest.token, latest.processedOn ?? Date.now());
      } else if (jobId && latest) {
        this.latest.delete(jobId);
      }
    }
  }
}
