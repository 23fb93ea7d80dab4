import type { Redis } from 'ioredis';

/** The BullMQ pieces this needs: a `Queue` has them (`toKey('wait')`, `remove`). */
export interface RemovableQueue {
  toKey(type: string): string;
  remove(jobId: string): Promise<number>;
  /** Placement queues of the same base queue (`PlacementQueues`): their waiting jobs are removed too. */
  knownQueueNames?(): Promise<string[]>;
  queue?(name: string): { toKey(type: string): string; remove(jobId: string): Promise<number> };
}

/** Wait-list entries read per LRANGE page. */
const PAGE = 10_000;
/** Concurrent BullMQ remove calls (each is one Lua script; ioredis pipelines them). */
const PARALLEL = 64;
/** Scans of the wait list at most (see below). */
const MAX_ROUNDS = 5;

/**
 * Removes the run's jobs that are still waiting (never its active, completed or failed ones)
 * and returns their lease ids.
 *
 * The run's jobs are found by their id prefix `<runId>.` in BullMQ's `wait` list (6.x keeps
 * paused queues' jobs there too; a job handed back or stalled goes there) and its `prioritized`
 * ZSET (where fair share puts every new job, `fair-share.ts`). Each one goes through BullMQ's own `Queue.remove` script, which refuses a
 * job that holds a lock: a job a worker picked up in between stays and finishes normally.
 * (A job that is picked up AND finishes between the LRANGE and its remove would be removed
 * with its result; a rollout takes far longer than that window.)
 */
export async function removeWaitingJobs(redis: Redis, queue: RemovableQueue, runId: string): Promise<string[]> {
  if (!queue.knownQueueNames || !queue.queue) return removeWaitingIn(redis, queue, runId);
  const removed: string[] = [];
  for (const name of await queue.knownQueueNames()) removed.push(...(await removeWaitingIn(redis, queue.queue(name), runId)));
  return removed;
}

async function removeWaitingIn(redis: Redis, queue: { toKey(type: string): string; remove(jobId: string): Promise<number> }, runId: string): Promise<string[]> {
  const removed: string[] = [];
  // A wait list longer than one page shifts while it is paged (workers pop, other runs push),
  // so scan again while the previous scan found something; a short list is read atomically.
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const listed = await findWaiting(redis, queue.toKey('wait'), `${runId}.`);
    const ranked = await findWaiting(redis, queue.toKey('prioritized'), `${runId}.`, true);
    const ids = [...listed.ids, ...ranked.ids];
    const paged = listed.paged || ranked.paged;
    for (let i = 0; i < ids.length; i += PARALLEL) {
      const chunk = ids.slice(i, i + PARALLEL);
      const codes = await Promise.all(chunk.map((id) => queue.remove(id)));
      chunk.forEach((id, j) => {
        if (codes[j] === 1) removed.push(id);
      });
    }
    if (ids.length === 0 || !paged) break;
  }
  return removed;
}

/** Ids starting with `prefix` in a LIST (`wait`), or a ZSET (`prioritized`, `zset` true), paged. */
async function findWaiting(redis: Redis, waitKey: string, prefix: string, zset = false): Promise<{ ids: string[]; paged: boolean }> {
  const ids: string[] = [];
  for (let start = 0; ; start += PAGE) {
    const page = zset ? await redis.zrange(waitKey, start, start + PAGE - 1) : await redis.lrange(waitKey, start, start + PAGE - 1);
    for (const id of page) if (id.startsWith(prefix)) ids.push(id);
    if (page.length < PAGE) return { ids, paged: start > 0 };
  }
}
