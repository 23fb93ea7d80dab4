import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dispatchRunner, noReward, type WorkerDispatch, type WorkerDispatchContext } from '../../../src/harness/worker/index.js';
import { dispatchRunId } from '../../../src/harness/coordinator/dispatch-run-id.js';
import { compileQueueDispatchOptions } from '../../../src/harness/coordinator/dispatch-options.js';
import { leaseIdFor } from '../../../src/lease/index.js';
import { CallerError, CostReceiptSchema, ModelError } from '../../../src/spec/index.js';
import { fakeContext } from '../runners/fake-context.js';

const request = { scenario: { q: 1 }, cellId: 'cell-1', runAttemptId: 'attempt-1', rep: 2, seed: 42, generation: 3, cycleId: 'cy' };

describe('dispatchRunner (rollout-queue/dispatch): the harness ctx on the worker', () => {
  it('builds the harness ctx from the task: identity, the placement string sent, labels beside it; returns { artifact, files, spans }', async () => {
    let seen: WorkerDispatchContext | undefined;
    const dispatch: WorkerDispatch = async (scenario, ctx) => {
      seen = ctx;
      await ctx.artifacts.write('logs//a.txt', 'hi');
      return ctx.trace.span('solve', () => ({ scenario }), { model: 'x' });
    };
    const ctx = fakeContext({ placement: { gpu: 'a100' } });
    const output = await dispatchRunner({ dispatch })('', { id: 'cell-1', ...request, placement: 'us-east' }, ctx);
    expect(output.artifact).toEqual({ scenario: { q: 1 } });
    expect(output.files).toEqual({ 'logs/a.txt': 'hi' });
    expect(output.spans).toEqual([expect.objectContaining({ name: 'solve', attributes: { model: 'x' } })]);
    expect(seen).toMatchObject({ cellId: 'cell-1', runAttemptId: 'attempt-1', rep: 2, seed: 42, generation: 3, cycleId: 'cy', placement: 'us-east', placementLabels: { gpu: 'a100' }, signal: ctx.signal });
  });

  it("trace.span(name, attributes) returns the harness' handle: setAttribute and end(attributes) land on the span; an open span is ended at the dispatch's end", async () => {
    const dispatch: WorkerDispatch = async (_s, ctx) => {
      const span = ctx.trace.span('llm.call', { model: 'm' });
      span.setAttribute('tokens', 12);
      span.setAttribute('detail', { nested: true });
      span.end({ ok: true });
      span.end({ ignored: 1 });
      ctx.trace.span('never-ended');
      await ctx.trace.flush();
      return 'done';
    };
    const output = await dispatchRunner({ dispatch })('', request, fakeContext());
    expect(output.spans.map((span) => [span.name, span.attributes])).toEqual([
      ['llm.call', { model: 'm', tokens: 12, detail: '{"nested":true}', ok: true }],
      ['never-ended', { 'rollout-queue.unended': true }],
    ]);
  });

  it('artifacts.write resolves to the full path of the file on the worker (gone after the dispatch), writeJson writes JSON; bytes travel as base64', async () => {
    let paths: string[] = [];
    let contentWhileRunning = '';
    const dispatch: WorkerDispatch = async (_s, ctx) => {
      paths = [await ctx.artifacts.write('out/a.txt', 'text'), await ctx.artifacts.writeJson('out/b.json', { b: 1 }), await ctx.artifacts.write('bin/c', new Uint8Array([0, 255, 7]))];
      contentWhileRunning = readFileSync(paths[1] as string, 'utf8');
      return null;
    };
    const output = await dispatchRunner({ dispatch })('', request, fakeContext());
    expect(paths.map((p) => p.split('/').slice(-2).join('/'))).toEqual(['out/a.txt', 'out/b.json', 'bin/c']);
    expect(contentWhileRunning).toBe('{\n  "b": 1\n}');
    expect(paths.some((p) => existsSync(p))).toBe(false);
    expect(output.files).toEqual({ 'out/a.txt': 'text', 'out/b.json': '{\n  "b": 1\n}', 'bin/c': Buffer.from([0, 255, 7]).toString('base64') });
    expect(output.binary).toEqual(['bin/c']);
  });

  it("runPaidCall(input) is the harness meter's: execute(signal, callId), receipt(value) priced, stored, PaidCallResult back", async () => {
    const results: unknown[] = [];
    const dispatch: WorkerDispatch = async (_s, ctx) => {
      results.push(await ctx.cost.runPaidCall({
        callId: 'llm-1', channel: 'agent', actor: 'solver', model: 'gpt-x',
        execute: async (signal, callId) => ({ text: `answer of ${callId}`, aborted: signal.aborted }),
        receipt: () => ({ model: 'gpt-x', inputTokens: 1000, outputTokens: 200, actualCostUsd: 0.012 }),
      }));
      // Custom per-million pricing: 1000 × 2 + 500 × 0.5 (cached) + 200 × 8 → $0.00385.
      results.push(await ctx.cost.runPaidCall({
        actor: 'judge', channel: 'judge',
        execute: async () => 'v',
        receipt: () => ({ model: 'own-model', inputTokens: 1000, cachedTokens: 500, outputTokens: 200, customTokenPricing: { inputUsdPerMillion: 2, cachedInputUsdPerMillion: 0.5, outputUsdPerMillion: 8 } }),
      }));
      // Failed after paying: receiptFromError prices it; the meter reports, never throws.
      results.push(await ctx.cost.runPaidCall({
        callId: 'llm-3', actor: 'solver', model: 'gpt-x',
        execute: async () => { throw new Error('provider 500 after streaming'); },
        receipt: () => ({ model: 'gpt-x', inputTokens: 0, outputTokens: 0 }),
        receiptFromError: () => ({ model: 'gpt-x', inputTokens: 300, outputTokens: 0, actualCostUsd: 0.003 }),
      }));
      // A callId paid before in this dispatch: refused like the harness ledger's conflict.
      results.push(await ctx.cost.runPaidCall({ callId: 'llm-1', actor: 'solver', execute: async () => 1, receipt: () => ({ model: 'm', inputTokens: 0, outputTokens: 0 }) }));
      return 'ok';
    };
    const ctx = fakeContext();
    await dispatchRunner({ dispatch })('', request, ctx);
    expect(results[0]).toMatchObject({ succeeded: true, callId: 'llm-1', value: { text: 'answer of llm-1', aborted: false }, receipt: { status: 'settled', callId: 'llm-1', channel: 'agent', actor: 'solver', model: 'gpt-x', inputTokens: 1000, outputTokens: 200, costUsd: 0.012, costUnknown: false } });
    expect(results[1]).toMatchObject({ succeeded: true, value: 'v', receipt: { channel: 'judge', actor: 'judge', model: 'own-model', costUnknown: false } });
    expect((results[1] as { receipt: { costUsd: number } }).receipt.costUsd).toBeCloseTo(0.00385, 10);
    expect(results[2]).toMatchObject({ succeeded: false, callId: 'llm-3', error: { message: 'provider 500 after streaming' }, receipt: { costUsd: 0.003, error: 'provider 500 after streaming' } });
    expect(results[3]).toMatchObject({ succeeded: false, callId: 'llm-1', error: { message: expect.stringContaining("callId 'llm-1' already exists") } });
    expect(ctx.costs.map((receipt) => [receipt.id, receipt.usd, receipt.label, receipt.paidCall?.actor])).toEqual([
      ['llm-1', 0.012, 'gpt-x', 'solver'],
      [(results[1] as { callId: string }).callId, expect.closeTo(0.00385, 10), 'own-model', 'judge'],
      ['llm-3', 0.003, 'gpt-x', 'solver'],
    ]);
    // Every stored receipt is what the wire schema accepts.
    for (const receipt of ctx.costs) expect(CostReceiptSchema.safeParse(receipt).success).toBe(true);
  });

  it('the older runPaidCall(callId, fn) and record(receipt) forms still record, also when the call throws after paying', async () => {
    const dispatch: WorkerDispatch = async (_scenario, ctx) => {
      await ctx.cost.runPaidCall('call-a', async () => ({ value: 1, cost: { usd: 0.5, units: { tokens: 10 } } }));
      await ctx.cost.record({ callId: 'call-r', usd: 0.1 });
      await ctx.cost.runPaidCall('call-b', async () => {
        throw Object.assign(new Error('judge refused'), { cost: { usd: 0.25 } });
      });
      return 'unreachable';
    };
    const ctx = fakeContext();
    await expect(dispatchRunner({ dispatch })('', request, ctx)).rejects.toThrow('judge refused');
    expect(ctx.costs).toEqual([{ id: 'call-a', usd: 0.5, units: { tokens: 10 } }, { id: 'call-r', usd: 0.1 }, { id: 'call-b', usd: 0.25 }]);
  });

  it('runPaidCall of an unknown shape is a caller error naming the problem and both forms, never a silent default', async () => {
    const cases: Array<[string, (ctx: WorkerDispatchContext) => Promise<unknown>, RegExp]> = [
      ['no execute', (ctx) => ctx.cost.runPaidCall({ actor: 'a', receipt: () => ({ model: 'm', inputTokens: 0, outputTokens: 0 }) } as never), /execute must be a function/],
      ['no actor', (ctx) => ctx.cost.runPaidCall({ execute: async () => 1, receipt: () => ({ model: 'm', inputTokens: 0, outputTokens: 0 }) } as never), /actor must be a string/],
      ['a number', (ctx) => (ctx.cost.runPaidCall as (x: unknown) => Promise<unknown>)(42), /got 42 \(number\).*harness' input object/],
      ['callId without a function', (ctx) => (ctx.cost.runPaidCall as (x: unknown, y: unknown) => Promise<unknown>)('c', { usd: 1 }), /second argument must be a function/],
    ];
    for (const [name, call, message] of cases) {
      const failure = await dispatchRunner({ dispatch: ((_s, ctx) => call(ctx)) as WorkerDispatch })('', request, fakeContext()).then(() => undefined, (err: unknown) => err);
      expect(failure, name).toBeInstanceOf(CallerError);
      expect((failure as Error).message, name).toMatch(message);
    }
  });

  it('the named secrets are ctx.secrets and in process.env while the dispatch runs, and only then', async () => {
    const name = 'RQ_UNIT_DISPATCH_SECRET';
    let seenEnv: string | undefined;
    let seenCtx: Readonly<Record<string, string>> = {};
    const dispatch: WorkerDispatch = async (_s, ctx) => {
      seenEnv = process.env[name];
      seenCtx = ctx.secrets;
      return null;
    };
    await dispatchRunner({ dispatch })('', request, fakeContext({ secrets: { [name]: 'sk-unit' } }));
    expect([seenEnv, seenCtx]).toEqual(['sk-unit', { [name]: 'sk-unit' }]);
    expect(process.env[name]).toBeUndefined();
  });

  it('caps the files a dispatch writes and refuses paths out of the run dir', async () => {
    const big: WorkerDispatch = async (_s, ctx) => ctx.artifacts.write('a.txt', 'x'.repeat(11));
    await expect(dispatchRunner({ dispatch: big, maxArtifactBytes: 10 })('', request, fakeContext())).rejects.toThrow(ModelError);
    await expect(dispatchRunner({ dispatch: big, maxArtifactBytes: 10 })('', request, fakeContext())).rejects.toThrow(/over dispatchRunner's maxArtifactBytes 10/);
    const escape: WorkerDispatch = async (_s, ctx) => ctx.artifacts.write('../x', 'y');
    await expect(dispatchRunner({ dispatch: escape })('', request, fakeContext())).rejects.toThrow(/relative file path inside the run dir/);
  });

  it("keeps the gold keys the worker kept from the task (ctx.goldKeys) from the Dispatch's scenario", async () => {
    const seen: unknown[] = [];
    const dispatch: WorkerDispatch = async (scenario) => void seen.push(scenario);
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
