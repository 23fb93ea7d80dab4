import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/**
 * Warns when Redis may evict keys. BullMQ needs `maxmemory-policy noeviction`: an evicted
 * job or lock key loses work silently. BullMQ itself only prints a warning on connect
 * (BullMQ `src/classes/redis-connection.ts`); we log it as a structured line too.
 * Reads `INFO memory`, which works where `CONFIG GET` is refused (managed Redis, ACLs).
 * @returns the policy, or undefined when it could not be read.
 */
export async function warnUnlessNoEviction(redis: Redis, logger: Logger): Promise<string | undefined> {
  try {
    const info = await redis.info('memory');
    const policy = /maxmemory_policy:(\S+)/.exec(info)?.[1];
    if (policy && policy !== 'noeviction') {
      logger.warn({ maxmemoryPolicy: policy }, `Redis maxmemory-policy is "${policy}"; set it to "noeviction" or Redis may evict queued rollouts and locks`);
    }
    return policy;
  } catch {
    return undefined;
  }
}
