import type { Result, ResultKind } from '../spec/index.js';

/** Longest error message a Result may carry (`ErrorInfoSchema`: `message` max 8192). */
const MAX_MESSAGE_CHARS = 8192;

/**
 * A Result the producer writes itself because no worker returned one: a draft it refused to
 * enqueue (`caller`, see `callerResult`; `model` for a bad file inside `rendered.files`) or a lease the plane gave up on (`infrastructure`,
 * see `result-from-job.ts`). No output, no reward, `error` = `{ type, message }` with the
 * message cut to 8192 characters; `attempts`, `redispatched`, `worker` and timings are empty
 * and `finishedAt` is now, for the caller to overwrite with what it knows.
 * `message` must name fields and variables only, never values (it is stored and logged).
 */
export function producerResult(
  kind: Exclude<ResultKind, 'ok'>,
  leaseId: string,
  runId: string,
  taskId: string,
  type: string,
  message: string,
): Result {
  return {
    leaseId,
    runId,
    taskId,
    kind,
    output: null,
    reward: null,
    error: { type, message: message.slice(0, MAX_MESSAGE_CHARS) },
    attempts: 0,
    redispatched: 0,
    worker: null,
    queuedMs: null,
    runMs: null,
    finishedAt: new Date().toISOString(),
    cost: [],
  };
}
