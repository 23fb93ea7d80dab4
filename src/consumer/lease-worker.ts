import { Worker, type Job } from 'bullmq';

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
 */
export class LeaseWorker<DataType = unknown, ResultType = unknown> extends Worker<DataType, ResultType> {
  private readonly latest = new Map<string, LatestAttempt>();

  override async processJob(job: Job<DataType, ResultType>, token: string, fetchNextCallback?: () => boolean): Promise<void | Job<DataType, ResultType>> {
    const jobId = job.id;
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
