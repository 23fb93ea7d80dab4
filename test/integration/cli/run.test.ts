import { appendFileSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { cliHint, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { readResults, resultLineCount, resultProblems } from './results-file.js';

// `run` end to end over two real worker processes, and a coordinator SIGKILLed mid-run and
// started again with the same --run-id (and the same through `resume`).
const TASKS = 40;
let redis: TestRedis;
let dir: string;
let tasksFile: string;
let artifact: string;
let env: Record<string, string>;
let workers: CliProcess[] = [];
const queue = 'cli-run';

const lineCount = resultLineCount;
const leases = (runId: string): string[] => Array.from({ length: TASKS }, (_, i) => `${runId}.t${String(i + 1).padStart(2, '0')}`);

function runArgs(extra: string[]): string[] {
  return [
    'run', '--tasks', tasksFile, '--artifact', artifact,
    '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"timeoutMs":10000}',
    '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
    '--queue', queue, ...extra,
  ];
}

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-cli-run-'));
  tasksFile = path.join(dir, 'tasks.jsonl');
  artifact = path.join(dir, 'add.js');
  // Every 10th task has a wrong gold answer: an ok result with reward 0.
  const lines = Array.from({ length: TASKS }, (_, i) => {
    const a = i + 1;
    return JSON.stringify({ id: `t${String(a).padStart(2, '0')}`, a, b: 2 * a, answer: a % 10 === 0 ? -1 : 3 * a });
  });
  await writeFile(tasksFile, `${lines.join('\n')}\n`);
  await writeFile(
    artifact,
    "let input = '';\nprocess.stdin.on('data', (c) => (input += c));\n" +
      "process.stdin.on('end', () => { const t = JSON.parse(input); setTimeout(() => console.log(`sum: ${t.a + t.b}`), 120); });\n",
  );
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('run') };
  workers = ['cli-w1', 'cli-w2'].map((name) => startCli(['worker', '--queue', queue, '--concurrency', '2', '--name', name], { env }));
});

afterAll(async () => {
  for (const worker of workers) worker.child.kill('SIGTERM');
  const ends = await Promise.all(workers.map((worker) => worker.done));
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
  // SIGTERM is a graceful shutdown: exit 0.
  expect(ends.map((end) => end.code)).toEqual([0, 0]);
});

afterEach(async () => {
  const alive = workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null);
  expect(alive, workers.map((w) => w.stdout() + w.stderr()).join('\n')).toHaveLength(2);
});

