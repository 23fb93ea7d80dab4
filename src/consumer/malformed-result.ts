import type { Job } from 'bullmq';
import { findMetaIssue, type Result } from '../spec/index.js';

/**
 * The `caller` Result (InvalidSpec) of a job whose data is not a valid RolloutSpec (another
 * client, another language), from what the data still holds (run id, task id, a valid meta).
 * `detail`: the first issues as `path: message`, for the Result and the log line. `nowMs`: the
 * time for `finishedAt`, ms since the epoch by the Redis clock (the one clock of every Result).
 */
export function malformedResult(job: Job, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>, worker: string, nowMs: number): { result: Result; detail: string } {
  const data = (job.data ?? {}) as Record<string, unknown>;
  const detail = issues.slice(0, 5).map((issue) => `${issue.path.map(String).join('.') || '(data)'}: ${issue.message}`).join('; ');
  const runId = typeof data.runId === 'string' ? data.runId : '';
  const task = data.task as Record<string, unknown> | undefined;
  const result: Result = {
    leaseId: String(job.id),
    runId,
    taskId: typeof task?.id === 'string' || typeof task?.id === 'number' ? String(task.id) : String(job.id),
    kind: 'caller',
    output: null,
    reward: null,
    error: { type: 'InvalidSpec', message: `job ${job.id} is not a valid RolloutSpec v1: ${detail}. Build jobs from schema/rollout-spec.json` },
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
  return { result, detail };
}
