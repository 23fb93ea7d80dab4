import { parseResult, type Result } from '../spec/index.js';
import { producerResult } from './producer-result.js';
import type { JobOutcome } from './read-job-outcomes.js';
import { withMeta } from './result-meta.js';

/**
 * BullMQ's failedReason when a job stalled more often than `maxStalledCount` allows
 * (`src/commands/moveStalledJobsToWait-9.lua`, deferred failure "defa").
 */
export const STALL_LIMIT_REASON = 'job stalled more than allowable limit';

type FailedOutcome = Extract<JobOutcome, { state: 'failed' }>;

/** An `infrastructure` Result written by the producer (see {@link producerResult}). */
function plane(leaseId: string, runId: string, taskId: string, type: string, message: string): Result {
  return producerResult('infrastructure', leaseId, runId, taskId, type, message);
}

/** The task key part of a lease id `<runId>.<taskKey>`, a stand-in task id when the spec is out of reach. */
export function taskKeyOf(leaseId: string, runId: string): string {
  return leaseId.startsWith(`${runId}.`) ? leaseId.slice(runId.length + 1) : leaseId;
}

/**
 * The Result of a completed job: its `returnvalue`, checked against `ResultSchema`. A value
 * that is not a Result of this lease (a worker bug, a foreign writer) becomes an
 * `infrastructure` Result of type `BadResult` naming the first problem, so the lease still
 * ends with exactly one Result and the run goes on.
 */
export function resultFromReturnValue(leaseId: string, runId: string, returnvalue: unknown): Result {
  const parsed = parseResult(returnvalue);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.map(String).join('.') || '(value)';
    return plane(leaseId, runId, taskKeyOf(leaseId, runId), 'BadResult',
      `the worker completed lease ${leaseId} with a value that is not a Result (${where}: ${issue?.message ?? 'invalid'}); check that worker and producer share the wire version`);
  }
  if (parsed.data.leaseId !== leaseId || parsed.data.runId !== runId) {
    return plane(leaseId, runId, parsed.data.taskId, 'BadResult',
      `the worker completed lease ${leaseId} with the Result of lease ${parsed.data.leaseId} (run ${parsed.data.runId}); results are keyed by lease, so this one is refused`);
  }
  return parsed.data;
}

/**
 * The Result of a job BullMQ failed (the contract: workers complete every lease, so a failed
 * job means the plane itself gave up): `infrastructure`, error type `WorkerLost` when the
 * stall limit ended it (its message says what that means), else `WorkerError`, with BullMQ's failedReason as message.
 * `attempts` = BullMQ `attemptsStarted`; `redispatched` = the worker's count for the lease or
 * the stalls BullMQ re-queued (`stalledCounter`, less the final one when the stall limit ended
 * the job), whichever is larger (a stall the worker never saw still counts).
 * `finishedAt` = `nowMs` (the Redis clock when the coordinator read the failure), else this host's clock.
 */
export function resultFromFailedJob(leaseId: string, runId: string, outcome: FailedOutcome, nowMs?: number): Result {
  const stalled = outcome.failedReason === STALL_LIMIT_REASON;
  // BullMQ's own words for the stall limit name no cause (fresh-user report): said as the Hang case is.
  const message = stalled
    ? `the worker running lease ${leaseId} was lost more often than the re-dispatch limit allows (killed, frozen or cut off from Redis before it renewed its lock), so the lease ended (BullMQ: ${STALL_LIMIT_REASON})`
    : outcome.failedReason || 'BullMQ failed the job without a reason';
  const result = plane(leaseId, runId, outcome.taskId ?? taskKeyOf(leaseId, runId), stalled ? 'WorkerLost' : 'WorkerError', message);
  const started = outcome.processedOn;
  return withMeta({
    ...result,
    attempts: outcome.attemptsStarted,
    // BullMQ fails a job on the stall that takes `stc` past maxStalledCount (= the worker's
    // re-dispatch limit): that last loss ended the lease, it was not a re-dispatch.
    redispatched: Math.max(outcome.leaseRedispatched, stalled ? outcome.stalledCounter - 1 : outcome.stalledCounter),
    worker: outcome.processedBy,
    // BullMQ's `timestamp` is the enqueuer's clock and `processedOn` a worker's: no queuedMs
    // from them. A stalled job's `finishedOn` is the clock of whichever worker ran the stalled
    // check, so runMs only when the same worker started and failed it.
    queuedMs: null,
    runMs: !stalled && started !== null && outcome.finishedOn !== null ? Math.max(0, outcome.finishedOn - started) : null,
    finishedAt: nowMs !== undefined ? new Date(nowMs).toISOString() : result.finishedAt,
  }, outcome.meta);
}

/**
 * The Result of a lease whose job vanished while its run was still running (nothing else will
 * ever answer it), with the draft's `meta` when the coordinator still holds it (the job that
 * stored it is gone).
 */
export function resultForMissingJob(leaseId: string, runId: string, queue: string, meta?: unknown): Result {
  return withMeta(missingJob(leaseId, runId, queue), meta);
}

function missingJob(leaseId: string, runId: string, queue: string): Result {
  return plane(leaseId, runId, taskKeyOf(leaseId, runId), 'JobMissing',
    `the job of lease ${leaseId} is gone from queue "${queue}" before its Result was delivered ` +
      '(removed by hand, by obliterate/clean, by removeOnComplete/removeOnFail on a worker, or lost by a Redis that restarted without persistence: ' +
      'keep appendonly yes, as docker-compose.yml does); its result is lost, re-run the spec under a new run id');
}
