import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { killLeftovers, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// Issue 11, item 5: an evicting maxmemory-policy refuses `worker` and `run` at start (one line)
// unless --allow-eviction; Redis at maxmemory makes `status` answer or fail in one line.
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ private: true, args: ['--maxmemory-policy', 'allkeys-lru'] });
});
afterAll(async () => {
  await redis.stop();
});
afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

const oneErrorLine = (stderr: string): string[] => stderr.split('\n').filter((line) => line.trim() !== '');

describe('an evicting maxmemory-policy', () => {
  it('`worker` refuses to start in one line naming the policy and both fixes; --allow-eviction starts it', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('evw') };
    const refused = await runCli(['worker', '--queue', 'ev'], { env: { ...env, LOG_LEVEL: 'error' } });
    expect(refused.code).toBe(1);
    expect(oneErrorLine(refused.stderr)).toEqual([
      'error: Redis maxmemory-policy is "allkeys-lru": Redis may evict jobs, locks and run records and lose results. ' +
        'Set it to "noeviction" (redis.conf, or CONFIG SET maxmemory-policy noeviction), or pass --allow-eviction to start anyway',
    ]);
    const allowed = startCli(['worker', '--queue', 'ev', '--allow-eviction'], { env: { ...env, LOG_LEVEL: 'info' } });
    await waitFor(() => allowed.stderr().includes('"worker running"'), 30_000, 'worker running');
    expect(allowed.stderr()).toContain('maxmemory-policy is \\"allkeys-lru\\"');
    allowed.child.kill('SIGTERM');
    expect((await allowed.done).code).toBe(0);
  });

  it('`run` refuses before enqueuing anything', async () => {
    const prefix = uniquePrefix('evr');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-evict-'));
    writeFileSync(path.join(dir, 'tasks.jsonl'), '{"id":"a","answer":1}\n');
    writeFileSync(path.join(dir, 'main.js'), 'console.log(1)\n');
    const refused = await runCli(
      ['run', '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'main.js'), '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--queue', 'ev'],
      { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } },
    );
    expect(refused.code).toBe(1);
    expect(oneErrorLine(refused.stderr)).toHaveLength(1);
    expect(refused.stderr).toContain('--allow-eviction');
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    const client = new Redis(redis.url);
    try {
      expect(await client.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      client.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Redis at maxmemory', () => {
  it('`status` answers, or fails in one line naming the refusal (no stack)', async () => {
    const q = new RawQueue(redis.url);
    await q.add([makeSpec('oom1', 't1')]);
    const used = Number(/^used_memory:(\d+)/m.exec(await q.redis.info('memory'))?.[1]);
    await q.redis.config('SET', 'maxmemory-policy', 'noeviction');
    await q.redis.config('SET', 'maxmemory', String(used - 100_000));
    try {
      const status = await runCli(['status', 'oom1', '--queue', q.name], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX } });
      expect(status.stderr).not.toMatch(/\n\s+at /);
      if (status.code !== 0) {
        expect(status.code).toBe(1);
        expect(oneErrorLine(status.stderr)).toHaveLength(1);
        expect(status.stderr).toMatch(/^error: Redis at redis:\/\/127\.0\.0\.1:\d+ refuses writes \(OOM\): OOM command not allowed/);
      }
    } finally {
      await q.redis.config('SET', 'maxmemory', '0');
      await q.redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await q.close();
    }
  });
});
