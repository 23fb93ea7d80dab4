import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/**
 * Thrown by {@link checkEvictionPolicy} with `refuse: true` when Redis may evict keys. The
 * message is one line naming the policy and both fixes.
 */
export class EvictionPolicyError extends Error {
  constructor(readonly policy: string) {
    super(
      `Redis maxmemory-policy is "${policy}": Redis may evict jobs, locks and run records and lose results. ` +
        'Set it to "noeviction" (redis.conf, or CONFIG SET maxmemory-policy noeviction), or pass --allow-eviction to start anyway',
    );
    this.name = 'EvictionPolicyError';
  }
}

/**
 * Reads Redis' `maxmemory-policy` and warns (or, with `refuse`, throws) unless it is
 * `noeviction`: under any other policy Redis may evict job hashes, run records or BullMQ's
 * lock keys (bullmq#2215; the `volatile-*` policies evict exactly the keys with a TTL, which
 * locks are), and results are silently lost. BullMQ itself only prints a console warning.
 *
 * `CONFIG GET` is often refused under ACLs or on managed Redis, so `INFO memory`
 * (`maxmemory_policy:`) is the fallback. A policy that cannot be read is a warning, never a
 * refusal.
 *
 * @param options.refuse throw {@link EvictionPolicyError} instead of warning (the `worker` and
 *   `run` commands unless `--allow-eviction`). Default false.
 * @returns the policy, or undefined when neither command answered.
 * @throws EvictionPolicyError with `refuse` on an evicting policy.
 */
export async function checkEvictionPolicy(redis: Redis, logger: Logger, options: { refuse?: boolean } = {}): Promise<string | undefined> {
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
    if (options.refuse) throw new EvictionPolicyError(policy);
    logger.warn(
      { maxmemoryPolicy: policy },
      `Redis maxmemory-policy is "${policy}"; set it to "noeviction" (redis.conf or CONFIG SET maxmemory-policy noeviction), ` +
        'or Redis may evict jobs, locks and run records and lose results',
    );
  }
  return policy;
}
