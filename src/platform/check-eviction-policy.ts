import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/**
 * Reads Redis' `maxmemory-policy` and warns unless it is `noeviction`: under any other policy
 * Redis may evict job hashes, run records or BullMQ's lock keys (bullmq#2215), and results are
 * silently lost. BullMQ itself only prints a console warning on connect.
 *
 * `CONFIG GET` is often refused under ACLs or on managed Redis, so `INFO memory`
 * (`maxmemory_policy:`) is the fallback. Never throws: this is advice, not a precondition.
 *
 * @returns the policy, or undefined when neither command answered.
 */
export async function checkEvictionPolicy(redis: Redis, logger: Logger): Promise<string | undefined> {
  let policy: string | undefined;
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as unknown;
    if (Array.isArray(reply) && typeof reply[1] === 'string') policy = reply[1];
  } catch {
    // refused (ACL, managed Redis); INFO below
  }
  if (policy === undefined) {
    try {
      const info = await redis.info('memory');
      policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'could not read Redis maxmemory-policy (CONFIG GET and INFO refused); make sure it is noeviction');
      return undefined;
    }
  }
  if (policy !== undefined && policy !== 'noeviction') {
    logger.warn(
      { maxmemoryPolicy: policy },
      `Redis maxmemory-policy is "${policy}"; set it to "noeviction" (redis.conf or CONFIG SET maxmemory-policy noeviction), ` +
        'or Redis may evict jobs, locks and run records and lose results',
    );
  }
  return policy;
}
