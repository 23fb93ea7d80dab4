import { Cluster, type Redis } from 'ioredis';
import { DEFAULT_QUEUE, queueMetaPattern, queueNameOfMetaKey } from '../lease/index.js';

/**
 * Names of the queues under `prefix`: the default queue plus every queue that has a BullMQ
 * `meta` key (see {@link queuesWithMeta}). Sorted, default first.
 */
export async function discoverQueues(redis: Redis, prefix: string): Promise<string[]> {
  const found = new Set(await queuesWithMeta(redis, prefix));
  found.delete(DEFAULT_QUEUE);
  return [DEFAULT_QUEUE, ...found];
}

/**
 * Names of the queues under `prefix` that have a BullMQ `meta` key (a coordinator opened them),
 * found with SCAN (never KEYS, which blocks Redis) on every primary. Sorted.
 */
export async function queuesWithMeta(redis: Redis, prefix: string): Promise<string[]> {
  const found = new Set<string>();
  // SCAN walks one node's keys; on Redis Cluster every primary holds a share of them.
  const client = redis as unknown;
  const nodes = client instanceof Cluster ? client.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', queueMetaPattern(prefix), 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const name = queueNameOfMetaKey(prefix, key);
        if (name) found.add(name);
      }
    } while (cursor !== '0');
  }
  return [...found].sort();
}
