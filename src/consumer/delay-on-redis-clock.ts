import type { IQueueBackend, Job } from 'bullmq';

/**
 * Moves an active job to BullMQ's delayed set, due `delayMs` after `nowMs` on the Redis clock
 * (`RedisClock.nowMs()`), token-fenced as `Job.moveToDelayed` is.
 *
 * Why not `job.moveToDelayed(Date.now() + delayMs, token)`: BullMQ 6.7.0 (`dist/esm/classes/job.js`
 * `moveToDelayed`) turns the due time back into a delay against this process's `Date.now()`,
 * clamps it at 0, and the `moveToDelayed` script scores the job `now + delay` (`getDelayedScore`,
 * score = due ms × 4096 + sequence). So the due time is this worker's wall clock, and every
 * worker promotes delayed jobs by comparing that score with its own clock (`promoteDelayedJobs`
 * in `moveToActive`): a worker 10 min ahead parked every lease it handed back for 10 min for the
 * correct workers (case BR-55), one behind gave them no back-off at all. Here the script gets
 * the Redis clock as its `timestamp`, so the score is Redis time + delay: what every worker
 * with a right clock compares against.
 *
 * The call goes through the job's own backend (the job's queue and connection), which `Job`
 * keeps `protected`; `IQueueBackend.moveToDelayed(jobId, timestamp, delay, token, opts)` is
 * BullMQ's public backend interface.
 * @param nowMs Redis' time now, ms since the epoch.
 * @param delayMs back-off, ms (≥ 0).
 * @throws BullMQ's finished-errors when the lock is not ours any more (as `Job.moveToDelayed`).
 */
export async function moveToDelayedOnRedisClock(job: Job, token: string | undefined, nowMs: number, delayMs: number): Promise<void> {
  const { backend } = job as unknown as { backend: Pick<IQueueBackend, 'moveToDelayed'> };
  await backend.moveToDelayed(String(job.id), nowMs, Math.max(0, Math.round(delayMs)), token, { skipAttempt: true });
}
