import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { cliHint, killLeftovers, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { resultLineCount } from './results-file.js';

// Fresh-user report: the hints that name `resume` (status, a refused coordinator, a cancelled
// run) must name the run's own results file, and a coordinator refused as busy must say so and
// leave nothing behind. Rollouts of a task with a "gate" wait until that file exists, so a test
// decides when they finish (no sleeps). The gate is a file of the test's in the host's temp dir,
// out of the reach of an artifact at the sealed level: the workers here run at `namespace+cgroup`
// on purpose (what is tested is the coordinator's hints, not the containment; test/hostile is).
const WEAKER_LEVEL = ['--containment', 'namespace+cgroup'];
let redis: TestRedis;
let dir: string;
let artifact: string;
let env: Record<string, string>;
let worker: CliProcess;
const queue = 'hints';

const lineCount = resultLineCount;
const leasesIn = (file: string): string[] =>
  readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => (JSON.parse(l) as { leaseId: string }).leaseId).sort();

/** A tasks file: task `a` finishes at once, the others once `gate` exists (each writes `<gate>.<id>.started` when it starts). */
async function gatedTasks(name: string, gate: string, gated = 2): Promise<string> {
  const file = path.join(dir, `${name}.tasks.jsonl`);
  const lines = [{ id: 'a', answer: 1, expect: 1 }, ...Array.from({ length: gated }, (_, i) => ({ id: `g${i + 1}`, answer: i + 2, expect: i + 2, gate }))];
  await writeFile(file, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  return file;
}

const runArgs = (tasks: string, extra: string[]): string[] => [
  'run', '--tasks', tasks, '--artifact', artifact,
  '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
  '--queue', queue, ...extra,
];

/** The arguments of the `resume` command line a hint prints (after the CLI's own name). */
function hintedResume(text: string): string[] {
  const line = text.split('\n').find((l) => l.includes(`${cliHint(env, dir)} resume `));
  if (!line) throw new Error(`no resume command in:\n${text}`);
  return line.trim().slice(cliHint(env, dir).length + 1).split(' ');
}

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-cli-hints-'));
  artifact = path.join(dir, 'gated.js');
  await writeFile(
    artifact,
    "const fs = require('node:fs');\nlet input = '';\nprocess.stdin.on('data', (c) => (input += c));\n" +
      "process.stdin.on('end', () => {\n  const task = JSON.parse(input);\n  if (task.gate) fs.writeFileSync(`${task.gate}.${task.id}.started`, '');\n" +
      '  const go = () => (!task.gate || fs.existsSync(task.gate) ? console.log(`Answer: ${task.expect}`) : setTimeout(go, 50));\n  go();\n});\n',
  );
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('hint') };
  worker = startCli(['worker', '--queue', queue, '--concurrency', '4', '--name', 'hint-w', ...WEAKER_LEVEL], { env });
});

afterAll(async () => {
  worker.child.kill('SIGTERM');
  const end = await worker.done;
  const leaked = await killLeftovers();
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
  expect(end.code, end.stderr).toBe(0);
  expect(leaked).toEqual([]);
});

afterEach(async () => {
  expect(worker.child.exitCode, worker.stderr()).toBeNull();
});

