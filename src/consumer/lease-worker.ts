import { Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';
import { hostTimeOf, runScriptsOnRedisClock, type RedisTimeSource } from './bull-redis-clock.js';

/** The attempt of a job id this worker started last: its lock token and start time. */
interface LatestAttempt {
  readonly token: string;
  readonly processedOn: number | undefined;
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

  constructor(name: string, processor: Processor<DataType, ResultType>, opts: WorkerOptions, private readonly clock?: RedisTimeSource) {
    super(name, processor, opts);
    if (clock) runScriptsOnRedisClock(this.backend, clock);
  }

  /** BullMQ's wait for the next delayed job: its due time is on the Redis clock, the wait on this host's. */
  protected override getBlockTimeout(blockUntil: number): number {
    return super.getBlockTimeout(blockUntil && this.clock ? hostTimeOf(blockUntil, this.clock) : blockUntil);
  }

  override async processJob(job: Job<DataType, ResultType>, token: string, fetchNextCallback?: () => boolean): Promise<void | Job<DataType, ResultType>> {
    const jobId = job.id;
    // Redis clock (the start script's timestamp) → host clock, for BullMQ's lock renewal.
    if (this.clock && job.processedOn) job.processedOn = hostTimeOf(job.processedOn, this.clock);
    if (jobId) this.latest.set(jobId, { token, processedOn: job.processedOn });
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
