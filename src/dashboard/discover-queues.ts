import type { Redis } from 'ioredis';
import { DEFAULT_QUEUE } from '../lease/index.js';

/** BullMQ keeps one `<prefix>:<queue>:meta` HASH per queue (see BullMQ `src/classes/queue-keys.ts`). */
const META_SUFFIX = ':meta';

/**
 * Names of the queues under `prefix`: the default queue plus every queue that has a BullMQ
 * `meta` key, found with SCAN (never KEYS, which blocks Redis). Sorted, default first.
 */
export async function discoverQueues(redis: Redis, prefix: string): Promise<string[]> {
  const found = new Set<string>();
  const head = `${prefix}:`;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${head}*${META_SUFFIX}`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const name = key.slice(head.length, key.length - META_SUFFIX.length);
      if (name !== '' && !name.includes(':')) found.add(name);
    }
  } while (cursor !== '0');
  found.delete(DEFAULT_QUEUE);
  return [DEFAULT_QUEUE, ...[...found].sort()];
}