describe('status of an interrupted run', () => {
  it("names resume with the run's own --out (was results-<runId>.jsonl); following it keeps every Result in that one file", async () => {
    const gate = path.join(dir, 'gate-hint1');
    const out = path.join(dir, 'kept', 'hint1-results.jsonl');
    const coordinator = startCli(runArgs(await gatedTasks('hint1', gate), ['--run-id', 'hint1', '--out', out]), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= 1, 60_000, 'the first result');
    coordinator.child.kill('SIGINT');
    const end = await coordinator.done;
    expect(end.code, end.stderr).toBe(130);

    const status = await runCli(['status', 'hint1', '--queue', queue], { env, cwd: dir });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`${cliHint(env, dir)} resume hint1 --queue ${queue} --out ${out}`);
    expect(status.stdout).not.toContain('results-hint1.jsonl');

    // Fresh-user report: an interrupted resume always added "(if not every task was enqueued
    // yet, run the same run command again …)"; the run's record says every task was.
    // Started elsewhere and without --out (fresh-user report, helper-24: from another directory
    // it looked for results-hint1.jsonl there and was refused): it collects into the run's file.
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'rq-elsewhere-'));
    const interrupted = startCli(['resume', 'hint1', '--queue', queue], { env, cwd: elsewhere });
    await waitFor(() => interrupted.stderr().includes('re-attaching to run hint1'), 30_000, 'the resume to start');
    interrupted.child.kill('SIGINT');
    const stopped = await interrupted.done;
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(stopped.stderr).toContain(`interrupted: run hint1 goes on in Redis. Collect the rest with\n  ${cliHint(env, elsewhere)} resume hint1 --queue ${queue} --out ${out}\nor stop it with`);
    expect(readdirSync(elsewhere)).toEqual([]);
    await rm(elsewhere, { recursive: true, force: true });
    expect(stopped.stderr).not.toContain('if not every task was enqueued yet');

    await writeFile(gate, '');
    const resumed = await runCli(hintedResume(status.stdout), { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(leasesIn(out)).toEqual(['hint1.a', 'hint1.g1', 'hint1.g2']);
    expect(readdirSync(dir).filter((name) => name.startsWith('results-'))).toEqual([]);
  });
});

