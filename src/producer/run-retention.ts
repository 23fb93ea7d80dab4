import type { Redis } from 'ioredis';
import { bullJobLogsKey, RUN_FIELDS, runOwnKeys, type QueueKeys } from '../lease/index.js';
import { leaseBullKey, type BullKeys } from './read-job-outcomes.js';

/** Default retention of a delivered run, ms: 3 days (`ProducerOptions.retainMs`, `run --retain`). */
export const DEFAULT_RETAIN_MS = 3 * 24 * 3600 * 1000;

/** Leases handled per pipeline: bounds one round trip's size. */
const BATCH = 500;

// One pipelined round trip per BATCH leases: PEXPIRE the job hash, its log list and the lease
// hash; a delivered lease also leaves BullMQ's completed and failed sets. A pipeline rather than
// one script because placed leases live in different BullMQ queues (each lease's own keys).

/** The Redis clock now, ms since the epoch (`TIME`): the one clock run timings use. */
export async function redisNowMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

async function runLeaseIds(redis: Redis, keys: QueueKeys, runId: string): Promise<{ all: string[]; delivered: Set<string>; artifacts: string[] }> {
  const replies = (await redis.multi().zrange(keys.runLeases(runId), 0, -1).smembers(keys.runDelivered(runId)).smembers(keys.runArtifacts(runId)).exec()) ?? [];
  const leases = (replies[0]?.[1] as string[] | undefined) ?? [];
  const delivered = new Set((replies[1]?.[1] as string[] | undefined) ?? []);
  return { all: [...new Set([...leases, ...delivered])], delivered, artifacts: (replies[2]?.[1] as string[] | undefined) ?? [] };
}

/**
 * Starts the retention of a run whose Results are all delivered: every key of the run expires
 * `retainMs` from now (PEXPIRE): its job hashes and their log lists, its lease hashes, its
 * artifacts and its own records. Delivered jobs also leave BullMQ's `completed` / `failed`
 * sets at once, because a set entry does not expire with its job hash and would dangle (and
 * count in `getJobCounts`) forever; until the retention ends the jobs are still readable by id
 * (`Queue.getJob`) and the run by `status RUN_ID`. Records `endedAt` (Redis clock) and `retainMs`.
 * BullMQ's own `removeOnComplete: { age }` is not used: it counts from the job's finish, not its
 * delivery, and runs only when another job finishes (BullMQ docs "Auto-removal of jobs").
 */
export async function applyRetention(redis: Redis, bull: BullKeys, keys: QueueKeys, runId: string, retainMs: number): Promise<void> {
  const { all, delivered, artifacts } = await runLeaseIds(redis, keys, runId);
  await bull.resolve?.(all);
  for (let i = 0; i < all.length; i += BATCH) {
    const pipe = redis.pipeline();
    for (const leaseId of all.slice(i, i + BATCH)) {
      const job = leaseBullKey(bull, leaseId);
      pipe.pexpire(job, retainMs).pexpire(bullJobLogsKey(job), retainMs).pexpire(keys.lease(leaseId), retainMs);
      if (delivered.has(leaseId)) pipe.zrem(leaseBullKey(bull, leaseId, 'completed'), leaseId).zrem(leaseBullKey(bull, leaseId, 'failed'), leaseId);
    }
    await pipe.exec();
  }
  const endedAt = await redisNowMs(redis);
  const tx = redis.multi().hset(keys.run(runId), RUN_FIELDS.endedAt, String(endedAt), RUN_FIELDS.retainMs, String(retainMs));
  for (const key of [...runOwnKeys(keys, runId), ...artifacts.map((sha) => keys.runArtifact(runId, sha))]) tx.pexpire(key, retainMs);
  await tx.exec();
}

/**
 * Undoes {@link applyRetention} for a run that starts again (the same run id with new drafts
 * inside its retention window): its own records and artifacts no longer expire. Job hashes
 * of leases delivered before keep their expiry: nothing reads them again.
 */
export async function persistRun(redis: Redis, keys: QueueKeys, runId: string): Promise<void> {
  const artifacts = await redis.smembers(keys.runArtifacts(runId));
  const tx = redis.multi().hdel(keys.run(runId), RUN_FIELDS.endedAt, RUN_FIELDS.retainMs);
  for (const key of [...runOwnKeys(keys, runId), ...artifacts.map((sha) => keys.runArtifact(runId, sha))]) tx.persist(key);
  await tx.exec();
}
