import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostProcesses, type HostProcess } from '../../helpers/host-processes.js';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { createServer } from 'node:net';
import { killLeftovers, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';
import { readResults, resultProblems } from './results-file.js';

// The main job, as `npm run demo` runs it, against this test's Redis.
let redis: TestRedis;
let cwd: string;

beforeAll(async () => {
  redis = await startRedis();
  cwd = await mkdtemp(path.join(os.tmpdir(), 'rq-cli-demo-'));
});

afterAll(async () => {
  await rm(cwd, { recursive: true, force: true });
  await redis?.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

/** Keys of this test's Redis matching `pattern`. */
async function keysOf(pattern: string): Promise<string[]> {
  const client = new Redis(redis.url);
  try {
    return await client.keys(pattern);
  } finally {
    client.disconnect();
  }
}

/** Live processes a demo started: its workers (their argv names its queue) and its private redis-server (its title names its port). */
function demoProcesses(queue: string, port: string): HostProcess[] {
  return hostProcesses().filter((p) => p.state !== 'Z' && (p.argv.includes(queue) || (p.argv.some((a) => a.includes('redis-server')) && p.argv.some((a) => a.endsWith(`:${port}`)))));
}

describe('rollout-queue demo', () => {
  it('runs 24 arithmetic tasks over two worker processes and leaves a correct results file', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('demo') };
    const port = await freePort();
    const outcome = await runCli(['demo', '--tasks', '24', '--workers', '2', '--port', String(port)], { env, cwd });
    expect(outcome.code, outcome.stdout + outcome.stderr).toBe(0);

    const runId = /^Run (\S+): 24 of 24 result\(s\), completed$/m.exec(outcome.stdout)?.[1];
    expect(runId, outcome.stdout).toBeDefined();
    expect(outcome.stdout).toMatch(/ok\s+\d+\s+mean reward [\d.]+ over ok \(reward 1: \d+, reward 0: \d+\)/);
    expect(outcome.stdout).toMatch(/model\s+[1-9]/);
    expect(outcome.stdout).toMatch(/results per worker\s+demo-worker-1: [1-9]\d*, demo-worker-2: [1-9]\d*/);
    expect(outcome.stderr).toContain(`dashboard: http://127.0.0.1:${port}/`);

    const file = /results file\s+(\S+)/.exec(outcome.stdout)?.[1] as string;
    expect(path.dirname(file)).toBe(cwd);
    const lines = readResults(file);
    const expected = lines.map((line) => String(line.leaseId));
    expect(lines).toHaveLength(24);
    expect(resultProblems(lines, expected)).toEqual([]);
    expect(new Set(expected).size).toBe(24);
    expect(expected.every((lease) => lease.startsWith(`${runId}.`))).toBe(true);
    const kinds = new Set(lines.map((line) => line.kind));
    expect(kinds.has('ok')).toBe(true);
    expect(kinds.has('model')).toBe(true);
    expect(new Set(lines.map((line) => line.worker))).toEqual(new Set(['demo-worker-1', 'demo-worker-2']));

    // Nothing of its queue is left in the user's Redis (fresh-user report: every demo left a queue).
    const queue = /on queue "(demo-[^"]+)"/.exec(outcome.stderr)?.[1] as string;
    expect(outcome.stderr).toContain(`removed the demo's queue "${queue}"`);
    expect(await keysOf(`${env.ROLLOUT_QUEUE_PREFIX}:${queue}:*`)).toEqual([]);
    // The demo stopped its workers: nobody is connected to its queue any more.
    const status = await runCli(['status', '--queue', queue, '--json'], { env });
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { workers: unknown[] }).workers).toEqual([]);
  });

  // Fresh-user report: Ctrl-C of `demo --tasks 240` on REDIS_URL exited 130 with "55 of 240,
  // interrupted" and nothing else, and left a `running` run of 180 waiting jobs on a queue no
  // worker would ever serve, which `purge` refused (undelivered Results).
  it('Ctrl-C: says the run ends there and where its Results are, and leaves nothing of its queue in Redis', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('demoint') };
    const out = path.join(cwd, 'interrupted.jsonl');
    const demo = startCli(['demo', '--tasks', '240', '--workers', '2', '--out', out], { env, cwd });
    await waitFor(() => existsSync(out) && readFileSync(out, 'utf8').split('\n').length > 4, 60_000, 'a few Results in the file');
    demo.child.kill('SIGINT');
    const outcome = await demo.done;
    expect(outcome.code, outcome.stderr).toBe(130);
    const written = readResults(out).length;
    expect(outcome.stdout).toMatch(new RegExp(`Run \\S+: ${written} of 240 result\\(s\\), interrupted`));
    expect(outcome.stderr).toContain(`interrupted: the demo's run ends here and its other rollouts are not run (its workers stop with it); the Results so far are in ${out}`);
    const queue = /on queue "(demo-[^"]+)"/.exec(outcome.stderr)?.[1] as string;
    expect(outcome.stderr).toContain(`removed the demo's queue "${queue}"`);
    expect(await keysOf(`${env.ROLLOUT_QUEUE_PREFIX}:${queue}:*`)).toEqual([]);
  });

  // Fresh-user report: the demo's dashboard came up on a random port with no way to choose it.
  it('--port already taken: one line naming it, exit 1, nothing of the demo left running', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as { port: number }).port;
      const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('demo') };
      const outcome = await runCli(['demo', '--tasks', '2', '--port', String(port)], { env, cwd });
      expect(outcome.code, outcome.stdout + outcome.stderr).toBe(1);
      expect(outcome.stderr).toContain(`--port ${port} is already in use by another process; stop it or pass another port (0 picks a free one)`);
      expect(outcome.stderr).not.toMatch(/\n\s+at /);
      // Fresh-user report: two workers started (and left a log directory), then "stopping the
      // workers, the dashboard…" and "its Results are in the results file" came before the error.
      expect(outcome.stderr).not.toContain('workers:');
      expect(outcome.stderr).not.toContain('stopping');
      expect(outcome.stderr).not.toContain('results file');
    } finally {
      taken.close();
    }
  });

  it('refuses more --tasks than the example holds, before it starts anything', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('demo') };
    const outcome = await runCli(['demo', '--tasks', '241'], { env, cwd });
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toMatch(/^error: --tasks 241: \S+examples\/arithmetic\/tasks\.jsonl holds 240 task\(s\); pass --tasks 240 or fewer \(or add tasks to the file\)\n/);
    expect(outcome.stdout).toBe('');
  });

  it('refuses a directory as --out before it starts Redis, workers or the dashboard', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('demo') };
    const outcome = await runCli(['demo', '--tasks', '2', '--out', cwd], { env, cwd });
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toContain(cwd);
    expect(outcome.stderr).not.toMatch(/^(redis|workers|dashboard):/m);
  });

  it('without REDIS_URL, redis-server or Docker it exits 2 saying how to get Redis', async () => {
    // PATH holds no redis-server and no docker; the CLI itself is started with process.execPath.
    const outcome = await runCli(['demo', '--tasks', '2'], { env: { PATH: cwd, DOCKER_HOST: 'unix:///nonexistent.sock' }, cwd });
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toContain('apt-get install redis-server');
    expect(outcome.stderr).toContain('brew install redis');
    expect(outcome.stderr).toContain('docker compose up');
  });

  // Fresh-user report: a demo whose terminal closed (SIGHUP), whose output pipe closed
  // (`demo 2>&1 | head -5`: EPIPE) or that was SIGKILLed left its two workers and its
  // redis-server running for good. The first two are stop requests now (exit 130 after
  // stopping everything); against SIGKILL each process it starts has a parent-death signal.
  it.each(['SIGHUP', 'EPIPE', 'SIGKILL'] as const)('ended by %s, it leaves neither workers nor its private redis-server running', async (how) => {
    // No REDIS_URL: the demo starts its own redis-server.
    const cli = startCli(['demo', '--workers', '2'], { env: { ROLLOUT_QUEUE_PREFIX: uniquePrefix('demo') }, cwd });
    await waitFor(() => /progress: \d+\/240/.test(cli.stderr()), 60_000, `the demo's first progress line; it printed: ${cli.stderr()}`);
    const port = /redis: redis:\/\/127\.0\.0\.1:(\d+) \(private redis-server\)/.exec(cli.stderr())?.[1] as string;
    const queue = /on queue "(demo-[^"]+)"/.exec(cli.stderr())?.[1] as string;
    expect(port, cli.stderr()).toBeDefined();
    expect(demoProcesses(queue, port)).toHaveLength(3);
    if (how === 'EPIPE') {
      cli.child.stdout?.destroy();
      cli.child.stderr?.destroy();
    } else {
      cli.child.kill(how);
    }
    const outcome = await cli.done;
    if (how === 'SIGKILL') expect(outcome.signal).toBe('SIGKILL');
    else expect(outcome.code, outcome.stderr).toBe(130);
    await waitFor(() => demoProcesses(queue, port).length === 0, 30_000, `the demo's workers and redis-server to exit: ${JSON.stringify(demoProcesses(queue, port))}`);
  });
});
