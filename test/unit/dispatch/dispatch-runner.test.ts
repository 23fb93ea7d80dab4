import { describe, expect, it } from 'vitest';
import { dispatchRunner, noReward, type Dispatch, type DispatchContext } from '../../../src/dispatch/index.js';
import { dispatchRunId } from '../../../src/producer/dispatch-run-id.js';
import { compileQueueDispatchOptions } from '../../../src/producer/dispatch-options.js';
import { leaseIdFor } from '../../../src/lease/index.js';
import { CallerError, ModelError } from '../../../src/spec/index.js';
import { fakeContext } from '../runners/fake-context.js';

const request = { scenario: { q: 1 }, cellId: 'cell-1', runAttemptId: 'attempt-1', rep: 2, seed: 42, generation: 3, cycleId: 'cy' };

describe('dispatchRunner (rollout-queue/dispatch)', () => {
  it('builds the harness ctx from the task and returns { artifact, files, spans }', async () => {
    let seen: DispatchContext | undefined;
    const dispatch: Dispatch = async (scenario, ctx) => {
      seen = ctx;
      await ctx.artifacts?.write('logs//a.txt', 'hi');
      return ctx.trace?.span('solve', () => ({ scenario }), { model: 'x' });
    };
    const ctx = fakeContext({ placement: { gpu: 'a100' } });
    const output = await dispatchRunner({ dispatch })('', { id: 'cell-1', ...request }, ctx);
    expect(output.artifact).toEqual({ scenario: { q: 1 } });
    expect(output.files).toEqual({ 'logs/a.txt': 'hi' });
    expect(output.spans).toEqual([expect.objectContaining({ name: 'solve', attributes: { model: 'x' } })]);
    expect(seen).toMatchObject({ cellId: 'cell-1', runAttemptId: 'attempt-1', rep: 2, seed: 42, generation: 3, cycleId: 'cy', placement: { gpu: 'a100' }, signal: ctx.signal });
  });

  it('runPaidCall records a receipt per call, also when the call throws after paying, keyed by callId', async () => {
    const dispatch: Dispatch = async (_scenario, ctx) => {
      await ctx.cost?.runPaidCall?.('call-a', async () => ({ value: 1, cost: { usd: 0.5, units: { tokens: 10 } } }));
      await ctx.cost?.runPaidCall?.('call-b', async () => {
        throw Object.assign(new Error('judge refused'), { cost: { usd: 0.25 } });
      });
      return 'unreachable';
    };
    const ctx = fakeContext();
    await expect(dispatchRunner({ dispatch })('', request, ctx)).rejects.toThrow('judge refused');
    expect(ctx.costs).toEqual([{ id: 'call-a', usd: 0.5, units: { tokens: 10 } }, { id: 'call-b', usd: 0.25 }]);
  });

  it('caps the files a dispatch writes and refuses paths out of the run dir', async () => {
    const big: Dispatch = async (_s, ctx) => ctx.artifacts?.write('a.txt', 'x'.repeat(11));
    await expect(dispatchRunner({ dispatch: big, maxArtifactBytes: 10 })('', request, fakeContext())).rejects.toThrow(ModelError);
    await expect(dispatchRunner({ dispatch: big, maxArtifactBytes: 10 })('', request, fakeContext())).rejects.toThrow(/over dispatchRunner's maxArtifactBytes 10/);
    const escape: Dispatch = async (_s, ctx) => ctx.artifacts?.write('../x', 'y');
    await expect(dispatchRunner({ dispatch: escape })('', request, fakeContext())).rejects.toThrow(/relative file path inside the run dir/);
  });

  it("keeps the gold keys the worker kept from the task (ctx.goldKeys) from the Dispatch's scenario", async () => {
    const seen: unknown[] = [];
    const dispatch: Dispatch = async (scenario) => void seen.push(scenario);
    const scenario = { prompt: 'two plus two', expected: '4', rubric: 'exact' };
    await dispatchRunner({ dispatch })('', { ...request, scenario }, fakeContext({ goldKeys: ['expected', 'rubric'] }));
    await dispatchRunner({ dispatch })('', { ...request, scenario }, fakeContext());
    await dispatchRunner({ dispatch })('', { ...request, scenario: 'a plain string' }, fakeContext({ goldKeys: ['expected'] }));
    expect(seen).toEqual([{ prompt: 'two plus two' }, scenario, 'a plain string']);
    expect(scenario).toEqual({ prompt: 'two plus two', expected: '4', rubric: 'exact' });
  });

  it('refuses a config without a resolved Dispatch and a task that is not a dispatch request, as caller errors', async () => {
    expect(() => dispatchRunner({ dispatch: { $ref: 'x:y' } })).toThrow(CallerError);
    expect(() => dispatchRunner({ dispatch: async () => 1, maxArtifactBytes: -1 })).toThrow(/maxArtifactBytes must be an integer/);
    expect(() => dispatchRunner({ dispatch: async () => 1, extra: 1 })).toThrow(/config\.extra is not an option/);
    await expect(dispatchRunner({ dispatch: async () => 1 })('', { scenario: 1, cellId: 'c' }, fakeContext())).rejects.toThrow(/runAttemptId/);
    expect(noReward()()).toBe(0);
  });
});

describe('dispatchRunId', () => {
  it('is deterministic per (runAttemptId, cellId), distinct otherwise, and a valid run id for any cell id', () => {
    expect(dispatchRunId('a', 'c')).toBe(dispatchRunId('a', 'c'));
    expect(dispatchRunId('a', 'c')).not.toBe(dispatchRunId('a', 'd'));
    // No concatenation ambiguity: ("ab", "c") and ("a", "bc") differ.
    expect(dispatchRunId('ab', 'c')).not.toBe(dispatchRunId('a', 'bc'));
    expect(() => leaseIdFor(dispatchRunId('eval: 7', 'cell with spaces/and:colons'), 'cell with spaces/and:colons')).not.toThrow();
    expect(dispatchRunId('a', 'c')).toMatch(/^dispatch-[0-9a-f]{32}$/);
  });
});

describe('queueDispatch option goldKeys', () => {
  const dispatch = { $ref: 'acme/evals:solve', config: {} };

  it('is carried as the scenario keys kept from the Dispatch', () => {
    expect(compileQueueDispatchOptions({ dispatch, goldKeys: ['expected'] }).goldKeys).toEqual(['expected']);
    expect(compileQueueDispatchOptions({ dispatch }).goldKeys).toEqual([]);
  });

  it("refuses a key of the dispatch request itself, naming the option and the fix", () => {
    expect(() => compileQueueDispatchOptions({ dispatch, goldKeys: ['seed'] })).toThrow(
      "queueDispatch option goldKeys: goldKeys names keys of the scenario; id, scenario, cellId, runAttemptId, rep, seed, generation, placement, cycleId are the dispatch request's own fields: name the scenario's gold key instead",
    );
  });
});
