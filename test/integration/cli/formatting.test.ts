import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../../src/lease/index.js';
import type { StatusView } from '../../../src/cli/plane.js';
import { formatStatus, statusJson } from '../../../src/cli/status-format.js';
import { formatSummary } from '../../../src/cli/summary.js';
import { percentile, RunTally, toResultLine } from '../../../src/cli/run-tally.js';
import { RESULT_LINE_FIELDS, resultEnding, type Result } from '../../../src/spec/index.js';

// What `status` and the run summary print, from fixed inputs (no Redis needed).
const run: RunRecord = {
  runId: 'r1', status: 'running', stopReason: null, createdAt: '2026-11-29T12:00:00.000Z', runAttemptId: 'a',
  specCount: 10, sourceFingerprint: null, coordinatorNote: null, enqueued: 10, delivered: 7, redispatched: 3, duplicatesDropped: 1, alreadyEnqueued: 0, truncated: 2,
  kinds: { ok: 5, model: 1, infrastructure: 1, caller: 0 }, endedAt: null, retainMs: null, restoredAt: null,
  quarantined: { 'r1.t9': { reason: 'ChildCrashed', exitCode: null, signal: 'SIGABRT', stderrTail: 'line 1\ninvariant failed: stock < 0' } },
};
const view: StatusView = {
  counts: { waiting: 2, active: 1, completed: 7 },
  run,
  workers: [{ name: 'w1', details: { addr: '127.0.0.1:5000', age: '12', idle: '0' } }],
};
const place = { queue: 'rollouts', prefix: 'rq', address: 'redis://:***@127.0.0.1:6379', runs: ['r1'] };

describe('status output', () => {
  it('shows jobs by state, workers, results by kind, counters and quarantined leases with exit code, signal and stderr tail', () => {
    const text = formatStatus(view, place);
    expect(text).toMatch(/waiting\s+2/);
    expect(text).toContain('Workers connected: 1');
    // Fair share parks new jobs in BullMQ's prioritized set: the text counts them as waiting.
    const fair = formatStatus({ ...view, counts: { waiting: 0, prioritized: 20, active: 1 } }, place);
    expect(fair).toMatch(/waiting\s+20  \(20 in fair-share order\)/);
    expect(fair).not.toMatch(/prioritized/);
    expect(text).toContain('w1  addr=127.0.0.1:5000 age=12 idle=0');
    expect(text).toMatch(/delivered\s+7\n  of the delivered Results, by kind:\n\s+ok\s+5\n/);
    expect(text).toMatch(/infrastructure\s+1/);
    expect(text).toMatch(/redispatched\s+3/);
    expect(text).toMatch(/duplicates dropped\s+1/);
    expect(text).toMatch(/truncated output\s+2/);
    expect(text).toContain('Quarantined leases (ended by the re-dispatch limit): 1');
    expect(text).toContain('r1.t9  exit code -, signal SIGABRT: ChildCrashed');
    expect(text).toContain('invariant failed: stock < 0');
  });

  it('without a run id names the newest 20 runs and says how many there are (fresh-user report: older runs vanished silently)', () => {
    const runs = Array.from({ length: 31 }, (_, i) => `run-${i}`);
    const text = formatStatus({ ...view, run: undefined }, { ...place, runs });
    expect(text).toContain(`Runs (the newest 20 of 31; \`status --json\` lists all): ${runs.slice(11).join(', ')}`);
    expect(formatStatus({ ...view, run: undefined }, { ...place, runs: ['a', 'b'] })).toContain('Runs: a, b');
  });

  // Second fresh-user pass: `status` of an interrupted run said "running" and nothing else.
  it('a running run no coordinator delivers names resume, with the queue, as the hint to paste', () => {
    const text = formatStatus({ ...view, delivering: false }, { ...place, queue: 'kq' });
    expect(text).toContain('Run r1: running');
    expect(text).toContain('no coordinator is delivering it');
    // Fresh-user report: it named results-r1.jsonl whatever --out the run wrote, splitting its Results across two files.
    expect(text).toContain('rollout-queue resume r1 --queue kq --out FILE');
    expect(text).toContain('where FILE is the results file its run command wrote');
    // Fresh-user report: for a run of the library (no results file) it gave only CLI advice.
    expect(text).toContain('a run of the library recorded no file: its program collects the rest with queue.attach("r1")');
    const recorded = formatStatus({ ...view, delivering: false, resultsFile: '/data/my results.jsonl' }, { ...place, queue: 'kq' });
    expect(recorded).toContain("rollout-queue resume r1 --queue kq --out '/data/my results.jsonl'");
    expect(recorded).not.toContain('FILE');
    expect(formatStatus({ ...view, delivering: true }, place)).not.toContain('no coordinator');
    expect(formatStatus({ ...view, run: { ...run, status: 'completed' }, delivering: false }, place)).not.toContain('no coordinator');
    expect(statusJson({ ...view, delivering: false }, place)).toMatchObject({ delivering: false });
  });

  // Fresh-user report: after cancel, neither run's exit nor status said Results of rollouts still running needed resume.
  it('a cancelled run no coordinator delivers says how many Results are undelivered and the resume command, only while there are some', () => {
    const cancelled = { ...run, status: 'cancelled' as const, stopReason: 'cancelled with `rollout-queue cancel`' };
    const text = formatStatus({ ...view, run: cancelled, delivering: false, undelivered: 2, resultsFile: '/data/r1.jsonl' }, place);
    expect(text).toContain('2 Result(s) are not delivered yet, of rollouts that had finished, or were still running, when it was cancelled');
    expect(text).toContain('rollout-queue resume r1 --out /data/r1.jsonl');
    expect(formatStatus({ ...view, run: cancelled, delivering: false, undelivered: 2 }, place)).toContain('where FILE is the results file its run command wrote');
    expect(formatStatus({ ...view, run: cancelled, delivering: false, undelivered: 0 }, place)).not.toContain('not delivered yet');
    expect(formatStatus({ ...view, run: cancelled, delivering: true, undelivered: 2 }, place)).not.toContain('not delivered yet');
    expect(statusJson({ ...view, run: cancelled, delivering: false, undelivered: 2 }, place)).toMatchObject({ undelivered: 2 });
  });

  it('a run whose record its coordinator made again after Redis lost it says so, and that its counts start there', () => {
    expect(formatStatus(view, place)).not.toContain('Redis lost');
    const text = formatStatus({ ...view, run: { ...run, restoredAt: '2026-12-04T14:00:00.000Z' } }, place);
    expect(text).toContain("Redis lost this run's record mid-run");
    expect(text).toContain('made it again at 2026-12-04T14:00:00.000Z and added the lost jobs again: the counts below start there');
  });

  it('as JSON keeps the run record whole', () => {
    expect(statusJson(view, place)).toMatchObject({ queue: 'rollouts', run: { quarantined: { 'r1.t9': { signal: 'SIGABRT' } } }, workers: [{ name: 'w1' }] });
  });
});

