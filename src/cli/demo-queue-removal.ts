import type { Redis } from 'ioredis';
import { createRedisClient } from '../platform/redis-connection.js';

/** Keys asked for per SCAN step and removed per UNLINK. */
const SCAN_COUNT = 1000;

/**
 * Removes every key of a demo's queue from a Redis the demo did not start (`REDIS_URL`): its
 * BullMQ keys and this project's run, lease and artifact keys, all named `<prefix>:<queue>:…`.
 * The queue name is the demo's own (`demo-<random>`), served only by the demo's workers, which
 * are stopped first: nothing else reads or writes it, and left behind, an interrupted run of it
 * would stay `running` for ever with nobody to serve it, and every demo would add one more
 * queue to the dashboard's list. A Cluster is scanned node by node (SCAN sees one node's keys).
 * @returns how many keys were removed.
 * @throws the Redis error when a SCAN or UNLINK fails.
 */
export async function removeDemoQueue(redisUrl: string, prefix: string, queue: string): Promise<number> {
  const client = createRedisClient(redisUrl, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    const nodes = 'nodes' in client && typeof client.nodes === 'function' ? (client.nodes('master') as Redis[]) : [client];
    let removed = 0;
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${escapeGlob(`${prefix}:${queue}:`)}*`, 'COUNT', SCAN_COUNT);
        cursor = next;
        // One UNLINK per key: in a Cluster the keys of one SCAN step may sit in different slots.
        if (keys.length > 0) removed += (await Promise.all(keys.map((key) => node.unlink(key)))).reduce((sum, n) => sum + n, 0);
      } while (cursor !== '0');
    }
    return removed;
  } finally {
    client.disconnect();
  }
}

/** `text` with Redis glob characters (`* ? [ ] \`) escaped, matching itself only. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