describe('rollout-queue run', () => {
  it('writes one line per task with exactly the result fields, prints the summary, exit 0', async () => {
    const out = path.join(dir, 'e2e.jsonl');
    const outcome = await runCli(runArgs(['--run-id', 'e2e', '--out', out]), { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(0);
    const lines = readResults(out);
    expect(resultProblems(lines, leases('e2e'))).toEqual([]);
    expect(lines.filter((line) => line.kind === 'ok' && line.reward === 1)).toHaveLength(TASKS - TASKS / 10);
    expect(lines.filter((line) => line.kind === 'ok' && line.reward === 0)).toHaveLength(TASKS / 10);
    expect(outcome.stdout).toContain(`Run e2e: ${TASKS} of ${TASKS} result(s), completed`);
    expect(outcome.stdout).toMatch(/ok\s+40\s+mean reward 0\.900 over ok \(reward 1: 36, reward 0: 4\)/);
    expect(outcome.stdout).toMatch(/results per worker\s+cli-w1: \d+, cli-w2: \d+/);
    expect(outcome.stdout).toMatch(/redispatched\s+0/);
    expect(outcome.stdout).toContain(out);

    const status = await runCli(['status', 'e2e', '--queue', queue, '--json'], { env });
    expect(status.code, status.stderr).toBe(0);
    const run = (JSON.parse(status.stdout) as { run: { status: string; delivered: number; kinds: Record<string, number> } }).run;
    expect(run).toMatchObject({ status: 'completed', delivered: TASKS, kinds: { ok: TASKS } });
  });

  // Issue 30: a line's "$meta" is its Result's meta in the results file; the task the program reads has no "$meta".
  it('a tasks line\'s "$meta" comes back as its line\'s meta in the results file, and never reaches the program', async () => {
    const tagged = path.join(dir, 'tagged.jsonl');
    await writeFile(tagged, [
      JSON.stringify({ id: 'm1', a: 1, b: 2, answer: 3, $meta: { candidate: 'c-1', generation: 4 } }),
      JSON.stringify({ id: 'm2', a: 2, b: 4, answer: 6, $meta: 'just a string' }),
      JSON.stringify({ id: 'm3', a: 3, b: 6, answer: 9 }),
    ].join('\n') + '\n');
    const seesMeta = path.join(dir, 'sees-meta.js');
    // Prints the sum, or a wrong one when the task it reads still holds "$meta".
    await writeFile(seesMeta, "let input = '';\nprocess.stdin.on('data', (c) => (input += c));\nprocess.stdin.on('end', () => { const t = JSON.parse(input); console.log(`sum: ${'$meta' in t ? -1 : t.a + t.b}`); });\n");
    const out = path.join(dir, 'tagged-results.jsonl');
    const outcome = await runCli(['run', '--tasks', tagged, '--artifact', seesMeta, '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}', '--queue', queue, '--run-id', 'tagged', '--out', out], { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(0);
    const lines = readResults(out);
    expect(resultProblems(lines, ['tagged.m1', 'tagged.m2', 'tagged.m3'])).toEqual([]);
    const byTask = Object.fromEntries(lines.map((line) => [line.taskId, line]));
    expect(byTask.m1).toMatchObject({ kind: 'ok', reward: 1, meta: { candidate: 'c-1', generation: 4 } });
    expect(byTask.m2).toMatchObject({ kind: 'ok', reward: 1, meta: 'just a string' });
    expect(byTask.m3).toMatchObject({ kind: 'ok', reward: 1, meta: null });
  });

  it('a generated run id is printed and names the default results file', async () => {
    const outcome = await runCli(runArgs(['--max-in-flight', '20']), { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(0);
    const runId = /run id: (run-\d{8}-\d{6}-[0-9a-f]{4})/.exec(outcome.stderr)?.[1];
    expect(runId, outcome.stderr).toBeDefined();
    const lines = readResults(path.join(dir, `results-${runId}.jsonl`));
    expect(resultProblems(lines, leases(runId as string))).toEqual([]);
  });

  it('restart: SIGKILL the coordinator at about half, run the same command again → every lease once', async () => {
    const out = path.join(dir, 'restart.jsonl');
    const args = runArgs(['--run-id', 'restart', '--out', out, '--max-in-flight', '4']);
    const first = startCli(args, { env, cwd: dir });
    await waitFor(() => lineCount(out) >= TASKS / 2, 60_000, `half of the results in ${out}`);
    first.child.kill('SIGKILL');
    const killed = await first.done;
    expect(killed.signal).toBe('SIGKILL');
    const before = lineCount(out);
    expect(before).toBeLessThan(TASKS);
    // As if the process had died in the middle of writing a line.
    appendFileSync(out, '{"leaseId":"restart.t0');

    const second = await runCli(args, { env, cwd: dir });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('a partial last line was dropped');
    expect(resultProblems(readResults(out), leases('restart'))).toEqual([]);
    expect(second.stdout).toContain(`Run restart: ${TASKS} of ${TASKS} result(s), completed`);
  });

  // Fresh-user report: README's recovery (the same command with --run-id) printed "warn: … 196 of
  // this call's 200 drafts named a lease the run delivered before …; use a new runId": for the
  // CLI that is the expected path, said as progress.
  it('re-attach with the same --run-id says how many were delivered before as progress, not a warning pointing at a new runId', async () => {
    const out = path.join(dir, 'reattach.jsonl');
    const args = runArgs(['--run-id', 'reattach', '--out', out, '--max-in-flight', '4']);
    const first = startCli(args, { env, cwd: dir });
    await waitFor(() => lineCount(out) >= TASKS / 4, 60_000, `a quarter of the results in ${out}`);
    first.child.kill('SIGINT');
    expect((await first.done).code).toBe(130);
    // Ctrl-C acknowledges what it wrote: the run delivered exactly the file's lines.
    const delivered = lineCount(out);
    expect(delivered).toBeLessThan(TASKS);

    const second = await runCli(args, { env, cwd: dir });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain(`re-attached to run reattach: ${delivered} of ${TASKS} already delivered, collecting the other ${TASKS - delivered}\n`);
    expect(second.stderr).not.toContain('use a new runId');
    expect(second.stderr).not.toMatch(/^warn:/m);
    expect(resultProblems(readResults(out), leases('reattach'))).toEqual([]);

    // Once more after the run completed: nothing left, said the same way.
    const third = await runCli(args, { env, cwd: dir });
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).toContain(`re-attached to run reattach: all ${TASKS} already delivered, nothing left to collect\n`);
    expect(third.stderr).not.toMatch(/^warn:/m);
  });

  it('Ctrl-C: exit 130 with how to resume; `resume RUN_ID` writes the rest → every lease once', async () => {
    const out = path.join(dir, 'resume.jsonl');
    const first = startCli(runArgs(['--run-id', 'resumed', '--out', out]), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= TASKS / 2, 60_000, `half of the results in ${out}`);
    first.child.kill('SIGINT');
    const interrupted = await first.done;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(interrupted.stderr).toContain(`${cliHint(env, dir)} resume resumed --queue ${queue} --out ${out}`);
    expect(interrupted.stdout).toMatch(/Run resumed: \d+ of 40 result\(s\), interrupted/);

    const resumed = await runCli(['resume', 'resumed', '--queue', queue, '--out', out], { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resultProblems(readResults(out), leases('resumed'))).toEqual([]);
    expect(resumed.stdout).toContain(`Run resumed: ${TASKS} of ${TASKS} result(s), completed`);
  });

  it('cancel from another process ends the run: its coordinator says so, status shows it cancelled', async () => {
    const out = path.join(dir, 'cancel.jsonl');
    const coordinator = startCli(runArgs(['--run-id', 'cancelme', '--out', out, '--max-in-flight', '2']), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= 4, 60_000, 'a few results');
    // The count is of the workers subscribed to the queue's cancel channel: wait for both.
    const redisClient = new Redis(redis.url);
    try {
      const channel = queueKeys(env.ROLLOUT_QUEUE_PREFIX as string, queue).cancelChannel();
      await waitFor(async () => ((await redisClient.pubsub('NUMSUB', channel)) as [string, number])[1] === 2, 60_000, 'both workers listening for cancels');
    } finally {
      redisClient.disconnect();
    }
    const cancel = await runCli(['cancel', 'cancelme', '--queue', queue], { env });
    expect(cancel.code, cancel.stderr).toBe(0);
    // Fresh-user report: "N worker(s) told to stop its active ones" counted every worker of the queue, busy with the run or not.
    expect(cancel.stdout).toMatch(/^cancelled run cancelme: \d+ waiting rollout\(s\) removed; the 2 worker\(s\) serving the queue were told to stop any of its rollouts they are running\n/);
    const end = await coordinator.done;
    expect(end.code, end.stderr).toBe(1);
    expect(end.stderr).toMatch(/cancel/i);
    expect(end.stdout).toMatch(/result\(s\), cancelled/);
    expect(lineCount(out)).toBeLessThan(TASKS);
    const status = await runCli(['status', 'cancelme', '--queue', queue, '--json'], { env });
    expect((JSON.parse(status.stdout) as { run: { status: string } }).run.status).toBe('cancelled');
    // resume of the cancelled run ends as run did (fresh-user report: exit 3, "stopped on a caller result").
    const resumed = await runCli(['resume', 'cancelme', '--queue', queue, '--out', out], { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stdout).toMatch(/result\(s\), cancelled/);
    expect(resumed.stderr).toContain('was cancelled');
    expect(resumed.stderr).not.toContain('caller result');
  });

  it('a results file of another run is refused (exit 2) and left as it is', async () => {
    const out = path.join(dir, 'someone-else.jsonl');
    const before = `${JSON.stringify({ leaseId: 'earlier.t01', runId: 'earlier', kind: 'ok' })}\n`;
    await writeFile(out, before);
    const outcome = await runCli(runArgs(['--run-id', 'other', '--out', out]), { env, cwd: dir });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('holds results of run "earlier"');
    expect(readFileSync(out, 'utf8')).toBe(before);
  });

  // Fresh-user report: --out naming the tasks file printed "run id: … (run the same command with
  // --run-id … to re-attach)" for a run that never existed, then the refusal.
  it('an --out that is not a results file is refused (exit 2) before a run id is announced, and left as it is', async () => {
    const before = readFileSync(tasksFile, 'utf8');
    const outcome = await runCli(runArgs(['--out', tasksFile]), { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toBe(`error: ${tasksFile}:1 is not a result line; move the file away or pass another --out\n`);
    expect(readFileSync(tasksFile, 'utf8')).toBe(before);
  });

  it('a run id of a finished run with another tasks file is refused (exit 2), nothing merged into it (fresh-user report)', async () => {
    const first = await runCli(runArgs(['--run-id', 'reused', '--out', path.join(dir, 'reused.jsonl')]), { env, cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    const otherTasks = path.join(dir, 'other-tasks.jsonl');
    await writeFile(otherTasks, `${JSON.stringify({ id: 'x1', a: 1, b: 2, answer: 3 })}\n${JSON.stringify({ id: 'x2', a: 2, b: 4, answer: 6 })}\n`);
    const again = await runCli(runArgs(['--run-id', 'reused', '--out', path.join(dir, 'reused-2.jsonl')]).map((arg) => (arg === tasksFile ? otherTasks : arg)), { env, cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`run id reused already names a completed run of ${TASKS} spec(s) on queue ${queue}; this tasks file has 2`);
    // Fresh-user report: a tasks file of the same size with one task changed was merged
    // silently, and the old Results were shown as the new task's.
    const sameSize = path.join(dir, 'same-size-tasks.jsonl');
    await writeFile(sameSize, readFileSync(tasksFile, 'utf8').replace('"answer":3}', '"answer":4}'));
    const changed = await runCli(runArgs(['--run-id', 'reused', '--out', path.join(dir, 'reused-3.jsonl')]).map((arg) => (arg === tasksFile ? sameSize : arg)), { env, cwd: dir });
    expect(changed.code, changed.stderr).toBe(2);
    expect(changed.stderr).toContain(`run id reused already names a completed run on queue ${queue} made from other inputs: its tasks differ from this tasks file`);
    const status = await runCli(['status', 'reused', '--queue', queue, '--json'], { env });
    expect(JSON.parse(status.stdout).run).toMatchObject({ status: 'completed', specCount: TASKS, enqueued: TASKS, sourceFingerprint: expect.stringMatching(/^[0-9a-f]{32}\.[0-9a-f]{32}$/) });
    // The same inputs again resume the run: nothing enqueued, every Result already in the file.
    // Spelt differently but meaning the same (fresh-user report: refused): config keys in
    // another order, the default --memory-mb given explicitly.
    const same = await runCli([...runArgs(['--run-id', 'reused', '--out', path.join(dir, 'reused.jsonl')]), '--memory-mb', '1024']
      .map((arg) => (arg === '{"goldKey":"answer"}' ? '{ "goldKey": "answer" }' : arg === '{"timeoutMs":10000}' ? '{"entrypoint":"add.js","timeoutMs":10000}' : arg)), { env, cwd: dir });
    expect(same.code, same.stderr).toBe(0);
    expect(lineCount(path.join(dir, 'reused.jsonl'))).toBe(TASKS);
  });

  it('a Ref outside the allowlist stops the run on a caller result: exit 3, names the lease', async () => {
    const out = path.join(dir, 'caller.jsonl');
    const outcome = await runCli(
      ['run', '--tasks', tasksFile, '--artifact', artifact, '--run', 'not-allowed-module:run', '--reward', 'rollout-queue/rewards:lastNumber',
        '--reward-config', '{"goldKey":"answer"}', '--queue', queue, '--run-id', 'caller', '--out', out, '--max-in-flight', '2'],
      { env, cwd: dir },
    );
    expect(outcome.code, outcome.stderr).toBe(3);
    expect(outcome.stderr).toMatch(/run stopped on a caller result for lease caller\.t\d\d/);
    // Regression: it said "the other rollouts were not enqueued" although they had been, and to run again with the same id.
    expect(outcome.stderr).toContain("run again with a new --run-id; rollouts of this run that had not started were removed and get no Result");
    expect(outcome.stdout).toContain('stopped on a caller result');
    // docs/cli.md: the stdout summary says which lease and why, as stderr does (it said neither).
    // The row is one line, cut with "…" (this reason is longer); stderr has it whole.
    const stopRow = /^ {2}stopped by {10}lease (caller\.t\d\d: RefError: .+?)…?$/m.exec(outcome.stdout);
    expect(stopRow, outcome.stdout).not.toBeNull();
    expect(outcome.stderr).toContain(`run stopped on a caller result for lease ${stopRow?.[1]}`);
    const lines = readResults(out);
    expect(lines.some((line) => line.kind === 'caller')).toBe(true);
    expect(lines.length).toBeLessThan(TASKS);
  });
});
