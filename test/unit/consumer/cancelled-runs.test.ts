// The worker's memory of cancelled runs (split out of rollout-processor.ts) and the error of a
// lease ended by the re-dispatch limit.
import { describe, expect, it } from 'vitest';
import { CancelledRuns } from '../../../src/consumer/cancelled-runs.js';
import { quarantineError } from '../../../src/consumer/quarantine-error.js';
import type { RolloutSpec } from '../../../src/spec/index.js';

const spec = (runId: string, runAttemptId: string): RolloutSpec => ({ runId, runAttemptId } as RolloutSpec);

describe('CancelledRuns', () => {
  it('a cancel without an attempt id covers every attempt of the run id; one with an id only that attempt', () => {
    const runs = new CancelledRuns();
    runs.remember('r1', null);
    runs.remember('r2', 'attempt-a');
    expect(runs.heard(spec('r1', 'any'))).toBe(true);
    expect(runs.heard(spec('r2', 'attempt-a'))).toBe(true);
    expect(runs.heard(spec('r2', 'attempt-b'))).toBe(false);
    expect(runs.heard(spec('r3', 'attempt-a'))).toBe(false);
  });

  it('forgets the oldest run past 1000, and a run remembered again counts as new', () => {
    const runs = new CancelledRuns();
    for (let i = 0; i < 1000; i++) runs.remember(`r${i}`, null);
    runs.remember('r0', null); // r0 is the newest now, r1 the oldest
    runs.remember('r1000', null);
    expect(runs.heard(spec('r0', 'a'))).toBe(true);
    expect(runs.heard(spec('r1', 'a'))).toBe(false);
    expect(runs.heard(spec('r1000', 'a'))).toBe(true);
  });
});

describe('quarantineError', () => {
  it('names a hang on every attempt as such, with the stderr tail', () => {
    const error = quarantineError('run.t1', 2, { reason: 'Hang', exitCode: null, signal: 'SIGKILL', stderrTail: 'no answer' });
    expect(error.type).toBe('RedispatchLimit');
    expect(error.message).toBe('lease run.t1 ended after 2 re-dispatches: its rollout stopped answering on every attempt and was killed at timeouts.hangMs each time (last: Hang, exit code null, signal SIGKILL)\nstderr tail:\nno answer');
  });

  it('a version skew keeps its own type and text (the fix is an install), without a second copy of the tail', () => {
    const error = quarantineError('run.t2', 2, { reason: 'VersionSkew', exitCode: null, signal: null, stderrTail: 'worker "w" has x 1.0.0' });
    expect(error).toEqual({ type: 'VersionSkew', message: 'lease run.t2 ended after 2 re-dispatches: worker "w" has x 1.0.0' });
  });
});
