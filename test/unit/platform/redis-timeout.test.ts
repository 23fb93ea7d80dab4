import { describe, expect, it } from 'vitest';
import { forBullMQ, redisOptionsFromUrl } from '../../../src/platform/redis-connection.js';
import { BULLMQ_BLOCK_BOUND_MS, DEFAULT_REDIS_TIMEOUT_MS, isRedisTimeout, redisTimeoutMs, redisTimeoutOptions } from '../../../src/platform/redis-timeout.js';

// Issue 33 item 1: one setting bounds every wait on Redis.
describe('ROLLOUT_QUEUE_REDIS_TIMEOUT_MS', () => {
  it('defaults when unset or blank, and is read as whole milliseconds', () => {
    expect(redisTimeoutMs({})).toBe(DEFAULT_REDIS_TIMEOUT_MS);
    expect(redisTimeoutMs({ ROLLOUT_QUEUE_REDIS_TIMEOUT_MS: ' ' })).toBe(DEFAULT_REDIS_TIMEOUT_MS);
    expect(redisTimeoutMs({ ROLLOUT_QUEUE_REDIS_TIMEOUT_MS: '2500' })).toBe(2500);
  });

  it('refuses a value that is no timeout, naming the variable, the value, the range and the fix', () => {
    expect(() => redisTimeoutMs({ ROLLOUT_QUEUE_REDIS_TIMEOUT_MS: '5s' })).toThrow(/^ROLLOUT_QUEUE_REDIS_TIMEOUT_MS="5s": expected a whole number of milliseconds, got "5s"; unset it for the default 5000$/);
    expect(() => redisTimeoutMs({ ROLLOUT_QUEUE_REDIS_TIMEOUT_MS: '10' })).toThrow(/expected 500 to 600000 ms, got 10/);
  });

  it('gives every client connectTimeout and commandTimeout; BullMQ clients get its block bound on top', () => {
    expect(redisTimeoutOptions('command', 3000)).toEqual({ connectTimeout: 3000, commandTimeout: 3000 });
    expect(redisTimeoutOptions('bullmq', 3000)).toEqual({ connectTimeout: 3000, commandTimeout: 3000 + BULLMQ_BLOCK_BOUND_MS });
    for (const url of ['redis://127.0.0.1:6379', 'redis+cluster://a:1,b:2', 'redis+sentinel://s:26379/mymaster']) {
      const options = redisOptionsFromUrl(url);
      expect(options).toMatchObject({ connectTimeout: DEFAULT_REDIS_TIMEOUT_MS, commandTimeout: DEFAULT_REDIS_TIMEOUT_MS });
      // A BullMQ worker blocks up to 10 s in BZPOPMIN: its command timeout must outlast that.
      expect(forBullMQ(options).commandTimeout).toBe(DEFAULT_REDIS_TIMEOUT_MS + BULLMQ_BLOCK_BOUND_MS);
    }
  });

  it('recognises ioredis giving up on a command, and nothing else', () => {
    expect(isRedisTimeout(new Error('Command timed out'))).toBe(true);
    expect(isRedisTimeout(new Error('connect ETIMEDOUT'))).toBe(true);
    expect(isRedisTimeout(new Error('Connection is closed.'))).toBe(false);
    expect(isRedisTimeout(undefined)).toBe(false);
  });
});
