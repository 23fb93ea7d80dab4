import type { Redis } from 'ioredis';
import { queuesWithMeta } from '../dashboard/discover-queues.js';
import { bullEventsKey, bullMetaKey, queueKeys } from '../lease/index.js';
import { createRedisClient } from '../platform/redis-connection.js';
import type { CliEnvironment } from './environment.js';
import { CliError } from './errors.js';
import { MSG } from './messages.js';

/**
 * When nothing has used `queue` under `prefix` (no BullMQ `meta` key or events stream, no run
 * set, none of `alsoKeys`): the queues that were used there (a misspelt `--queue`, most often; a
 * Redis that lost everything looks the same). Undefined when the queue was used.
 */
export async function queuesUsedInstead(redis: Redis, prefix: string, queue: string, alsoKeys: readonly string[] = []): Promise<string[] | undefined> {
  const traces = await redis.exists(bullMetaKey(prefix, queue), bullEventsKey(prefix, queue), queueKeys(prefix, queue).runs(), ...alsoKeys);
  return traces === 0 ? queuesWithMeta(redis, prefix) : undefined;
}

/**
 * The error of a run id that is not on `queue`: `MSG.runNotFound`, naming the queues used under
 * the prefix when nothing used this one (see {@link queuesUsedInstead}; fresh-user report:
 * `status RUN --queue <typo>` said only "check the id, --queue …", while `status --queue <typo>`
 * named the used queues). A failed look adds nothing.
 */
export async function runNotFound(env: CliEnvironment, queue: string, runId: string): Promise<CliError> {
  const redis = createRedisClient(env.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  let others: string[] | undefined;
  try {
    await redis.connect();
    others = await queuesUsedInstead(redis, env.prefix, queue, [queueKeys(env.prefix, queue).run(runId)]);
  } catch {
    // The run is unknown either way.
  } finally {
    redis.disconnect();
  }
  return new CliError(MSG.runNotFound(runId, queue, env.prefix, others));
}
