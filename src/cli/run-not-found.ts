import { queuesWithMeta } from '../dashboard/discover-queues.js';
import { bullEventsKey, bullMetaKey, queueKeys } from '../lease/index.js';
import { createRedisClient } from '../platform/redis-connection.js';
import type { CliEnvironment } from './environment.js';
import { CliError } from './errors.js';
import { MSG } from './messages.js';

/**
 * The error of a run id that is not on `queue`: `MSG.runNotFound`, plus, when nothing used the
 * queue (no BullMQ `meta` key or events stream, no run set, no record of the run: a misspelt
 * `--queue`, most often; a Redis that lost everything looks the same), the queues used under the
 * prefix (fresh-user report: `status RUN --queue <typo>` said only "check the id, --queue …",
 * while `status --queue <typo>` named the used queues). A failed look adds nothing.
 */
export async function runNotFound(env: CliEnvironment, queue: string, runId: string): Promise<CliError> {
  const redis = createRedisClient(env.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  let others: string[] | undefined;
  try {
    await redis.connect();
    const keys = queueKeys(env.prefix, queue);
    const traces = await redis.exists(bullMetaKey(env.prefix, queue), bullEventsKey(env.prefix, queue), keys.runs(), keys.run(runId));
    if (traces === 0) others = await queuesWithMeta(redis, env.prefix);
  } catch {
    // The run is unknown either way.
  } finally {
    redis.disconnect();
  }
  return new CliError(MSG.runNotFound(runId, queue, env.prefix, others));
}
