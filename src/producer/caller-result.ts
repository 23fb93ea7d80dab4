import type { Result } from '../spec/index.js';

/**
 * The `caller` Result the producer itself produces for a draft it refused to enqueue
 * (`InvalidSpec`, `SecretInSpec`): no worker ran it, so attempts and timings are empty.
 * `message` must name fields and variables only, never values (it is stored and logged).
 */
export function callerResult(leaseId: string, runId: string, taskId: string, type: string, message: string): Result {
  return {
    leaseId,
    runId,
    taskId,
    kind: 'caller',
    output: null,
    reward: null,
    error: { type, message: message.slice(0, 8192) },
    attempts: 0,
    redispatched: 0,
    worker: null,
    queuedMs: null,
    runMs: null,
    finishedAt: new Date().toISOString(),
    cost: [],
  };
}
