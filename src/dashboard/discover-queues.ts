import { Cluster, type Redis } from 'ioredis';
import { ANY_QUEUE_META_PATTERN, DEFAULT_QUEUE, queueMetaPattern, queueNameOfMetaKey, queueOfMetaKey } from '../lease/index.js';

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
  await scanKeys(redis, queueMetaPattern(prefix), (key) => {
    const name = queueNameOfMetaKey(prefix, key);
    if (name) found.add(name);
  });
  return [...found].sort();
}

/**
 * Every prefix with a queue that has a BullMQ `meta` key, with those queues (sorted), for naming
 * where queues were used when nothing was under a (misspelt) prefix. SCAN, as {@link queuesWithMeta}.
 */
export async function queuesByPrefix(redis: Redis): Promise<Map<string, string[]>> {
  const found = new Map<string, Set<string>>();
  await scanKeys(redis, ANY_QUEUE_META_PATTERN, (key) => {
    const meta = queueOfMetaKey(key);
    if (meta) found.set(meta.prefix, (found.get(meta.prefix) ?? new Set()).add(meta.queue));
  });
  return new Map([...found].sort(([a], [b]) => a.localeCompare(b)).map(([prefix, queues]) => [prefix, [...queues].sort()]));
}

/** Calls `onKey` for every key matching `pattern`, with SCAN on every primary (on Redis Cluster each holds a share of the keys). */
async function scanKeys(redis: Redis, pattern: string, onKey: (key: string) => void): Promise<void> {
  const client = redis as unknown;
  const nodes = client instanceof Cluster ? client.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) onKey(key);
    } while (cursor !== '0');
  }
}
