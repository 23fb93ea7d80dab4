import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { DEFAULT_RUN_WEIGHT, readWeights } from './fair-share.js';

/** One run's share of a queue's workers, as `status` shows it. */
export interface RunShareStatus {
  readonly runId: string;
  /** The weight it enqueued with (`MapRolloutsOptions.weight`); 1 when not recorded. */
  readonly weight: number;
  /** Its jobs waiting for a worker (BullMQ `wait` and `prioritized`), over every placement queue. */
  readonly waiting: number;
  /** Its jobs a worker runs now (BullMQ `active`). */
  readonly active: number;
  /** `active` as a fraction of every run's active jobs on the queue (0–1; 0 when none runs). */
  readonly activeShare: number;
  /** `weight` as a fraction of the weights of the runs listed (what fair share aims `activeShare` at while all have work waiting). */
  readonly fairShare: number;
}

/** What this needs of `PlacementQueues`: the queue names and each one's BullMQ key builder. */
export interface ShareQueues {
  knownQueueNames(): Promise<string[]>;
  queue(name: string): { toKey(type: string): string };
}

/** A run id is the lease id up to its first `.` (run ids hold no `.`: `RunIdSchema`). */
const runIdOf = (leaseId: string): string => leaseId.slice(0, Math.max(0, leaseId.indexOf('.')));

/**
 * Every run with jobs waiting or active on the queue (all its placement queues), with its weight
 * and its share of the active jobs, most active first. Reads every waiting and active job id
 * (one pipeline per queue: the ids only, bounded by the runs' `maxInFlight` windows), so it is
 * meant for `status`, not for a hot path. Jobs other clients added under ids that name no run
 * (`<runId>.<taskKey>`) are left out.
 * @throws a Redis error.
 */
export async function readRunShares(redis: Redis, queues: ShareQueues, keys: QueueKeys): Promise<RunShareStatus[]> {
  const counts = new Map<string, { waiting: number; active: number; weight: number | undefined }>();
  const entry = (runId: string): { waiting: number; active: number; weight: number | undefined } => {
    let found = counts.get(runId);
    if (!found) counts.set(runId, (found = { waiting: 0, active: 0, weight: undefined }));
    return found;
  };
  for (const name of await queues.knownQueueNames()) {
    const queue = queues.queue(name);
    const replies = (await redis.pipeline()
      .lrange(queue.toKey('wait'), 0, -1)
      .zrange(queue.toKey('prioritized'), 0, -1)
      .lrange(queue.toKey('active'), 0, -1)
      .exec()) ?? [];
    const [wait, prioritized, active] = replies.map(([err, ids]) => {
      if (err) throw err;
      return ids as string[];
    });
    for (const id of [...(wait ?? []), ...(prioritized ?? [])]) if (id.includes('.')) entry(runIdOf(id)).waiting++;
    for (const id of active ?? []) if (id.includes('.')) entry(runIdOf(id)).active++;
    for (const [runId, weight] of await readWeights(redis, keys.fairShare(name))) {
      const found = counts.get(runId);
      if (found) found.weight = weight;
    }
  }
  const totalActive = [...counts.values()].reduce((sum, run) => sum + run.active, 0);
  const totalWeight = [...counts.values()].reduce((sum, run) => sum + (run.weight ?? DEFAULT_RUN_WEIGHT), 0);
  return [...counts].map(([runId, run]) => {
    const weight = run.weight ?? DEFAULT_RUN_WEIGHT;
    return { runId, weight, waiting: run.waiting, active: run.active, activeShare: totalActive > 0 ? run.active / totalActive : 0, fairShare: weight / totalWeight };
  }).sort((a, b) => b.active - a.active || b.waiting - a.waiting || a.runId.localeCompare(b.runId));
}
