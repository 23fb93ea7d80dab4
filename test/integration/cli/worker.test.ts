import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { liveProcessesRunning } from '../../helpers/host-processes.js';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { BIN, killLeftovers, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// `rollout-queue worker` as a process: signals, and a Redis that is not there yet.
let redis: TestRedis;
let lateRedis: ChildProcess | undefined;
let lateDir: string | undefined;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  lateRedis?.kill('SIGKILL');
  if (lateDir) await rm(lateDir, { recursive: true, force: true });
  await redis?.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

const jobCounts = async (env: Record<string, string>, queue: string): Promise<Record<string, number>> => {
  const status = await runCli(['status', '--queue', queue, '--json'], { env });
  return status.code === 0 ? (JSON.parse(status.stdout) as { counts: Record<string, number> }).counts : {};
};

const workerContainment = async (env: Record<string, string>, queue: string): Promise<Record<string, string>> => {
  const status = await runCli(['status', '--queue', queue, '--json'], { env });
  if (status.code !== 0) return {};
  const workers = (JSON.parse(status.stdout) as { workers: Array<{ name: string; containment?: string }> }).workers;
  return Object.fromEntries(workers.map((worker) => [worker.name, worker.containment ?? '']));
};

const connectedWorkers = async (env: Record<string, string>, queue: string): Promise<string[]> => {
  const status = await runCli(['status', '--queue', queue, '--json'], { env });
  if (status.code !== 0) return [];
  return (JSON.parse(status.stdout) as { workers: Array<{ name: string }> }).workers.map((worker) => worker.name);
};

describe('rollout-queue worker', () => {
  it('connects, shows in status by name, and exits 0 on SIGTERM', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') };
    const worker = startCli(['worker', '--queue', 'wq', '--name', 'named-worker'], { env });
    await waitFor(async () => (await connectedWorkers(env, 'wq')).includes('named-worker'), 30_000, 'the worker in status');
    // Review note: --json gave CLIENT LIST's age and idle seconds as strings.
    const status = await runCli(['status', '--queue', 'wq', '--json'], { env });
    const [shown] = (JSON.parse(status.stdout) as { workers: Array<Record<string, unknown>> }).workers;
    expect(shown).toMatchObject({ name: 'named-worker', age: expect.any(Number), idle: expect.any(Number), addr: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
    worker.child.kill('SIGTERM');
    const end = await worker.done;
    expect(end.code, end.stdout + end.stderr).toBe(0);
    expect(await connectedWorkers(env, 'wq')).toEqual([]);
  });

  // Fresh-user report: an idle worker whose Redis had gone did not stop on SIGTERM; it waited out
  // the whole shutdown grace for BullMQ's close. The grace here is 10 minutes: only an exit that
  // does not wait for it ends within the test.
  it('an idle worker whose Redis is gone exits 0 on SIGTERM without waiting out the shutdown grace', async () => {
    const own = await startRedis({ private: true });
    const env = { REDIS_URL: own.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') };
    const worker = startCli(['worker', '--queue', 'wq-gone', '--name', 'orphaned', '--shutdown-grace-ms', '600000'], { env: { ...env, LOG_LEVEL: 'info' } });
    let stopped = false;
    try {
      // Started, not only connected: BullMQ's connections show in status before the worker's start
      // is done, and Redis stopped mid-start left it waiting there (a CI failure under load).
      await waitFor(() => (worker.stdout() + worker.stderr()).includes('"msg":"worker running"'), 30_000, 'the worker running');
      expect(await connectedWorkers(env, 'wq-gone')).toContain('orphaned');
      await own.stop();
      stopped = true;
      await waitFor(() => worker.stderr().includes('cannot reach Redis') || worker.stdout().includes('cannot reach Redis'), 30_000, 'the worker to see Redis gone');
      worker.child.kill('SIGTERM');
      const end = await worker.done;
      expect(end.code, end.stdout + end.stderr).toBe(0);
    } finally {
      worker.child.kill('SIGKILL');
      // A failed wait must not leave this test's own Redis running.
      if (!stopped) await own.stop();
    }
  }, 60_000);

  it('first SIGTERM waits for the active rollout; a second one hands it back at once, exit 0', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') };
    const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-slow-'));
    await writeFile(path.join(dir, 'tasks.jsonl'), '{"id":"slow","answer":1}\n');
    // The wait looks for the artifact's process on the host (it cannot write a file out of its
    // tenant view), where polling `status` started a node process after another and slowed the
    // very start it waited for (CI under load: the rollout was not seen active within 30 s).
    await writeFile(path.join(dir, 'sleep.js'), 'setTimeout(() => console.log(1), 60000);\n');
    const worker = startCli(['worker', '--queue', 'wq2', '--name', 'twice', '--shutdown-grace-ms', '120000'], { env });
    const coordinator = startCli([
      'run', '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'sleep.js'),
      '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"timeoutMs":90000}',
      '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
      '--queue', 'wq2', '--run-id', 'slowrun', '--out', path.join(dir, 'out.jsonl'),
    ], { env, cwd: dir });
    try {
      await waitFor(() => liveProcessesRunning([process.execPath, 'sleep.js']).length > 0, 30_000, 'the rollout to be running');
      expect((await jobCounts(env, 'wq2')).active).toBe(1);
      worker.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(worker.child.exitCode, 'the first signal waits for the active rollout').toBeNull();
      const secondAt = Date.now();
      worker.child.kill('SIGTERM');
      const end = await worker.done;
      expect(end.code, end.stdout + end.stderr).toBe(0);
      expect(Date.now() - secondAt).toBeLessThan(15_000);
      const counts = await jobCounts(env, 'wq2');
      expect(counts.active).toBe(0);
      // Handed back under fair share, a job waits in BullMQ's prioritized set (docs/fair-share.md).
      expect((counts.waiting ?? 0) + (counts.prioritized ?? 0), 'the rollout was handed back to the queue').toBe(1);
    } finally {
      // A failed wait must not leave the worker running into the next test.
      worker.child.kill('SIGKILL');
      coordinator.child.kill('SIGKILL');
      await Promise.all([worker.done, coordinator.done]);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an out-of-range option the consumer refuses is a usage error (exit 2) naming it', async () => {
    const outcome = await runCli(['worker', '--lock-duration-ms', '5'], { env: { REDIS_URL: redis.url } });
    expect(outcome.code, outcome.stdout + outcome.stderr).toBe(2);
    expect(outcome.stderr).toContain('lockDurationMs');
  });

  it('an unknown ROLLOUT_QUEUE_LAUNCHER is one clear line naming the variable and its values, not a stack trace (fresh-user report)', async () => {
    const outcome = await runCli(['worker', '--queue', 'qx'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_LAUNCHER: 'bogus' } });
    expect(outcome.code, outcome.stdout + outcome.stderr).toBe(2);
    expect(outcome.stderr).toContain('worker option launcher: "bogus" (from env ROLLOUT_QUEUE_LAUNCHER) is not one of auto, exec, util-linux; unset it for auto');
    expect(outcome.stderr).not.toMatch(/\n\s+at /);
  });

  it('wrong credentials exit 1 at once with one clear line', async () => {
    const guarded = await startRedis({ private: true, args: ['--requirepass', 'right-one'] });
    try {
      const outcome = await runCli(['worker'], { env: { REDIS_URL: guarded.url.replace('redis://', 'redis://:not-the-password@') } });
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain('refused the credentials');
      expect(outcome.stdout + outcome.stderr).not.toContain('not-the-password');
    } finally {
      await guarded.stop();
    }
  });

  it('waits for a Redis that is not up yet, logging the redacted address, then serves', async () => {
    const port = await freePort();
    const url = `redis://:late-password@127.0.0.1:${port}`;
    const env = { REDIS_URL: url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') };
    const worker = startCli(['worker', '--queue', 'late', '--name', 'patient'], { env: { ...env, LOG_LEVEL: 'info' } });
    await waitFor(() => (worker.stdout() + worker.stderr()).includes('could not connect to Redis'), 20_000, 'the retry log line');
    expect(worker.stdout() + worker.stderr()).toContain(`redis://:***@127.0.0.1:${port}`);
    expect(worker.stdout() + worker.stderr()).not.toContain('late-password');
    expect(worker.child.exitCode).toBeNull();

    lateDir = await mkdtemp(path.join(os.tmpdir(), 'rq-late-redis-'));
    lateRedis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', lateDir, '--save', '', '--appendonly', 'no', '--requirepass', 'late-password'], { stdio: 'ignore' });
    await waitFor(async () => (await connectedWorkers(env, 'late')).includes('patient'), 60_000, 'the worker to connect');
    worker.child.kill('SIGTERM');
    expect((await worker.done).code).toBe(0);
  });

  it('shows its containment level in the start line and per worker in status; --containment strict starts on this host', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') };
    const strict = startCli(['worker', '--queue', 'cq', '--name', 'strict-one', '--containment', 'strict'], { env: { ...env, LOG_LEVEL: 'info' } });
    const fallback = startCli(['worker', '--queue', 'cq', '--name', 'fallback-one', '--containment', 'process-group'], { env: { ...env, LOG_LEVEL: 'info' } });
    try {
      await waitFor(async () => Object.keys(await workerContainment(env, 'cq')).length === 2, 30_000, 'both workers in status');
      expect(await workerContainment(env, 'cq')).toEqual({ 'strict-one': 'sealed', 'fallback-one': 'process-group' });
      expect(strict.stdout() + strict.stderr()).toMatch(/"containment":"sealed"/);
      const fallbackLog = fallback.stdout() + fallback.stderr();
      expect(fallbackLog).toMatch(/"containment":"process-group"/);
      expect(fallbackLog).toContain('re-parented away');
      expect(fallbackLog).toMatch(/swept \d+ work dir\(s\) and \d+ cgroup\(s\) left by dead attempts/);
    } finally {
      strict.child.kill('SIGTERM');
      fallback.child.kill('SIGTERM');
      expect((await strict.done).code).toBe(0);
      expect((await fallback.done).code).toBe(0);
    }
  });

  it.each(['strict', 'sealed'])('--containment %s refuses to start without a cgroup it may write (an unprivileged user), exit 1 naming it', (mode) => {
    const { REDIS_URL: _ignored, ...base } = process.env;
    const outcome = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, 'worker', '--containment', mode, '--queue', 'nobody'], {
      env: { ...base, REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(outcome.status, outcome.stdout + outcome.stderr).toBe(1);
    expect(outcome.stderr).toContain(`containment ${mode}: this host leaves`);
    expect(outcome.stderr).toContain('memory (no cgroup');
    expect(outcome.stderr).toContain('writable cgroup');
  });

  // Fresh-user report: `worker --containment sealed` was refused ("Allowed choices are auto,
  // strict, …") although the docs call the top level `sealed`. Every level name is a choice.
  it('--containment takes every level name the docs use: sealed requires the top level, the weaker ones force theirs', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('wk') };
    const modes = ['sealed', 'namespace', 'cgroup'];
    const started = modes.map((mode) => startCli(['worker', '--queue', 'lv', '--name', `${mode}-one`, '--containment', mode], { env: { ...env, LOG_LEVEL: 'info' } }));
    try {
      await waitFor(async () => Object.keys(await workerContainment(env, 'lv')).length === modes.length, 30_000, 'every worker in status');
      // This host (root, namespaces, cgroups, bubblewrap) has every mechanism: each level as named.
      expect(await workerContainment(env, 'lv')).toEqual({ 'sealed-one': 'sealed', 'namespace-one': 'namespace', 'cgroup-one': 'cgroup' });
    } finally {
      for (const worker of started) worker.child.kill('SIGTERM');
      expect((await Promise.all(started.map((worker) => worker.done))).map((end) => end.code)).toEqual([0, 0, 0]);
    }
    const help = await runCli(['worker', '--help']);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('(one of auto, strict, sealed, namespace+cgroup, namespace, cgroup, process-group;');
  });
});
