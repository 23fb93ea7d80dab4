/**
 * Redis Cluster hashes a key to one of 16 384 slots by its hash tag: the part between the first
 * `{` and the next `}`, when not empty, else the whole key (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags).
 * BullMQ's Lua scripts and our MULTIs touch several keys of a queue at once, which Cluster allows
 * only within one slot (else CROSSSLOT). Every key of a queue starts with `<prefix>:<queue>:`
 * (BullMQ `src/classes/queue-keys.ts`, ours in `keys.ts`), so a hash tag in the prefix (`{rq}`)
 * or in the queue name puts them all in one slot.
 */

/** The hash tag of `key`, or undefined when it has none (Cluster then hashes the whole key). */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/**
 * Why `prefix` and `queue` cannot run on Redis Cluster, or undefined when every key of the
 * queue shares one slot (the `<prefix>:<queue>:` head of every key holds a hash tag).
 */
export function clusterPrefixProblem(prefix: string, queue: string): string | undefined {
  if (hashTagOf(`${prefix}:${queue}:`) !== undefined) return undefined;
  return `prefix "${prefix}" with queue "${queue}" has no hash tag, so on Redis Cluster the queue's keys land in different slots (CROSSSLOT); ` +
    `use a hash-tagged prefix such as "{${prefix.replace(/[{}]/g, '') || 'rq'}}" (ROLLOUT_QUEUE_PREFIX)`;
}
