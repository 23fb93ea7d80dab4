import { existsSync, mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { readResults } from './results-file.js';

// Issue 30 item 2 through the real CLI: `run --reward rollout-queue/rewards:command` with the
// judge shipped by --reward-file, scored by a real CLI worker; the judge's details reach the
// results file as rewardDetails.
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-command-reward-'));
let redis: TestRedis;
let worker: CliProcess;
let env: Record<string, string>;
const queue = 'cmd-reward-q';

const JUDGE = 'import json, sys\nr = json.load(sys.stdin)\ngot = r["output"]["stdout"].strip()\nprint(json.dumps({"reward": 1 if got == str(r["task"]["answer"]) else 0, "details": {"got": got}}))\n';

beforeAll(async () => {
  redis = await startRedis();
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('cmdrw') };
  await writeFile(path.join(dir, 'tasks.jsonl'), '{"id": "t1", "a": 2, "b": 3, "answer": 5}\n{"id": "t2", "a": 1, "b": 1, "answer": 3}\n');
  await writeFile(path.join(dir, 'main.py'), 'import json, sys\ntask = json.load(sys.stdin)\nprint(task["a"] + task["b"])\n');
  await writeFile(path.join(dir, 'judge.py'), JUDGE);
  worker = startCli(['worker', '--queue', queue, '--concurrency', '2', '--name', 'cmd-reward'], { env: { ...env, LOG_LEVEL: 'info' } });
  await waitFor(() => worker.stderr().includes('"worker running"'), 30_000, 'the worker running');
});
afterAll(async () => {
  worker?.child.kill('SIGTERM');
  if (worker) expect((await worker.done).code).toBe(0);
  expect(await killLeftovers()).toEqual([]);
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
});

const runArgs = (runId: string, reward: string[]): string[] => [
  'run', '--queue', queue, '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'main.py'),
  '--run', 'rollout-queue/runners:codeRunner', ...reward, '--run-id', runId, '--out', path.join(dir, `${runId}.jsonl`),
];

describe('run --reward rollout-queue/rewards:command', () => {
  it('--reward-file ships judge.py; every Result is scored by it and keeps its details', async () => {
    const run = await runCli(runArgs('cmd-1', ['--reward', 'rollout-queue/rewards:command', '--reward-file', path.join(dir, 'judge.py'), '--reward-config', '{"command": ["python3", "judge.py"]}']), { env, cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const rows = readResults(path.join(dir, 'cmd-1.jsonl')).sort((a, b) => String(a.taskId).localeCompare(String(b.taskId)));
    expect(rows.map((row) => [row.taskId, row.kind, row.reward, row.rewardDetails])).toEqual([
      ['t1', 'ok', 1, { got: '5' }],
      ['t2', 'ok', 0, { got: '2' }],
    ]);
  });

  it('refuses before enqueueing: --reward-file with another reward, an unreadable file, a bad command config', async () => {
    const other = await runCli(runArgs('cmd-2', ['--reward', 'rollout-queue/rewards:lastNumber', '--reward-file', path.join(dir, 'judge.py')]), { env, cwd: dir });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('--reward-file ships a judge\'s files to the program reward; use it with --reward rollout-queue/rewards:command');
    const missing = await runCli(runArgs('cmd-3', ['--reward', 'rollout-queue/rewards:command', '--reward-file', path.join(dir, 'nope.py'), '--reward-config', '{"command": ["python3", "nope.py"]}']), { env, cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.py: cannot read it (ENOENT)');
    const bad = await runCli(runArgs('cmd-4', ['--reward', 'rollout-queue/rewards:command', '--reward-config', '{"command": "python3 judge.py"}']), { env, cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--reward-config: command: config.command must be a non-empty array of strings');
  });

  // Fresh-user report: judge.py here but no --reward-file judge.py: every rollout ended `model`
  // (RewardThrew:NonZeroExit, "python3: can't open file '/work/judge.py'"), exit 0.
  it('refuses a judge file of the command that exists here but is not shipped, naming the --reward-file that ships it', async () => {
    const out = path.join(dir, 'cmd-5.jsonl');
    const run = await runCli(runArgs('cmd-5', ['--reward', 'rollout-queue/rewards:command', '--reward-config', '{"command":["python3","judge.py"]}']), { env, cwd: dir });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('--reward-config: command[1] is "judge.py", a file here that is not shipped to the judge, which runs in its own directory on the worker: add --reward-file judge.py. Nothing was enqueued.');
    expect(existsSync(out)).toBe(false);
    const status = await runCli(['status', 'cmd-5', '--queue', queue], { env });
    expect(status.stderr).toContain('no run "cmd-5"');
  });
});
