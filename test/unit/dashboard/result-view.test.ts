import { describe, expect, it } from 'vitest';
import { resultView } from '../../../src/dashboard/result-view.js';

describe("the dashboard's view of a Result", () => {
  const result = { leaseId: 'r.t1', runId: 'r', taskId: 't1', kind: 'ok', output: { stdout: '5\n' }, reward: 1, error: null, attempts: 1, redispatched: 0, worker: 'w', queuedMs: 1, runMs: 2, finishedAt: '2026-01-01T00:00:00.000Z', cost: [] };

  it("shows what the reward kept with its score (a judge program's details)", () => {
    expect(resultView({ ...result, rewardDetails: { got: '5', why: 'equal' } })).toMatchObject({ kind: 'ok', reward: 1, rewardDetails: { got: '5', why: 'equal' } });
  });

  it('leaves the field out when the reward gave none', () => {
    expect(resultView(result)).not.toHaveProperty('rewardDetails');
  });
});