describe('a second coordinator of a run whose coordinator is alive', () => {
  it('is refused: says who holds the run and how to go on, prints no summary of Results it never delivered (run and resume alike)', async () => {
    const gate = path.join(dir, 'gate-hint2');
    const out = path.join(dir, 'hint2.jsonl');
    const tasks = await gatedTasks('hint2', gate);
    const first = startCli(runArgs(tasks, ['--run-id', 'hint2', '--out', out]), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= 1, 60_000, 'the first result');
    // Both wait for the first coordinator's lease (it keeps renewing it), then give up.
    const [again, resumed] = await Promise.all([
      runCli(runArgs(tasks, ['--run-id', 'hint2', '--out', out]), { env, cwd: dir }),
      runCli(['resume', 'hint2', '--queue', queue, '--out', path.join(dir, 'hint2-other.jsonl')], { env, cwd: dir }),
    ]);
    for (const [command, end] of [['run', again], ['resume', resumed]] as const) {
      expect(end.code, end.stderr).toBe(1);
      // Was: "Run hint2: 1 of 3 result(s), failed" and the first coordinator's Results as its own.
      expect(end.stdout).toBe('');
      expect(end.stderr).not.toMatch(/result\(s\), failed|could not be followed/);
      expect(end.stderr).toContain(`run hint2 is being delivered by another coordinator (pid ${first.child.pid} on ${os.hostname()}), so this ${command} was refused and delivered no Result`);
      expect(end.stderr).toContain(`writes the run's Results to ${out}`);
      expect(end.stderr).toContain(`${cliHint(env, dir)} resume hint2 --queue ${queue} --out ${out}`);
    }
    await writeFile(gate, '');
    const done = await first.done;
    expect(done.code, done.stderr).toBe(0);
    expect(leasesIn(out)).toEqual(['hint2.a', 'hint2.g1', 'hint2.g2']);
  });

  it('a refused resume creates nothing: no results file, no directory for it (was an empty file left behind)', async () => {
    const gate = path.join(dir, 'gate-hint3');
    const out = path.join(dir, 'hint3.jsonl');
    const first = startCli(runArgs(await gatedTasks('hint3', gate), ['--run-id', 'hint3', '--out', out]), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= 1, 60_000, 'the first result');
    const elsewhere = path.join(dir, 'not-yet', 'hint3-resumed.jsonl');
    const resumed = await runCli(['resume', 'hint3', '--queue', queue, '--out', elsewhere], { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stderr).toContain('so this resume was refused');
    expect(existsSync(elsewhere)).toBe(false);
    expect(existsSync(path.dirname(elsewhere))).toBe(false);
    await writeFile(gate, '');
    const done = await first.done;
    expect(done.code, done.stderr).toBe(0);
    expect(leasesIn(out)).toEqual(['hint3.a', 'hint3.g1', 'hint3.g2']);
  });
});

describe('a run cancelled while rollouts were running', () => {
  it('its run and its status say how many Results are undelivered and the exact resume command; following it collects them into the same file', async () => {
    const gate = path.join(dir, 'gate-hint4');
    const out = path.join(dir, 'hint4.jsonl');
    const coordinator = startCli(runArgs(await gatedTasks('hint4', gate), ['--run-id', 'hint4', '--out', out]), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= 1 && existsSync(`${gate}.g1.started`) && existsSync(`${gate}.g2.started`), 60_000, 'the first result and both gated rollouts running');
    const cancel = await runCli(['cancel', 'hint4', '--queue', queue], { env, cwd: dir });
    expect(cancel.code, cancel.stderr).toBe(0);
    const end = await coordinator.done;
    expect(end.code, end.stderr).toBe(1);
    expect(end.stdout).toMatch(/result\(s\), cancelled/);
    // Each of the three rollouts ends in a Result (none was waiting); those not in the file yet need resume.
    const missing = 3 - lineCount(out);
    expect(missing).toBeGreaterThan(0);
    expect(end.stderr).toContain(`${missing} Result(s) are not in ${out} yet, of rollouts that had finished but were not delivered, or were still running, when the run was cancelled`);
    expect(end.stderr).toContain(`${cliHint(env, dir)} resume hint4 --queue ${queue} --out ${out}`);

    const status = await runCli(['status', 'hint4', '--queue', queue], { env, cwd: dir });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('Run hint4: cancelled');
    expect(status.stdout).toContain(`${missing} Result(s) are not delivered yet, of rollouts that had finished, or were still running, when it was cancelled`);
    expect(status.stdout).toContain(`${cliHint(env, dir)} resume hint4 --queue ${queue} --out ${out}`);

    const resumed = await runCli(hintedResume(status.stdout), { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stderr).toContain('was cancelled earlier');
    expect(leasesIn(out)).toEqual(['hint4.a', 'hint4.g1', 'hint4.g2']);
    const after = await runCli(['status', 'hint4', '--queue', queue], { env, cwd: dir });
    expect(after.stdout).not.toContain('not delivered yet');
  });
});

// Fresh-user report: `resume` of a completed run into another file made that file empty, ended
// "0 of 3, incomplete" and stored it as the run's results file, so later hints named the empty one.
describe('a completed run collected into another file', () => {
  it('is refused with where its Results went; the new file is not made and the run keeps its own file (run and resume alike)', async () => {
    const gate = path.join(dir, 'gate-hint5');
    await writeFile(gate, '');
    const out = path.join(dir, 'hint5.jsonl');
    const tasks = await gatedTasks('hint5', gate);
    const first = await runCli(runArgs(tasks, ['--run-id', 'hint5', '--out', out]), { env, cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    for (const [command, args] of [
      ['resume', ['resume', 'hint5', '--queue', queue, '--out', path.join(dir, 'hint5-again.jsonl')]],
      ['run', runArgs(tasks, ['--run-id', 'hint5', '--out', path.join(dir, 'hint5-again.jsonl')])],
    ] as const) {
      const again = await runCli([...args], { env, cwd: dir });
      expect(again.code, `${command}: ${again.stderr}`).toBe(1);
      expect(again.stderr).toContain(`run hint5 is completed and all 3 of its Results were delivered, to ${out}`);
      expect(again.stdout).toBe('');
      expect(existsSync(path.join(dir, 'hint5-again.jsonl'))).toBe(false);
    }
    const status = await runCli(['status', 'hint5', '--queue', queue], { env, cwd: dir });
    expect(status.stdout).toContain('Run hint5: completed');
    // Into its own file it is the idempotent re-run: every Result is there already.
    const same = await runCli(['resume', 'hint5', '--queue', queue, '--out', out], { env, cwd: dir });
    expect(same.code, same.stderr).toBe(0);
    expect(leasesIn(out)).toEqual(['hint5.a', 'hint5.g1', 'hint5.g2']);
    // Re-reading it is no new end: when it was delivered and when it expires stay as they were (both moved).
    const ended = (text: string): string | undefined => text.split('\n').find((line) => line.trim().startsWith('delivered ') && line.includes('expires'));
    expect(ended(status.stdout)).toMatch(/delivered +\d{4}-/);
    expect(ended((await runCli(['status', 'hint5', '--queue', queue], { env, cwd: dir })).stdout)).toBe(ended(status.stdout));
    const refusedAgain = await runCli(['resume', 'hint5', '--queue', queue, '--out', path.join(dir, 'hint5-third.jsonl')], { env, cwd: dir });
    expect(refusedAgain.stderr).toContain(`delivered, to ${out}`);
  });
});

// Fresh-user report: a second coordinator of the same run waited for the first one's lease, then
// ended "0 of 3, incomplete" with an empty file, and its file became the run's results file.
describe('a coordinator that waited while another finished the run', () => {
  it('is refused with where the Results went, leaves no file and does not become the run\'s results file', async () => {
    const gate = path.join(dir, 'gate-hint6');
    const out = path.join(dir, 'hint6.jsonl');
    const other = path.join(dir, 'hint6-other.jsonl');
    const tasks = await gatedTasks('hint6', gate);
    const first = startCli(runArgs(tasks, ['--run-id', 'hint6', '--out', out]), { env, cwd: dir });
    await waitFor(() => lineCount(out) >= 1 && existsSync(`${gate}.g1.started`) && existsSync(`${gate}.g2.started`), 60_000, 'the first result and both gated rollouts running');
    const second = startCli(runArgs(tasks, ['--run-id', 'hint6', '--out', other]), { env, cwd: dir });
    await waitFor(() => second.stderr().includes('another coordinator holds this run; waiting'), 30_000, 'the second coordinator waiting for the lease');
    // A line of text among the command's own (fresh-user report: it was pino's JSON line).
    expect(second.stderr()).toMatch(/^warn: another coordinator holds this run; waiting for its lease to expire .*\(runId=hint6, /m);
    expect(second.stderr()).not.toContain('{"level"');
    await writeFile(gate, '');
    const [end, waited] = await Promise.all([first.done, second.done]);
    expect(end.code, end.stderr).toBe(0);
    expect(waited.code, waited.stderr).toBe(1);
    expect(waited.stderr).toContain(`run hint6 is completed and all 3 of its Results were delivered, to ${out}`);
    expect(waited.stdout).toBe('');
    expect(existsSync(other)).toBe(false);
    expect(leasesIn(out)).toEqual(['hint6.a', 'hint6.g1', 'hint6.g2']);
    const status = await runCli(['status', 'hint6', '--queue', queue], { env, cwd: dir });
    const refused = await runCli(['resume', 'hint6', '--queue', queue, '--out', other], { env, cwd: dir });
    expect(refused.stderr, status.stdout).toContain(`delivered, to ${out}`);
  });
});

// Fresh-user report: `run --out a3.jsonl` delivering, and the same run started again with
// `--out b3.jsonl`, waiting. Once the first was killed (kill -9), the second took over, wrote
// the rest into b3.jsonl and ended "57 of 120, incomplete" without naming a3.jsonl. One run's
// Results, one file: both are refused, before waiting and after it, naming the file to use.
describe('a second coordinator of a run with another results file', () => {
  it('is refused at once when the run\'s file holds Results, and when it took over from a killed one', async () => {
    const early = path.join(dir, 'split-gate-early');
    const late = path.join(dir, 'split-gate-late');
    const out = path.join(dir, 'split.jsonl');
    const other = path.join(dir, 'split-other.jsonl');
    const tasks = path.join(dir, 'split.tasks.jsonl');
    const lines = [{ id: 't1', answer: 1, expect: 1, gate: early }, { id: 't2', answer: 2, expect: 2, gate: late }, { id: 't3', answer: 3, expect: 3, gate: late }];
    await writeFile(tasks, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const first = startCli(runArgs(tasks, ['--run-id', 'split', '--out', out]), { env, cwd: dir });
    await waitFor(() => existsSync(`${early}.t1.started`) && existsSync(`${late}.t2.started`), 60_000, 'the first coordinator\'s rollouts running');
    // Its file is empty: the second one waits for the lease.
    const second = startCli(runArgs(tasks, ['--run-id', 'split', '--out', other]), { env, cwd: dir });
    await waitFor(() => second.stderr().includes('another coordinator holds this run; waiting'), 30_000, 'the second coordinator waiting for the lease');
    await writeFile(early, '');
    await waitFor(() => lineCount(out) === 1, 30_000, 'the first Result in the first file');
    first.child.kill('SIGKILL');
    const taken = await second.done;
    expect(taken.code, taken.stderr).toBe(1);
    expect(taken.stderr).toContain(`run split delivers its Results to ${out}, which holds 1 of them: collecting the rest into ${other} would split the run`);
    expect(taken.stderr).toContain(`run the same command with --out ${out}`);
    expect(taken.stdout).toBe(''); // no summary of a run it never delivered (fresh-user report: "0 of 3, failed")
    expect(existsSync(other)).toBe(false);
    // With no coordinator left, another is refused before it waits; resume alike.
    const third = await runCli(runArgs(tasks, ['--run-id', 'split', '--out', other]), { env, cwd: dir });
    expect(third.code, third.stderr).toBe(1);
    expect(third.stderr).toContain(`run split delivers its Results to ${out}, which holds 1 of them`);
    const resumed = await runCli(['resume', 'split', '--queue', queue, '--out', other], { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stderr).toContain(`resume split --queue ${queue} --out ${out}`);
    expect(existsSync(other)).toBe(false);
    // As the message says: the same command into the run's own file finishes it there.
    await writeFile(late, '');
    const again = await runCli(runArgs(tasks, ['--run-id', 'split', '--out', out]), { env, cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(leasesIn(out)).toEqual(['split.t1', 'split.t2', 'split.t3']);
  });
});

// Fresh-user report: after Redis lost its data, `resume RUN --out FILE` said only "no run … check
// the id", though FILE held Results of that run; re-running `run` is what finishes it.
describe('resume of a run Redis no longer has, into a file holding its Results', () => {
  it('says Redis lost it and gives the run command that finishes it', async () => {
    const out = path.join(dir, 'gone.jsonl');
    await writeFile(out, `${JSON.stringify({ leaseId: 'gone1.a', runId: 'gone1', taskId: 'a', kind: 'ok', reward: 1 })}\n`);
    const outcome = await runCli(['resume', 'gone1', '--queue', queue, '--out', out], { env, cwd: dir });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain(`no run "gone1" on queue "${queue}" any more, though ${out} holds 1 of its Results`);
    expect(outcome.stderr).toContain(`run …\` command again with --run-id gone1 --out ${out}`);
    const unknown = await runCli(['resume', 'gone2', '--queue', queue, '--out', path.join(dir, 'none.jsonl')], { env, cwd: dir });
    expect(unknown.stderr).toContain('no run "gone2"');
    expect(unknown.stderr).not.toContain('any more');
    // Fresh-user report (helper-30): with no file of the run at hand, resume said only "check the
    // id"; re-running the run command with its --out is what finishes a run Redis lost.
    expect(unknown.stderr).toContain(`If Redis lost it (restarted without persistence, or flushed), run the same \`${cliHint(env, dir)} run …\` command again with --run-id gone2 --queue ${queue} and the --out it wrote to: it keeps the Results in that file and runs the rest`);
  });
});

// Fresh-user report: after `purge`, the same --run-id with changed tasks ran everything again,
// kept the old Results in the file and exited 0 without a word (the file does not record inputs).
describe('run of a run id Redis no longer has, into a file holding its Results', () => {
  it('warns that every task runs again and the old Results are kept as they are', async () => {
    const out = path.join(dir, 'gone3.jsonl');
    const gate = path.join(dir, 'gate-gone3');
    await writeFile(gate, '');
    const tasks = await gatedTasks('gone3', gate, 1);
    await writeFile(out, `${JSON.stringify({ leaseId: 'gone3.a', runId: 'gone3', taskId: 'a', kind: 'ok', reward: 0 })}\n`);
    const first = await runCli(runArgs(tasks, ['--run-id', 'gone3', '--out', out]), { env, cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(`warning: Redis has no run gone3, though ${out} holds 1 of its Results`);
    expect(leasesIn(out)).toEqual(['gone3.a', 'gone3.g1']);
    // Now Redis has it: the same command again is the quiet no-op.
    const again = await runCli(runArgs(tasks, ['--run-id', 'gone3', '--out', out]), { env, cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('Redis has no run');
  });

  // Fresh-user report: after `purge --older-than 0s`, the same command ran all 240 tasks again,
  // kept none of their Results (the file had them all) and reprinted the old summary.
  it('runs nothing when the file holds a Result of every task, and says so', async () => {
    const out = path.join(dir, 'gone5.jsonl');
    const tasks = await gatedTasks('gone5', path.join(dir, 'gate-gone5'), 0);
    const before = `${JSON.stringify({ leaseId: 'gone5.a', runId: 'gone5', taskId: 'a', kind: 'ok', reward: 1 })}\n`;
    await writeFile(out, before);
    const outcome = await runCli(runArgs(tasks, ['--run-id', 'gone5', '--out', out]), { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toContain(
      `Redis has no run gone5 any more (purged, past its retention, or lost in a Redis restart), and ${out} holds a Result for every one of its 1 task(s): nothing runs again. To run the tasks again, pass a new --run-id (or leave it out)`,
    );
    expect(outcome.stdout).toContain('Run gone5: 1 of 1 result(s), completed');
    expect(readFileSync(out, 'utf8')).toBe(before);
    // Nothing was enqueued: Redis still has no such run.
    const status = await runCli(['status', 'gone5', '--queue', queue], { env, cwd: dir });
    expect(status.code).toBe(1);
  });
});

// Fresh-user report: a run stopped on a caller Result said only "(running ones finish; resume
// collects them)", where a cancelled run says how many Results are still to come and the command.
describe('a run stopped on a caller Result while other rollouts run', () => {
  it('says how many Results of running rollouts are not in the file yet and the resume that collects them', async () => {
    const gate = path.join(dir, 'gate-stop1');
    const out = path.join(dir, 'stop1.jsonl');
    const tasks = path.join(dir, 'stop1.tasks.jsonl');
    // `a` ends caller (a reward of 5 is outside rewardRange [0, 1]) once its own gate opens, which
    // the test opens when g1 and g2 run; they run until theirs opens.
    const gateA = path.join(dir, 'gate-stop1a');
    const lines = [{ id: 'a', reward: 5, gate: gateA }, { id: 'g1', reward: 1, gate }, { id: 'g2', reward: 1, gate }];
    await writeFile(tasks, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const callerQueue = 'hints-caller';
    const own = startCli(['worker', '--queue', callerQueue, '--concurrency', '4', '--name', 'hint-caller-w', '--allow', 'rq-fixtures/*', ...WEAKER_LEVEL], { env });
    try {
      const args = ['run', '--tasks', tasks, '--artifact', artifact, '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rq-fixtures/failures:fromTask', '--queue', callerQueue, '--run-id', 'stop1', '--out', out];
      const run = startCli(args, { env, cwd: dir });
      await waitFor(() => existsSync(`${gate}.g1.started`) && existsSync(`${gate}.g2.started`), 60_000, 'both gated rollouts running');
      await writeFile(gateA, '');
      const stopped = await run.done;
      expect(stopped.code, stopped.stderr).toBe(3);
      expect(stopped.stderr).toContain('run stopped on a caller result for lease stop1.a: RewardOutOfRange');
      expect(stopped.stdout).toMatch(/^ {2}stopped by {10}lease stop1\.a: RewardOutOfRange: /m);
      expect(stopped.stderr).toContain(`2 Result(s) are not in ${out} yet, of rollouts that had finished but were not delivered, or were still running, when the run was stopped (running ones run to their end); collect them with`);
      expect(stopped.stderr).not.toContain('running ones finish');
      const resume = hintedResume(stopped.stderr);
      await writeFile(gate, '');
      const collected = await runCli(resume, { env, cwd: dir });
      expect(leasesIn(out)).toEqual(['stop1.a', 'stop1.g1', 'stop1.g2']);
      expect(collected.stderr).not.toContain('Error:');
    } finally {
      own.child.kill('SIGTERM');
      await own.done;
    }
  });
});
