import { describe, expect, it } from 'vitest';
import { errorTypeBreakdown, formatSummary, meanRewardOverAll } from '../../../src/cli/summary.js';
import { RunTally } from '../../../src/cli/run-tally.js';

type Line = Parameters<RunTally['add']>[0];
const line = (kind: Line['kind'], reward: number | null, type?: string): Line => ({
  kind, reward, runMs: 100, worker: 'w1', redispatched: 0, error: type === undefined ? null : { type },
});

/** The issue-31 run: 9 ok (rewards 1,1,1,1,1,1,0,0,0), 11 model (7 NonZeroExit, 4 RunTimeout). */
function issueRun(): RunTally {
  const tally = new RunTally();
  for (const reward of [1, 1, 1, 1, 1, 1, 0, 0, 0]) tally.add(line('ok', reward));
  for (let i = 0; i < 7; i++) tally.add(line('model', null, 'NonZeroExit'));
  for (let i = 0; i < 4; i++) tally.add(line('model', null, 'RunTimeout'));
  return tally;
}

describe('the run summary', () => {
  // Issue 31: the summary said `model 11` where the results file held 7 NonZeroExit and 4 RunTimeout.
  it('breaks each kind down by error type, most frequent first', () => {
    const text = formatSummary({ runId: 'r1', total: 20, end: 'completed', tally: issueRun(), counters: undefined, file: '/tmp/r.jsonl' });
    expect(text).toMatch(/^ {2}model\s+11 {3}\(NonZeroExit 7, RunTimeout 4\)$/m);
    expect(text).toMatch(/^ {2}infrastructure\s+0$/m);
  });

  // Issue 31: the mean reward was over ok only (0.667 here), flattering a run where most rollouts failed.
  it('gives the mean reward over all Results, not-ok counting 0, beside the mean over ok', () => {
    const tally = issueRun();
    expect(meanRewardOverAll(tally)).toBeCloseTo(6 / 20);
    const text = formatSummary({ runId: 'r1', total: 20, end: 'completed', tally, counters: undefined, file: '/tmp/r.jsonl' });
    expect(text).toMatch(/^ {2}ok\s+9 {3}mean reward 0\.667 over ok \(reward 1: 6, reward 0: 3\)$/m);
    expect(text).toMatch(/^ {2}mean reward\s+0\.300 over all 20 \(a Result that is not ok counts as 0\), 0\.667 over the 9 ok$/m);
  });

  it('says when no Result is ok, and prints no mean of nothing', () => {
    const failed = new RunTally();
    failed.add(line('caller', null, 'RefNotAllowed'));
    expect(formatSummary({ runId: 'r1', total: 1, end: 'completed', tally: failed, counters: undefined, file: '/f' }))
      .toMatch(/mean reward\s+0\.000 over all 1 \(a Result that is not ok counts as 0\); no ok Result/);
    expect(formatSummary({ runId: 'r1', total: 1, end: 'interrupted', tally: new RunTally(), counters: undefined, file: '/f' })).not.toContain('mean reward');
  });

  it('names at most six error types and counts the rest', () => {
    const types = new Map(['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'].map((type, i) => [type, 10 - i]));
    expect(errorTypeBreakdown(types)).toBe('(A 10, B 9, C 8, D 7, E 6, F 5, 7 of 2 other type(s))');
    expect(errorTypeBreakdown(new Map())).toBe('');
  });

  it('a Result that is not ok and has no error type counts as (no type)', () => {
    const tally = new RunTally();
    tally.add(line('infrastructure', null));
    expect([...tally.errorTypes.infrastructure]).toEqual([['(no type)', 1]]);
  });
});

// docs/cli.md: on a caller stop the stdout summary says which lease and why (it said only "stopped on a caller result").
describe('the summary of a stopped run', () => {
  it('names the lease and the reason on one bounded line under the title', () => {
    const tally = new RunTally();
    tally.add(line('caller', null, 'RefError'));
    const text = formatSummary({
      runId: 'r1', total: 4, end: 'stopped on a caller result', tally, counters: undefined, file: '/f',
      stop: { leaseId: 'r1.t01', reason: 'RefError: module "not-allowed-module" is not on the worker\'s allowlist' },
    });
    expect(text.split('\n').slice(0, 2)).toEqual([
      'Run r1: 1 of 4 result(s), stopped on a caller result',
      '  stopped by          lease r1.t01: RefError: module "not-allowed-module" is not on the worker\'s allowlist',
    ]);
    const long = formatSummary({ runId: 'r1', total: 4, end: 'stopped on a caller result', tally, counters: undefined, file: '/f', stop: { leaseId: null, reason: `a\nb ${'x'.repeat(1000)}` } });
    const row = long.split('\n')[1] as string;
    expect(row).toMatch(/^ {2}stopped by {10}a b x+…$/);
    expect(row.length).toBeLessThanOrEqual(2 + 20 + 240);
  });

  it('says nothing of a stop when the run was not stopped', () => {
    expect(formatSummary({ runId: 'r1', total: 1, end: 'completed', tally: issueRun(), counters: undefined, file: '/f' })).not.toContain('stopped by');
  });
});
