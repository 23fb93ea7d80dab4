import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// Issue 31: no --redis-url flag (env only, named only in the top-level help). Every command
// takes --redis-url and --prefix; set, they win over REDIS_URL and ROLLOUT_QUEUE_PREFIX.
let redis: TestRedis;
const NOWHERE = 'redis://127.0.0.1:1';

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

describe('--redis-url and --prefix', () => {
  it('win over REDIS_URL and ROLLOUT_QUEUE_PREFIX: a worker started with the flags is the one status sees with the flags', async () => {
    const prefix = uniquePrefix('flag');
    const worker = startCli(['worker', '--queue', 'flagq', '--name', 'flag-w1', '--redis-url', redis.url, '--prefix', prefix], {
      env: { REDIS_URL: NOWHERE, ROLLOUT_QUEUE_PREFIX: 'elsewhere' },
    });
    try {
      await waitFor(async () => {
        const seen = await runCli(['status', '--queue', 'flagq', '--json', '--redis-url', redis.url, '--prefix', prefix], { env: { REDIS_URL: NOWHERE } });
        return seen.code === 0 && seen.stdout.includes('flag-w1');
      }, 60_000, 'status --redis-url --prefix to list the worker started with the same flags');
      // The environment alone still works, and names the same queue.
      const byEnv = await runCli(['status', '--queue', 'flagq', '--json'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(byEnv.code, byEnv.stderr).toBe(0);
      expect(byEnv.stdout).toContain('flag-w1');
      // Another prefix by flag is another set of queues: the env's prefix loses.
      const otherPrefix = await runCli(['status', '--queue', 'flagq', '--json', '--prefix', `${prefix}x`], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(otherPrefix.code, otherPrefix.stderr).toBe(0);
      expect(otherPrefix.stdout).not.toContain('flag-w1');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
    }
  });

  it('a bad flag value names the flag and the fix, exit 2; a password given by flag never shows', async () => {
    const badPrefix = await runCli(['status', '--prefix', 'a:b'], { env: { REDIS_URL: redis.url } });
    expect(badPrefix.code).toBe(2);
    expect(badPrefix.stderr).toMatch(/^error: --prefix \/ ROLLOUT_QUEUE_PREFIX: prefix "a:b" may hold only letters/);
    const badUrl = await runCli(['status', '--redis-url', 'http://x'], {});
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('Pass --redis-url or set REDIS_URL, e.g. --redis-url redis://127.0.0.1:6379');
    const wrongPassword = await runCli(['status', '--redis-url', NOWHERE.replace('//', '//:flag-s3cret-pw@')], {});
    expect(wrongPassword.code).toBe(1);
    expect(wrongPassword.stderr).toContain('redis://:***@127.0.0.1:1');
    expect(wrongPassword.stderr).not.toContain('flag-s3cret-pw');
  });
});
