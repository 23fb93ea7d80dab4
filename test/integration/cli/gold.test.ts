import { mkdtempSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, REPO_ROOT, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { readResults } from './results-file.js';

// Case BR-61-gold-on-stdin (/work/shared/cases, copied to test/fixtures/cases) with its exact
// input, through the real CLI: codeRunner wrote the whole task, gold included, to the program's
// stdin, and a program printing task["answer"] scored 1 on every task (issue 28).
const CASE = path.join(REPO_ROOT, 'test', 'fixtures', 'cases', 'BR-61-gold-on-stdin');
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-gold-run-'));
let redis: TestRedis;
let worker: CliProcess;
let env: Record<string, string>;
const queue = 'br61-q';

beforeAll(async () => {
  redis = await startRedis();
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('gold') };
  worker = startCli(['worker', '--queue', queue, '--concurrency', '1', '--name', 'br61'], { env: { ...env, LOG_LEVEL: 'info' } });
  await waitFor(() => worker.stderr().includes('"worker running"'), 30_000, 'the br61 worker running');
});
afterAll(async () => {
  worker.child.kill('SIGTERM');
  expect((await worker.done).code).toBe(0);
  expect(await killLeftovers()).toEqual([]);
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
});
afterEach(() => {
  expect(worker.child.exitCode, worker.stderr()).toBeNull();
});

/** BR-61's run.sh command line, with this test's queue, run id and results file, plus `extra`. */
const br61Args = (runId: string, out: string, extra: string[] = [], artifact = path.join(CASE, 'main.py')): string[] => [
  'run', '--queue', queue, '--tasks', path.join(CASE, 'tasks.jsonl'), '--artifact', artifact,
  '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"entrypoint":"main.py","timeoutMs":10000}',
  '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
  '--run-id', runId, '--out', out, ...extra,
];

describe('the gold stays with the reward (case BR-61-gold-on-stdin)', () => {
  it('BR-61: the program never sees "answer": both rollouts score 0, and the results file says the gold was not visible', async () => {
    const out = path.join(dir, 'br61.jsonl');
    const run = await runCli(br61Args('br61', out), { env, cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const rows = readResults(out).sort((a, b) => String(a.taskId).localeCompare(String(b.taskId)));
    expect(rows.map((row) => [row.taskId, row.kind, row.reward, (row.output as { stdout: string }).stdout, row.goldVisibleToRun])).toEqual([
      ['q1', 'ok', 0, 'Answer: I do not know\n', false],
      ['q2', 'ok', 0, 'Answer: I do not know\n', false],
    ]);
    expect(run.stdout).not.toContain('gold visible to run');
    expect(run.stderr).not.toContain('--gold-visible-to-run');
  });

  it('--gold-visible-to-run is the explicit opt-in: the run gets the gold, each Result records it, the CLI warns and counts it', async () => {
    const out = path.join(dir, 'br61-visible.jsonl');
    const run = await runCli(br61Args('br61-visible', out, ['--gold-visible-to-run']), { env, cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const rows = readResults(out);
    // The very shortcut BR-61 shows, now only where the spec asked for it.
    expect(rows.map((row) => [row.kind, row.reward, row.goldVisibleToRun])).toEqual([['ok', 1, true], ['ok', 1, true]]);
    expect(run.stderr).toContain('warning: --gold-visible-to-run hands the run the whole task, gold included');
    expect(run.stdout).toMatch(/gold visible to run\s+2\s+Result\(s\) whose run received the whole task/);
  });

  it('--gold-key keeps more task keys from the run; the reward still scores against its own gold', async () => {
    const artifact = path.join(dir, 'keys', 'main.py');
    await mkdir(path.dirname(artifact), { recursive: true });
    // Computes its answer from the question and prints the keys it was given.
    await writeFile(artifact, 'import json, sys\ntask = json.load(sys.stdin)\nprint("keys:", ",".join(sorted(task)))\nprint("Answer:", eval(task["question"][8:-1]) if "question" in task else "none")\n');
    const out = path.join(dir, 'br61-keys.jsonl');
    const run = await runCli(br61Args('br61-keys', out, ['--gold-key', 'id'], artifact), { env, cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const rows = readResults(out).sort((a, b) => String(a.taskId).localeCompare(String(b.taskId)));
    expect(rows.map((row) => [row.taskId, (row.output as { stdout: string }).stdout, row.reward])).toEqual([
      ['q1', 'keys: question\nAnswer: 391\n', 1],
      ['q2', 'keys: question\nAnswer: 1048576\n', 1],
    ]);
  });

  it('an empty --gold-key is refused naming the option, before anything is enqueued', async () => {
    const run = await runCli(br61Args('br61-empty', path.join(dir, 'empty.jsonl'), ['--gold-key', '']), { env, cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`option '--gold-key <key...>' argument '' is invalid. "" is not a task key: give the key the gold is at, like answer (one key per --gold-key)`);
  });
});
