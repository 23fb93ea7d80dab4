import type { Redis } from 'ioredis';
import { queuesByPrefix } from '../dashboard/discover-queues.js';
import { bullEventsKey, bullMetaKey, queueKeys, RUN_FIELDS } from '../lease/index.js';
import { createRedisClient } from '../platform/redis-connection.js';
import type { CliEnvironment } from './environment.js';
import { CliError } from './errors.js';
import { MSG } from './messages.js';
import type { QueuesUsed } from './queues-used.js';

/**
 * When nothing has used `queue` under `prefix` (no BullMQ `meta` key or events stream, no run
 * set, none of `alsoKeys`): where queues were used instead (a misspelt `--queue` or prefix, most
 * often; a Redis that lost everything looks the same). Undefined when the queue was used.
 */
export async function queuesUsedInstead(
  redis: Redis,
  prefix: string,
  queue: string,
  alsoKeys: readonly string[] = [],
  scan: () => Promise<Map<string, string[]>> = () => queuesByPrefix(redis),
): Promise<QueuesUsed | undefined> {
  const traces = await redis.exists(bullMetaKey(prefix, queue), bullEventsKey(prefix, queue), queueKeys(prefix, queue).runs(), ...alsoKeys);
  if (traces > 0) return undefined;
  // One SCAN of the keyspace answers both: the queues under this prefix, else every prefix's.
  const byPrefix = await scan();
  const queues = byPrefix.get(prefix) ?? [];
  return { queues, elsewhere: queues.length > 0 ? new Map() : byPrefix };
}

/**
 * The error of a run id that is not on `queue`: `MSG.runNotFound`, naming the prefix's other
 * queues that hold the run ({@link queuesHoldingRun}), else the queues used under the prefix
 * when nothing used this one (see {@link queuesUsedInstead}; fresh-user report: `status RUN
 * --queue <typo>` said only "check the id, --queue …", while `status --queue <typo>` named the
 * used queues). A failed look adds nothing.
 * @param lost a sentence for when the queue was used and holds no such run (see `MSG.runNotFound`).
 */
export async function runNotFound(env: CliEnvironment, queue: string, runId: string, lost?: string): Promise<CliError> {
  // One connection and at most one SCAN for both looks; a failed look: the run is unknown either way.
  const { used, elsewhere } = await lookOnce(env, async (redis) => {
    let scanned: Promise<Map<string, string[]>> | undefined;
    const scan = (): Promise<Map<string, string[]>> => (scanned ??= queuesByPrefix(redis));
    return {
      used: await queuesUsedInstead(redis, env.prefix, queue, [queueKeys(env.prefix, queue).run(runId)], scan),
      elsewhere: await queuesHoldingRun(redis, env.prefix, queue, runId, scan),
    };
  }).catch(() => ({ used: undefined, elsewhere: [] }));
  return new CliError(MSG.runNotFound(runId, queue, env.prefix, used, elsewhere, lost));
}

/** The prefix's other queues that hold a run of `runId` (see {@link queuesHoldingRun}); none when the look fails. */
export async function queuesWithRun(env: CliEnvironment, queue: string, runId: string): Promise<string[]> {
  return lookOnce(env, (redis) => queuesHoldingRun(redis, env.prefix, queue, runId, () => queuesByPrefix(redis))).catch(() => []);
}

/**
 * The other queues under `prefix` (those with a BullMQ `meta` key, one SCAN) whose run record of
 * `runId` exists, i.e. has a status or a run attempt id (fresh-user report: `resume q1` of a run on
 * `--queue evals` said only "check the id, --queue…", and `status` lists the default queue's runs).
 */
async function queuesHoldingRun(redis: Redis, prefix: string, queue: string, runId: string, scan: () => Promise<Map<string, string[]>>): Promise<string[]> {
  const queues = ((await scan()).get(prefix) ?? []).filter((other) => other !== queue);
  const heads = await Promise.all(queues.map((other) => redis.hmget(queueKeys(prefix, other).run(runId), RUN_FIELDS.status, RUN_FIELDS.runAttemptId)));
  return queues.filter((_, i) => heads[i]?.some((field) => field !== null));
}

/**
 * The queues of `queues` nothing has used under the prefix (see {@link queuesUsedInstead}), each
 * with the queues used there, for the dashboard's warning (fresh-user report: `dashboard --queue
 * <typo>` showed an empty queue without a word).
 * @throws the Redis error of the look.
 */
export async function unusedQueues(env: CliEnvironment, queues: readonly string[]): Promise<Array<{ queue: string; used: QueuesUsed }>> {
  return lookOnce(env, async (redis) => {
    const unused: Array<{ queue: string; used: QueuesUsed }> = [];
    // At most one SCAN, whatever the number of queues.
    let scanned: Promise<Map<string, string[]>> | undefined;
    const scan = (): Promise<Map<string, string[]>> => (scanned ??= queuesByPrefix(redis));
    for (const queue of queues) {
      const used = await queuesUsedInstead(redis, env.prefix, queue, [], scan);
      if (used) unused.push({ queue, used });
    }
    return unused;
  });
}

/** Runs `look` on a connection of its own (one try per command), closed afterwards. */
export async function lookOnce<T>(env: CliEnvironment, look: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = createRedisClient(env.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await look(redis);
  } finally {
    redis.disconnect();
  }
}
