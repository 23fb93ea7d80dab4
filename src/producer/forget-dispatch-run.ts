import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { runOwnKeys, type QueueKeys } from '../lease/index.js';

/**
 * Deletes what one delivered dispatch left in Redis: its BullMQ job (BullMQ's own
 * `Queue.remove`, which refuses a job that is still locked by a worker) and the run's
 * bookkeeping (every key of `runOwnKeys`, its stored artifacts, the `runs` member, the worker's
 * `lease` hash with its receipts). The answer key (`dispatchAnswer`, with a TTL) stays.
 * @returns false when the job is still active (an aborted dispatch whose worker has not
 *   stopped yet): nothing was deleted, try again later.
 */
export async function forgetDispatchRun(redis: Redis, queue: Queue, keys: QueueKeys, runId: string, leaseId: string): Promise<boolean> {
  const removed = await queue.remove(leaseId);
  if (removed === 0 && (await redis.exists(queue.toKey(leaseId))) === 1) return false;
  const artifacts = await redis.smembers(keys.runArtifacts(runId));
  await redis
    .multi()
    .del(...runOwnKeys(keys, runId), ...artifacts.map((sha) => keys.runArtifact(runId, sha)), keys.lease(leaseId))
    .srem(keys.runs(), runId)
    .exec();
  return true;
}
