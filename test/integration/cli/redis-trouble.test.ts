import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// Issue 11, item 5: an evicting maxmemory-policy refuses `worker` and `run` at start (one line)
// unless --allow-eviction; at maxmemory `status` answers and `purge` frees memory.
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
  // Fresh-user report: a new run printed "Run fd: 0 of 6 result(s), failed", a Lua script hash and
  // a `resume fd` for a run that was never made, and left an empty results file.
  it('a new `run` is refused in one line naming how to free memory; no results file, no key', async () => {
    const prefix = uniquePrefix('oom');
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-oom-'));
    const client = new Redis(redis.url);
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    const used = Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1]);
    await client.config('SET', 'maxmemory', String(used - 100_000));
    try {
      writeFileSync(path.join(dir, 'tasks.jsonl'), '{"id":"a"}\n');
      writeFileSync(path.join(dir, 'a.txt'), 'x');
      const out = path.join(dir, 'out.jsonl');
      const run = await runCli(['run', '--queue', 'oomq', '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'a.txt'),
        '--run', 'rq-fixtures/failures:echo', '--reward', 'rq-fixtures/failures:constant', '--run-id', 'fd', '--out', out], { env });
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^error: Redis at redis:\/\/127\.0\.0\.1:\d+ refuses writes \(OOM\): OOM command not allowed when used memory > 'maxmemory'\. It is at maxmemory: free memory \(`.* purge --older-than 1d`/);
      expect(run.stdout).not.toContain('result(s)');
      expect(existsSync(out)).toBe(false);
      expect(await client.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      await client.config('SET', 'maxmemory', '0');
      await client.config('SET', 'maxmemory-policy', 'allkeys-lru');
      client.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Case redis-oom-worker-error-loop: `status` (a read-only command) must still answer. Fresh-user
  // report: `purge`, the fix the OOM message named, was refused as well (its reads and deletes
  // went in MULTI transactions, which Redis refuses whole at maxmemory), so a full Redis stayed full.
  it('`status` of a run answers, and `purge` removes the finished run and frees the memory', async () => {
    const prefix = uniquePrefix('oom');
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-oom-'));
    const client = new Redis(redis.url);
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    const worker = startCli(['worker', '--queue', 'oomq', '--concurrency', '2', '--allow', 'rq-fixtures/*'], { env });
    try {
      writeFileSync(path.join(dir, 'tasks.jsonl'), '{"id":"a"}\n{"id":"b"}\n{"id":"c"}\n');
      writeFileSync(path.join(dir, 'big.txt'), 'x'.repeat(600_000));
      const run = await runCli(['run', '--queue', 'oomq', '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'big.txt'),
        '--run', 'rq-fixtures/failures:reportsEnv', '--reward', 'rq-fixtures/failures:constant', '--run-id', 'fat1', '--out', path.join(dir, 'out.jsonl')], { env });
      expect(run.code, run.stderr).toBe(0);
      worker.child.kill('SIGTERM');
      await worker.done;
      const usedMemory = async (): Promise<number> => Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1]);
      const full = await usedMemory();
      await client.config('SET', 'maxmemory', String(full - 100_000));
      // Redis is full: a write is refused.
      await expect(client.set(`${prefix}:probe`, 'x')).rejects.toThrow(/OOM/);

      const status = await runCli(['status', 'fat1', '--queue', 'oomq'], { env });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/Run fat1: completed/);

      const purge = await runCli(['purge', 'fat1', '--queue', 'oomq'], { env });
      expect(purge.code, purge.stderr).toBe(0);
      expect(purge.stdout).toContain('purged run fat1: 3 lease(s)');
      expect(await client.keys(`${prefix}:*fat1*`)).toEqual([]);
      expect(full - (await usedMemory())).toBeGreaterThan(600_000);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
      await client.config('SET', 'maxmemory', '0');
      await client.config('SET', 'maxmemory-policy', 'allkeys-lru');
      client.disconnect();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

