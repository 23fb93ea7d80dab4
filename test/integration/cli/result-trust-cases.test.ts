import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, REPO_ROOT, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { readResults } from './results-file.js';

// Issue 11's user cases (/work/shared/cases) with their exact inputs (test/fixtures/cases),
// through the real CLI: a worker process and `rollout-queue run`.
const CASES = path.join(REPO_ROOT, 'test', 'fixtures', 'cases');
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-trust-'));
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
});
afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

/** A `worker` CLI process on its own queue and prefix, once it logs that it runs. */
async function startWorker(label: string, extra: string[] = [], env: Record<string, string> = {}): Promise<{ worker: CliProcess; base: Record<string, string>; queue: string }> {
  const base = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix(label) };
  const queue = `${label}-q`;
  const worker = startCli(['worker', '--queue', queue, '--concurrency', '1', '--name', label, ...extra], { env: { ...base, LOG_LEVEL: 'info', ...env } });
  await waitFor(() => worker.stderr().includes('"worker running"'), 30_000, `${label} worker running`);
  return { worker, base, queue };
}

async function stop(worker: CliProcess): Promise<void> {
  worker.child.kill('SIGTERM');
  expect((await worker.done).code).toBe(0);
}

const codeRun = (timeoutMs: number): string[] => [
  '--run', 'rollout-queue/runners:codeRunner', '--run-config', JSON.stringify({ entrypoint: 'main.py', command: ['python3', 'main.py'], timeoutMs }),
];

