import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { readResults, resultLineCount } from './results-file.js';

// Issue 33 items 1 and 2, case BR-46: Redis frozen (SIGSTOP) mid-run, a partition that drops
// packets: connections stay open and nothing answers. /healthz must say 503, `status` must fail in
// one line naming Redis and the wait instead of hanging, and after SIGCONT every lease is
// delivered once and no rollout that finished during the freeze runs again (each execution
// leaves a start and an end line in a log file, counted per task).
const TASKS = 12;
const QUEUE = 'freezeq';
let redis: TestRedis;
let dir: string;

beforeAll(async () => {
  redis = await startRedis({ private: true });
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-freeze-'));
});
afterAll(async () => {
  redis.thaw?.();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  redis.thaw?.();
  expect(await killLeftovers()).toEqual([]);
});

/** The status of GET /healthz on `port`, or 0 when it did not answer within 2 s (as a probe's `curl -m 2`). */
async function health(port: number): Promise<number> {
  return fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then((res) => res.status, () => 0);
}

/** Executions per task from the run function's log: `start`/`end` lines with their epoch ms. */
function executions(logFile: string): Array<{ what: 'start' | 'end'; taskId: string; atMs: number }> {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8').split('\n').filter((line) => line !== '').map((line) => {
    const [what, taskId, , atMs] = line.split(' ');
    return { what: what as 'start' | 'end', taskId: taskId as string, atMs: Number(atMs) };
  });
}

