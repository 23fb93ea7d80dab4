import { createHash } from 'node:crypto';

/**
 * The run id of one dispatch: `dispatch-<32 hex>`, SHA-256 of `[runAttemptId, cellId]` as
 * JSON. Deterministic, so a retried call of the same cell attempt (from this process, a
 * restarted gateway, or two identical requests at once) names the same run and lease; the
 * hash keeps any cell id (`:`, spaces, 1 000 characters) inside the run id's safe characters
 * (`RunIdSchema`; BullMQ job ids may not hold `:`). The lease id is `<runId>.<taskKey of cellId>`.
 */
export function dispatchRunId(runAttemptId: string, cellId: string): string {
  return `dispatch-${createHash('sha256').update(JSON.stringify([runAttemptId, cellId])).digest('hex').slice(0, 32)}`;
}
