import { mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, runCli, uniquePrefix } from './cli-process.js';

// Fresh-user reports: a built-in reward's gold answer missing from the tasks (a misspelt
// goldKey, or one task without "answer") was enqueued, and the run stopped on the first
// `caller` Result (exit 3). `run` now checks every task line first: exit 2, nothing enqueued.
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-gold-'));
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis({ private: true });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

/** The example's own run command (examples/arithmetic/README.md), with `rewardConfig` and `tasks` swapped in. */
const exampleRun = (tasks: string, rewardConfig: string): string[] => [
  'run', '--queue', 'q',
  '--tasks', tasks,
  '--artifact', 'examples/arithmetic/artifact',
  '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"entrypoint":"main.js","timeoutMs":3000}',
  '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', rewardConfig,
];

/** Runs `args` under a fresh key prefix and checks it was refused (exit 2) with Redis untouched. */
async function refused(args: string[]): Promise<{ stderr: string; prefix: string }> {
  const prefix = uniquePrefix('gold');
  const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
  const outcome = await runCli(args, { env });
  expect(outcome.code, outcome.stderr).toBe(2);
  const client = new Redis(redis.url);
  try {
    expect(await client.keys(`${prefix}:*`)).toEqual([]);
  } finally {
    client.disconnect();
  }
  // What the user would look at next: no run, no job.
  const status = await runCli(['status', '--queue', 'q', '--json'], { env });
  expect(status.code, status.stderr).toBe(0);
  const shown = JSON.parse(status.stdout) as { runs: unknown[]; counts: Record<string, number> };
  expect(shown.runs).toEqual([]);
  expect(Object.values(shown.counts).every((count) => count === 0), status.stdout).toBe(true);
  return { stderr: outcome.stderr, prefix };
}

describe('run checks the gold answer of a built-in reward in every task before enqueueing', () => {
  it('a misspelt goldKey ("answr") on the arithmetic example: exit 2, did you mean "answer", nothing enqueued', async () => {
    const { stderr } = await refused(exampleRun('examples/arithmetic/tasks.jsonl', '{"goldKey":"answr"}'));
    const lines = stderr.trim().split('\n');
    expect(lines, stderr).toHaveLength(1);
    expect(lines[0]).toBe(
      'error: examples/arithmetic/tasks.jsonl:1: --reward rollout-queue/rewards:lastNumber reads the gold answer at task.answr, and this task has no "answr" ' +
        `(task keys: id, question, answer; all 240 tasks lack it); did you mean "answer"? pass --reward-config '{"goldKey":"answer"}', or add "answr" to every task. Nothing was enqueued.`,
    );
  });

  it('one task of three without "answer" (default goldKey): exit 2 naming tasks.jsonl:3, nothing enqueued', async () => {
    const tasks = path.join(dir, 'tasks.jsonl');
    await writeFile(tasks, '{"id":"x1","question":"What is 1+1?","answer":2}\n{"id":"x2","question":"What is 2+2?","answer":4}\n{"id":"x3","question":"What is 1+2?"}\n');
    const { stderr } = await refused(exampleRun(tasks, '{}').slice(0, -2)); // no --reward-config: the default goldKey
    expect(stderr).toContain(`${tasks}:3: --reward rollout-queue/rewards:lastNumber reads the gold answer at task.answer, and this task has no "answer" (task keys: id, question; 1 of 3 tasks lack it); add "answer" to this task. Nothing was enqueued.`);
  });

  it('a gold answer that is an array: exit 2 naming the line, nothing enqueued', async () => {
    const tasks = path.join(dir, 'array.jsonl');
    await writeFile(tasks, '{"id":"x1","question":"What is 1+1?","answer":2}\n{"id":"x2","question":"Name two primes","answer":[2,3]}\n');
    const { stderr } = await refused(exampleRun(tasks, '{"goldKey":"answer"}'));
    expect(stderr).toContain(`${tasks}:2: --reward rollout-queue/rewards:lastNumber reads the gold answer at task.answer, which holds an array of 2`);
  });
});