describe('Redis frozen (SIGSTOP) mid-run', () => {
  it('healthz 503 and `status` one line while frozen; after SIGCONT every lease once and no finished rollout runs again', async () => {
    const prefix = uniquePrefix('freeze');
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
    const logFile = path.join(dir, 'exec.log');
    const out = path.join(dir, 'out.jsonl');
    writeFileSync(path.join(dir, 'tasks.jsonl'), Array.from({ length: TASKS }, (_, i) => `${JSON.stringify({ id: `t${i + 1}`, delayMs: 1500, logFile })}\n`).join(''));
    writeFileSync(path.join(dir, 'artifact.txt'), 'unused by logsExecution\n');
    const ports = [await freePort(), await freePort()];
    const workers: CliProcess[] = ports.map((port, i) =>
      startCli(['worker', '--queue', QUEUE, '--concurrency', '2', '--name', `fz-w${i + 1}`, '--allow', 'rq-fixtures/*', '--metrics-port', String(port)], { env: { ...env, LOG_LEVEL: 'info' } }),
    );
    let coordinator: CliProcess | undefined;
    try {
      await waitFor(async () => (await Promise.all(ports.map(health))).every((code) => code === 200), 60_000, 'both workers healthy');
      coordinator = startCli(
        ['run', '--queue', QUEUE, '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'artifact.txt'),
          '--run', 'rq-fixtures/failures:logsExecution', '--reward', 'rq-fixtures/failures:constant', '--run-id', 'fz', '--out', out],
        { env },
      );
      // Freeze with results delivered and rollouts in flight: those finish while Redis is frozen.
      const inFlight = (): number => executions(logFile).reduce((sum, e) => sum + (e.what === 'start' ? 1 : -1), 0);
      await waitFor(() => resultLineCount(out) >= 2 && inFlight() >= 2, 120_000, 'results delivered and rollouts in flight');
      const frozenAtMs = Date.now();
      redis.freeze?.();
      const status = startCli(['status', 'fz', '--queue', QUEUE], { env });
      // A generous outer bound only: before issue 33 `status` never answered at all.
      const killer = setTimeout(() => status.child.kill('SIGKILL'), 90_000);
      await waitFor(async () => (await Promise.all(ports.map(health))).every((code) => code === 503), 60_000, '/healthz 503 on both workers while Redis is frozen');
      const told = await status.done;
      clearTimeout(killer);
      expect(told.signal, 'status hung until the outer kill').toBeNull();
      expect(told.code).toBe(1);
      const lines = told.stderr.split('\n').filter((line) => line.trim() !== '');
      expect(lines).toEqual([expect.stringMatching(/^error: Redis at redis:\/\/127\.0\.0\.1:\d+ did not answer within 5000 ms \(ROLLOUT_QUEUE_REDIS_TIMEOUT_MS \/ --redis-timeout-ms\)/)]);
      // Every rollout that was in flight has finished, with Redis still frozen.
      await waitFor(() => inFlight() === 0, 60_000, 'the in-flight rollouts to finish during the freeze');
      const thawedAtMs = Date.now();
      redis.thaw?.();
      const end = await coordinator.done;
      expect(end.code, end.stderr).toBe(0);

      const results = readResults(out);
      expect(results).toHaveLength(TASKS);
      expect(new Set(results.map((line) => line.leaseId)).size).toBe(TASKS);
      expect(results.every((line) => line.kind === 'ok')).toBe(true);
      const log = executions(logFile);
      const startsPerTask = new Map<string, number>();
      for (const entry of log.filter((e) => e.what === 'start')) startsPerTask.set(entry.taskId, (startsPerTask.get(entry.taskId) ?? 0) + 1);
      // Exactly one execution per task: the rollouts that finished during the freeze did not run again.
      expect([...startsPerTask.entries()].filter(([, count]) => count !== 1)).toEqual([]);
      expect(startsPerTask.size).toBe(TASKS);
      expect(log.filter((e) => e.what === 'end')).toHaveLength(TASKS);
      expect(log.filter((e) => e.what === 'end' && e.atMs > frozenAtMs && e.atMs < thawedAtMs).length).toBeGreaterThan(0);

      await waitFor(async () => (await Promise.all(ports.map(health))).every((code) => code === 200), 60_000, '/healthz 200 again after SIGCONT');
      const logs = workers.map((worker) => worker.stderr() + worker.stdout()).join('\n');
      expect(logs).toContain('answers again after');
      // No other attempt existed, so none may be blamed.
      expect(logs).not.toContain('belongs to another attempt');
      expect(logs).not.toContain('late answer dropped');
    } finally {
      redis.thaw?.();
      coordinator?.child.kill('SIGTERM');
      for (const worker of workers) worker.child.kill('SIGTERM');
      const ends = await Promise.all(workers.map((worker) => worker.done));
      await coordinator?.done;
      expect(ends.map((e) => e.code)).toEqual([0, 0]);
    }
  });

  // "Rollouts already running keep running": their locks expire while Redis is frozen (Redis counts
  // the frozen time); without a reclaim the first renewal after the wake fails and the rollout is
  // aborted and run again from the start.
  it('rollouts running through the freeze keep their leases and run once', async () => {
    const prefix = uniquePrefix('freezerun');
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
    const logFile = path.join(dir, 'exec-running.log');
    const releaseFile = path.join(dir, 'release-running');
    const out = path.join(dir, 'out-running.jsonl');
    const count = 4;
    writeFileSync(path.join(dir, 'tasks-running.jsonl'), Array.from({ length: count }, (_, i) => `${JSON.stringify({ id: `r${i + 1}`, logFile, releaseFile })}\n`).join(''));
    writeFileSync(path.join(dir, 'artifact.txt'), 'unused by logsExecution\n');
    const ports = [await freePort(), await freePort()];
    const workers: CliProcess[] = ports.map((port, i) =>
      startCli(['worker', '--queue', QUEUE, '--concurrency', '2', '--name', `fr-w${i + 1}`, '--allow', 'rq-fixtures/*', '--metrics-port', String(port)], { env: { ...env, LOG_LEVEL: 'info' } }),
    );
    const client = new Redis(redis.url);
    let coordinator: CliProcess | undefined;
    try {
      await waitFor(async () => (await Promise.all(ports.map(health))).every((code) => code === 200), 60_000, 'both workers healthy');
      coordinator = startCli(
        ['run', '--queue', QUEUE, '--tasks', path.join(dir, 'tasks-running.jsonl'), '--artifact', path.join(dir, 'artifact.txt'),
          '--run', 'rq-fixtures/failures:logsExecution', '--reward', 'rq-fixtures/failures:constant', '--run-id', 'fr', '--out', out],
        { env },
      );
      await waitFor(() => executions(logFile).filter((e) => e.what === 'start').length === count, 120_000, 'every rollout running');
      redis.freeze?.();
      // Both workers see the silence: by then every lock set before the freeze has expired (a lock
      // lasts lockDurationMs = 5 s, the probe needs the 5 s timeout after the freeze began).
      await waitFor(async () => (await Promise.all(ports.map(health))).every((code) => code === 503), 60_000, '/healthz 503 on both workers');
      redis.thaw?.();
      // What would end the rollouts happens after the wake: lock renewals (every 1.25 s) and
      // stalled checks (every 2 s). Two stalled checks after the wake, each seen by its key.
      const checkKey = `${prefix}:${QUEUE}:stalled-check`;
      for (let round = 0; round < 2; round++) {
        await client.del(checkKey);
        await waitFor(async () => (await client.exists(checkKey)) === 1, 60_000, 'a stalled check after the wake');
      }
      expect(executions(logFile).filter((e) => e.what === 'start')).toHaveLength(count);
      writeFileSync(releaseFile, '');
      const end = await coordinator.done;
      expect(end.code, end.stderr).toBe(0);
      const results = readResults(out);
      expect(results.map((line) => line.kind)).toEqual(Array(count).fill('ok'));
      expect(results.map((line) => line.redispatched)).toEqual(Array(count).fill(0));
      const log = executions(logFile);
      expect(log.filter((e) => e.what === 'start')).toHaveLength(count);
      expect(log.filter((e) => e.what === 'end')).toHaveLength(count);
      const logs = workers.map((worker) => worker.stderr() + worker.stdout()).join('\n');
      expect(logs).not.toContain('aborting the attempt');
    } finally {
      redis.thaw?.();
      client.disconnect();
      writeFileSync(releaseFile, '');
      coordinator?.child.kill('SIGTERM');
      for (const worker of workers) worker.child.kill('SIGTERM');
      const ends = await Promise.all(workers.map((worker) => worker.done));
      await coordinator?.done;
      expect(ends.map((e) => e.code)).toEqual([0, 0]);
    }
  });
});
