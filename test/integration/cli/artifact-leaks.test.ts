import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { runCli, startCli, uniquePrefix, type CliProcess } from './cli-process.js';
import { readResults } from './results-file.js';

// Fresh-user report: README put tasks.jsonl in my-run/ and offered `--artifact my-run/` ("sends
// every file in it"); solve.py read ./tasks.jsonl and scored 1 on every task. `run` now refuses,
// before anything is enqueued, an artifact that would send the program the tasks file, the
// results file, an earlier run's Results, or a copy of the tasks with their gold.
const queue = 'leaks';
const SOLVE = 'import json, sys\ntask = json.load(sys.stdin)\nprint(task["a"] * task["b"])\n';
// The README's tasks, exactly.
const TASKS = '{"id": "t1", "a": 6, "b": 7, "answer": 42}\n{"id": "t2", "a": 3, "b": 4, "answer": 12}\n';
let redis: TestRedis;
let dir: string;
let worker: CliProcess | undefined;

beforeAll(async () => {
  redis = await startRedis({ private: true });
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-cli-leaks-'));
});

afterAll(async () => {
  if (worker) {
    worker.child.kill('SIGTERM');
    await worker.done;
  }
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
});

/** The report's command, run in `dir` (relative paths as the user typed them). */
const reportRun = (tasks: string, artifact: string, extra: string[] = []): string[] => [
  'run', '--tasks', tasks, '--artifact', artifact, '--run-config', '{"entrypoint":"solve.py"}',
  '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--queue', queue, ...extra,
];

/** Writes the report's `my-run2/` (solve.py and tasks.jsonl) under `dir`/`name`. */
async function reportLayout(name: string): Promise<void> {
  await mkdir(path.join(dir, name), { recursive: true });
  await writeFile(path.join(dir, name, 'solve.py'), SOLVE);
  await writeFile(path.join(dir, name, 'tasks.jsonl'), TASKS);
}

/** Runs `args` in `dir` under a fresh key prefix: exit 2, one error line, nothing in Redis. */
async function refused(args: string[]): Promise<string> {
  const prefix = uniquePrefix('leak');
  const outcome = await runCli(args, { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix }, cwd: dir });
  expect(outcome.code, outcome.stderr).toBe(2);
  const client = new Redis(redis.url);
  try {
    expect(await client.keys(`${prefix}:*`)).toEqual([]);
  } finally {
    client.disconnect();
  }
  const lines = outcome.stderr.trim().split('\n');
  expect(lines, outcome.stderr).toHaveLength(1);
  return lines[0] as string;
}

