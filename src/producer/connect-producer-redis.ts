import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';
import { createRedisClient, missingDatabase, redactRedisUrl } from '../platform/redis-connection.js';

/** Least time between two logged Redis connection errors, in ms (ioredis reports every retry). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * Opens the producer's command connection and waits for it to be ready.
 *
 * Why not BullMQ's producer advice (`enableOfflineQueue: false`, fail fast when Redis is
 * down; docs "patterns/failing-fast-when-redis-is-down"): a coordinator runs for hours and
 * must survive a Redis restart mid-run. So after the first connection, ioredis reconnects
 * forever with capped backoff (100 ms doubling to 5 s, `redisOptionsFromUrl`), commands issued
 * meanwhile wait in the offline queue (`maxRetriesPerRequest: null`), and the run simply
 * continues once Redis is back (AOF keeps jobs and run records). Only the FIRST connection
 * fails fast, after `connectTimeoutMs`, because then the address is most likely wrong.
 *
 * Errors are logged with the redacted address at most every 10 s, never with the password.
 * @throws Error naming the redacted address when Redis did not answer within `connectTimeoutMs`,
 *   or has no database of the URL's number (`missingDatabase`).
 */
export async function connectProducerRedis(url: string, connectTimeoutMs: number, logger: Logger): Promise<Redis> {
  const address = redactRedisUrl(url);
  const redis = createRedisClient(url, { enableOfflineQueue: true, lazyConnect: true, connectionName: 'rollout-queue:producer' });
  let lastError: Error | undefined;
  let lastLoggedAt = 0;
  redis.on('error', (err: Error) => {
    lastError = err;
    if (Date.now() - lastLoggedAt >= ERROR_LOG_INTERVAL_MS) {
      lastLoggedAt = Date.now();
      logger.warn({ redis: address, err: err.message }, 'Redis connection error; reconnecting');
    }
  });
  redis.on('ready', () => {
    if (lastLoggedAt > 0) logger.info({ redis: address }, 'Redis connection ready again');
  });

  let timer: NodeJS.Timeout | undefined;
  const ready = new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`cannot reach Redis at ${address} within ${connectTimeoutMs} ms (${lastError?.message ?? 'no answer'}); check REDIS_URL / redisUrl and that Redis is running`)),
      connectTimeoutMs,
    );
  });
  // connect() rejects on the first failed attempt although ioredis keeps retrying; 'ready' decides.
  redis.connect().catch(() => undefined);
  try {
    await Promise.race([ready, timeout]);
    const missing = await missingDatabase(redis, address);
    if (missing !== undefined) throw new Error(missing);
  } catch (err) {
    redis.disconnect();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return redis;
}