describe('issue 11 cases through the CLI', () => {
  it('BR-29: a secret printed by a successful artifact is "[secret MY_API_KEY]" in the results file and in Redis', async () => {
    const fake = 'sk-test-FAKE-0123456789abcdef';
    const { worker, base, queue } = await startWorker('br29', [], { MY_API_KEY: fake });
    try {
      const out = path.join(dir, 'br29.jsonl');
      const run = await runCli([
        'run', '--queue', queue, '--tasks', path.join(CASES, 'BR-29', 'tasks.jsonl'), '--artifact', path.join(CASES, 'BR-29', 'main.py'), ...codeRun(4000),
        '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"gold"}', '--env', 'MY_API_KEY', '--run-id', 'br29', '--out', out,
      ], { env: base });
      expect(run.code, run.stderr).toBe(0);
      const [result] = readResults(out);
      expect(result).toMatchObject({ kind: 'ok', reward: 1 });
      expect(result?.output).toMatchObject({ stdout: 'debug: using key [secret MY_API_KEY]\nAnswer: 5\n', stderr: 'auth header: Bearer [secret MY_API_KEY]\n' });
      expect(readFileSync(out, 'utf8')).not.toContain(fake);
      const client = new Redis(redis.url);
      try {
        const stored = await client.hget(`${base.ROLLOUT_QUEUE_PREFIX}:${queue}:br29.s1`, 'returnvalue');
        expect(stored).toContain('[secret MY_API_KEY]');
        expect(stored).not.toContain(fake);
      } finally {
        client.disconnect();
      }
      expect(worker.stderr()).not.toContain(fake);
    } finally {
      await stop(worker);
    }
  });

  it('BR-34: output past the 1 MiB cap keeps its tail; lastNumber reads "Answer: 5"; the summary counts the truncation', async () => {
    const { worker, base, queue } = await startWorker('br34');
    try {
      const out = path.join(dir, 'br34.jsonl');
      const run = await runCli([
        'run', '--queue', queue, '--tasks', path.join(CASES, 'BR-34', 'tasks.jsonl'), '--artifact', path.join(CASES, 'BR-34', 'main.py'), ...codeRun(8000),
        '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"gold"}', '--run-id', 'br34', '--out', out,
      ], { env: base });
      expect(run.code, run.stderr).toBe(0);
      const [result] = readResults(out);
      const output = result?.output as { stdout: string; stdoutTruncated: boolean; stdoutDroppedBytes: number };
      expect(result).toMatchObject({ kind: 'ok', reward: 1 });
      expect(output.stdoutTruncated).toBe(true);
      expect(output.stdout.startsWith('step 00000 ok\n')).toBe(true);
      expect(output.stdout.endsWith('step 89999 ok\nAnswer: 5\n')).toBe(true);
      // 90 000 lines of 14 bytes + "Answer: 5\n", minus the 1 MiB kept.
      expect(output.stdoutDroppedBytes).toBe(90_000 * 14 + 10 - 1_048_576);
      expect(run.stdout).toMatch(/truncated output\s+1\s+1 reward\(s\) computed on output cut at maxOutputBytes/);
      const status = await runCli(['status', 'br34', '--queue', queue], { env: base });
      expect(status.stdout).toMatch(/truncated output\s+1/);
    } finally {
      await stop(worker);
    }
  });

  it('BR-35: a reward that hangs on the output ends once, on the first attempt, as model RewardTimeout', async () => {
    const { worker, base, queue } = await startWorker('br35');
    try {
      const out = path.join(dir, 'br35.jsonl');
      const run = await runCli([
        'run', '--queue', queue, '--tasks', path.join(CASES, 'BR-35', 'tasks.jsonl'), '--artifact', path.join(CASES, 'BR-35', 'main.py'), ...codeRun(2000),
        '--reward', 'rollout-queue/rewards:regex', '--reward-config', '{"pattern":"^(a+)+$"}', '--run-ms', '3000', '--hang-ms', '6000', '--run-id', 'br35', '--out', out,
      ], { env: base });
      expect(run.code, run.stderr).toBe(0);
      const [result] = readResults(out);
      expect(result).toMatchObject({ kind: 'model', attempts: 1, redispatched: 0, error: { type: 'RewardTimeout' } });
      expect((result?.error as { message: string }).message).toContain('reward rollout-queue/rewards:regex did not finish within timeouts.runMs = 3000 ms');
    } finally {
      await stop(worker);
    }
  });

  it('BR-37: one judge that refuses connections costs one rollout (infrastructure, ECONNREFUSED named); 5 Results, exit 0', async () => {
    const judgePort = await freePort();
    const deadPort = await freePort();
    const judge: ChildProcess = spawn(process.execPath, [path.join(CASES, 'BR-37', 'judge-server.mjs'), String(judgePort)], { stdio: 'ignore' });
    const tasks = path.join(dir, 'br37-tasks.jsonl');
    await writeFile(tasks, readFileSync(path.join(CASES, 'BR-37', 'tasks.jsonl'), 'utf8').replace('18632', String(deadPort)));
    const { worker, base, queue } = await startWorker('br37', ['--allow', 'rq-fixtures/*']);
    try {
      await waitFor(async () => fetch(`http://127.0.0.1:${judgePort}/score`, { method: 'POST', body: '{"output":"1","gold":1}' }).then(() => true, () => false), 10_000, 'the judge');
      const out = path.join(dir, 'br37.jsonl');
      const run = await runCli([
        'run', '--queue', queue, '--tasks', tasks, '--artifact', path.join(CASES, 'BR-37', 'main.py'), ...codeRun(4000),
        '--reward', 'rq-fixtures/acme-judge:remoteJudge', '--reward-config', JSON.stringify({ port: judgePort }), '--run-id', 'br37', '--out', out,
      ], { env: base });
      expect(run.code, run.stderr).toBe(0);
      const results = readResults(out);
      expect(results).toHaveLength(5);
      const byTask = new Map(results.map((r) => [r.taskId, r]));
      for (const id of ['j1', 'j3', 'j4', 'j5']) expect(byTask.get(id)).toMatchObject({ kind: 'ok', reward: 1 });
      expect(byTask.get('j2')).toMatchObject({ kind: 'infrastructure', redispatched: 2, error: { type: 'RedispatchLimit' } });
      expect((byTask.get('j2')?.error as { message: string }).message).toContain(`fetch failed: connect ECONNREFUSED 127.0.0.1:${deadPort}`);
    } finally {
      judge.kill('SIGTERM');
      await stop(worker);
    }
  });
});