describe('results file lines and the summary', () => {
  const result = (n: number, kind: Result['kind'], reward: number | null, worker: string): Result => ({
    leaseId: `r1.t${n}`, runId: 'r1', taskId: `t${n}`, ...resultEnding(kind, { n }, reward, kind === 'ok' ? null : { type: 'NonZeroExit', message: 'exit 1' }),
    attempts: 1, redispatched: n === 3 ? 1 : 0, worker, queuedMs: 5, runMs: n * 100, finishedAt: '2026-11-29T12:00:00.000Z', cost: [{ id: 'c', usd: 0.1 }],
  });

  it('a line holds exactly RESULT_LINE_FIELDS, in order (cost receipts included)', () => {
    expect(Object.keys(toResultLine(result(1, 'ok', 1, 'w1')))).toEqual([...RESULT_LINE_FIELDS]);
  });

  it('the summary has counts by kind, mean reward over ok with the spread, p50/p95, per-worker results, counters, the file', () => {
    const tally = new RunTally();
    [result(1, 'ok', 1, 'w1'), result(2, 'ok', 0, 'w2'), result(3, 'ok', 1, 'w1'), result(4, 'model', null, 'w2')].forEach((r) => tally.add(toResultLine(r)));
    const text = formatSummary({ runId: 'r1', total: 4, end: 'completed', tally, counters: { redispatched: 2, duplicatesDropped: 1 }, file: '/tmp/out.jsonl' });
    expect(text).toContain('Run r1: 4 of 4 result(s), completed');
    expect(text).toMatch(/ok\s+3\s+mean reward 0\.667 over ok \(reward 1: 2, reward 0: 1\)/);
    expect(text).toMatch(/model\s+1/);
    expect(text).toMatch(/run time\s+p50 200 ms, p95 400 ms/);
    expect(text).toMatch(/results per worker\s+w1: 2, w2: 2/);
    expect(text).toMatch(/redispatched\s+2/);
    expect(text).toMatch(/duplicates dropped\s+1/);
    expect(text).toMatch(/truncated output\s+0/);
    expect(text).not.toContain('eval cache');
    expect(text).toContain('/tmp/out.jsonl');
  });

  // Review note: a run of --class evaluation said nothing of the Results the cache answered.
  it('the summary counts Results answered from the evaluation cache, when any were', () => {
    const tally = new RunTally();
    [{ ...result(1, 'ok', 1, 'w1'), cached: true }, { ...result(2, 'ok', 1, 'w1'), cached: true }, result(3, 'ok', 1, 'w2')].forEach((r) => tally.add(toResultLine(r)));
    const text = formatSummary({ runId: 'r1', total: 3, end: 'completed', tally, counters: undefined, file: '/tmp/out.jsonl' });
    expect(text).toMatch(/from the eval cache\s+2\s+Result\(s\) of an earlier identical evaluation, not run again/);
  });

  it('the summary counts Results on truncated output and the rewards computed on it (BR-34)', () => {
    const tally = new RunTally();
    const cut = { ...result(1, 'ok', 0, 'w1'), output: { stdout: 'x', stdoutTruncated: true, stderrTruncated: false } };
    const cutModel = { ...result(2, 'model', null, 'w1'), output: { stdout: 'x', stdoutTruncated: false, stderrTruncated: true } };
    [cut, cutModel, result(3, 'ok', 1, 'w1')].forEach((r) => tally.add(toResultLine(r)));
    const text = formatSummary({ runId: 'r1', total: 3, end: 'completed', tally, counters: undefined, file: '/tmp/out.jsonl' });
    expect(text).toMatch(/truncated output\s+2\s+1 reward\(s\) computed on output cut at maxOutputBytes/);
  });

  it('percentile is nearest-rank', () => {
    expect(percentile([], 50)).toBeUndefined();
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 95)).toBe(95);
  });
});
