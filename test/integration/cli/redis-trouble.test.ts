import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
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
  let prefix: string;
  let env: Record<string, string>;
  let dir: string;
  let client: Redis;
  beforeEach(async () => {
    prefix = uniquePrefix('oom');
    env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
    dir = mkdtempSync(path.join(os.tmpdir(), 'rq-oom-'));
    client = new Redis(redis.url);
    await client.config('SET', 'maxmemory-policy', 'noeviction');
  });
  afterEach(async () => {
    await client.config('SET', 'maxmemory', '0');
    await client.config('SET', 'maxmemory-policy', 'allkeys-lru');
    client.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });
  const usedMemory = async (): Promise<number> => Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1]);
  /** Redis full: maxmemory under what it uses (noeviction, set before each test). */
  const fill = async (): Promise<void> => void (await client.config('SET', 'maxmemory', String((await usedMemory()) - 100_000)));
  /** `run` of one task per id with `artifact` (bytes of 'x'), into `out.jsonl` in the test's directory. */
  const runArgs = (runId: string, ids: readonly string[], artifactBytes: number, run: string): string[] => {
    writeFileSync(path.join(dir, 'tasks.jsonl'), ids.map((id) => `{"id":"${id}"}\n`).join(''));
    writeFileSync(path.join(dir, 'artifact.txt'), 'x'.repeat(artifactBytes));
    return ['run', '--queue', 'oomq', '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'artifact.txt'),
      '--run', run, '--reward', 'rq-fixtures/failures:constant', '--run-id', runId, '--out', path.join(dir, 'out.jsonl')];
  };

  // Fresh-user report: a new run printed "Run fd: 0 of 6 result(s), failed", a Lua script hash and
  // a `resume fd` for a run that was never made, and left an empty results file.
  it('a new `run` is refused in one line naming how to free memory; no results file, no key', async () => {
    await fill();
    const run = await runCli(runArgs('fd', ['a'], 1, 'rq-fixtures/failures:echo'), { env });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^error: Redis at redis:\/\/127\.0\.0\.1:\d+ refuses writes \(OOM\): OOM command not allowed when used memory > 'maxmemory'\. It is at maxmemory: free memory \(`.* purge --older-than 1d`/);
    expect(run.stdout).not.toContain('result(s)');
    expect(existsSync(path.join(dir, 'out.jsonl'))).toBe(false);
    expect(await client.keys(`${prefix}:*`)).toEqual([]);
  });

  // Case redis-oom-worker-error-loop: `status` (a read-only command) must still answer. Fresh-user
  // report: `purge`, the fix the OOM message named, was refused as well (its reads and deletes
  // went in MULTI transactions, which Redis refuses whole at maxmemory), so a full Redis stayed full.
  it('`status` of a run answers, and `purge` removes the finished run and frees the memory', async () => {
    const worker = startCli(['worker', '--queue', 'oomq', '--concurrency', '2', '--allow', 'rq-fixtures/*'], { env });
    try {
      const run = await runCli(runArgs('fat1', ['a', 'b', 'c'], 600_000, 'rq-fixtures/failures:reportsEnv'), { env });
      expect(run.code, run.stderr).toBe(0);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
    }
    const full = await usedMemory();
    await fill();
    // Redis is full: a write is refused.
    await expect(client.set(`${prefix}:probe`, 'x')).rejects.toThrow(/OOM/);

    const status = await runCli(['status', 'fat1', '--queue', 'oomq'], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/Run fat1: completed/);
    // Review note: cancel of the completed run failed in one OOM line; it only reads.
    const cancel = await runCli(['cancel', 'fat1', '--queue', 'oomq'], { env });
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toContain('run fat1 is already completed: nothing to cancel');

    const purge = await runCli(['purge', 'fat1', '--queue', 'oomq'], { env });
    expect(purge.code, purge.stderr).toBe(0);
    expect(purge.stdout).toContain('purged run fat1: 3 lease(s)');
    expect(await client.keys(`${prefix}:*fat1*`)).toEqual([]);
    expect(full - (await usedMemory())).toBeGreaterThan(600_000);
  });
});