describe('run refuses an artifact that would send the program the gold', () => {
  it('the report\'s command: --tasks my-run2/tasks.jsonl inside --artifact my-run2/ is exit 2 naming the file and the fix', async () => {
    await reportLayout('my-run2');
    const line = await refused(reportRun('my-run2/tasks.jsonl', 'my-run2/'));
    expect(line).toBe(
      "error: --artifact my-run2/ would send --tasks my-run2/tasks.jsonl to the program under test (the tasks' gold answers): " +
        'move my-run2/tasks.jsonl out of my-run2/, or put the program in a directory of its own (e.g. my-run/program/) and pass that as --artifact. Nothing was enqueued.',
    );
  });

  it('the same directory named another way (./my-run2/../my-run2) is refused the same', async () => {
    await reportLayout('my-run2');
    expect(await refused(reportRun('./my-run2/tasks.jsonl', './my-run2/../my-run2'))).toContain('would send --tasks ./my-run2/tasks.jsonl');
  });

  it('--out inside the artifact directory (not created yet) is refused: its Results would reach the next run', async () => {
    await reportLayout('my-run3');
    await writeFile(path.join(dir, 'tasks3.jsonl'), TASKS);
    await rm(path.join(dir, 'my-run3', 'tasks.jsonl'));
    const line = await refused(reportRun('tasks3.jsonl', 'my-run3/', ['--out', 'my-run3/out/results.jsonl']));
    expect(line).toContain('--artifact my-run3/ would send --out my-run3/out/results.jsonl to the program under test (the Results, whose rewards say which outputs were right): move my-run3/out/results.jsonl out of my-run3/');
  });

  it('an earlier results file inside the artifact directory, whatever its name, is refused naming its line', async () => {
    await reportLayout('my-run4');
    await rm(path.join(dir, 'my-run4', 'tasks.jsonl'));
    await writeFile(path.join(dir, 'tasks4.jsonl'), TASKS);
    await writeFile(path.join(dir, 'my-run4', 'old.log'), `started\n${JSON.stringify({ leaseId: 'r0.t1', runId: 'r0', taskId: 't1', kind: 'ok', reward: 1, output: '42' })}\n`);
    const line = await refused(reportRun('tasks4.jsonl', 'my-run4/'));
    expect(line).toBe(
      `error: --artifact my-run4/ would send ${path.join('my-run4', 'old.log')} to the program under test, and its line 2 is a Result of an earlier run (its reward says whether the output was right): ` +
        `move ${path.join('my-run4', 'old.log')} out of my-run4/, or put the program in a directory of its own and pass that as --artifact. Nothing was enqueued.`,
    );
  });

  it('a copy of the tasks with their gold under another name is refused; a --gold-key of the run counts too', async () => {
    await reportLayout('my-run5');
    await rm(path.join(dir, 'my-run5', 'tasks.jsonl'));
    await mkdir(path.join(dir, 'my-run5', 'data'), { recursive: true });
    // Keys reordered and spaced differently: the content is compared, not the text.
    await writeFile(path.join(dir, 'my-run5', 'data', 'cases.jsonl'), '{"answer":12,"id":"t2"}\n');
    await writeFile(path.join(dir, 'tasks5.jsonl'), TASKS);
    expect(await refused(reportRun('tasks5.jsonl', 'my-run5/'))).toContain(`would send ${path.join('my-run5', 'data', 'cases.jsonl')} to the program under test, and its line 1 is a task of this run with its gold answer`);
    // A second gold key (`--gold-key secret`) with the lastNumber reward's answer left out of the copy.
    await writeFile(path.join(dir, 'tasks5b.jsonl'), '{"id": "t1", "a": 6, "b": 7, "answer": 42, "secret": "s-1"}\n');
    await writeFile(path.join(dir, 'my-run5', 'data', 'cases.jsonl'), '{"id":"t1","secret":"s-1"}\n');
    expect(await refused(reportRun('tasks5b.jsonl', 'my-run5/', ['--gold-key', 'secret']))).toContain('is a task of this run with its gold answer');
  });
});

describe("README's layout with the program in its own directory", () => {
  it('runs: my-run/program/ with a few-shot file whose answers match a gold value but no task is not refused, and scores by the program', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('leakok') };
    worker = startCli(['worker', '--queue', queue], { env });
    await mkdir(path.join(dir, 'my-run', 'program'), { recursive: true });
    await writeFile(path.join(dir, 'my-run', 'program', 'solve.py'), SOLVE);
    // 12 is t2's gold, but this line shares nothing else with t2: an example, not the task.
    await writeFile(path.join(dir, 'my-run', 'program', 'examples.jsonl'), '{"question": "What is 3 times 4?", "answer": 12}\n');
    await writeFile(path.join(dir, 'my-run', 'tasks.jsonl'), TASKS);
    const outcome = await runCli(reportRun('my-run/tasks.jsonl', 'my-run/program/', ['--out', 'my-run/results.jsonl']), { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(0);
    const results = readResults(path.join(dir, 'my-run', 'results.jsonl'));
    expect(results.map((result) => [result.taskId, result.kind, result.reward]).sort()).toEqual([['t1', 'ok', 1], ['t2', 'ok', 1]]);
  });
});
