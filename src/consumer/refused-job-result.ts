import type { Job } from 'bullmq';
import { findMetaIssue, type CallerResult, type ErrorInfo } from '../spec/index.js';

/**
 * The `caller` Result of a job refused before it was parsed as a spec (malformed: another
 * client, another language; oversized: past the worker's `maxSpecBytes`), from what the data
 * still holds (run id, task id, a valid meta). `error`: what was wrong (`InvalidSpec`,
 * `SpecTooLarge`). `nowMs`: the time for `finishedAt`, ms since the epoch by the Redis clock
 * (the one clock of every Result's timings).
 */
export function refusedJobResult(job: Job, error: ErrorInfo, worker: string, nowMs: number): CallerResult {
  const data = (job.data ?? {}) as Record<string, unknown>;
  const runId = typeof data.runId === 'string' ? data.runId : '';
  const task = data.task as Record<string, unknown> | undefined;
  const result: CallerResult = {
    leaseId: String(job.id),
    runId,
    taskId: typeof task?.id === 'string' || typeof task?.id === 'number' ? String(task.id) : String(job.id),
    kind: 'caller',
    output: null,
    reward: null,
    error,
    attempts: job.attemptsStarted || 1,
    redispatched: 0,
    worker,
    // BullMQ's timestamp (the enqueuer's clock) and processedOn (ours) are two clocks: no queuedMs.
    queuedMs: null,
    runMs: null,
    finishedAt: new Date(nowMs).toISOString(),
    cost: [],
  };
  // A valid tag still ties the refusal to its candidate; a bad one is among the issues named.
  if (data.meta !== undefined && !findMetaIssue(data.meta)) result.meta = data.meta;
  return result;
}

/** The error of a job over the worker's `maxSpecBytes` (`limitBytes`, of its JSON data), and its fix. */
export function specTooLargeError(jobId: string | undefined, limitBytes: number): ErrorInfo {
  return {
    type: 'SpecTooLarge',
    message: `job ${jobId} is over this worker's maxSpecBytes = ${limitBytes} bytes of JSON data, so it was not run; ` +
      "keep large inputs out of the job (a producer stores a large artifact once and sends its hash; put big task data in a file or object storage and pass its address), or raise the worker's --max-spec-bytes",
  };
}

/** The error of a job whose data is not a RolloutSpec, and `detail`: its first issues as `path: message` (for the log line too). */
export function invalidSpecError(jobId: string | undefined, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): { error: ErrorInfo; detail: string } {
  const detail = issues.slice(0, 5).map((issue) => `${issue.path.map(String).join('.') || '(data)'}: ${issue.message}`).join('; ');
  return { error: { type: 'InvalidSpec', message: `job ${jobId} is not a valid RolloutSpec v1: ${detail}. Build jobs from schema/rollout-spec.json` }, detail };
}
