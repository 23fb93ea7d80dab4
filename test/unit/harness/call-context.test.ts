import { describe, expect, it } from 'vitest';
import { checkCallContext, withCallerSpan } from '../../../src/harness/coordinator/call-context.js';
import { DispatchError } from '../../../src/harness/coordinator/index.js';
import type { DispatchContext } from '../../../src/harness/worker/index.js';

const identity = { cellId: 'c', runAttemptId: 'a', rep: 0, seed: 0 };
const refusal = (ctx: Record<string, unknown>): unknown => {
  try {
    checkCallContext({ ...identity, ...ctx } as DispatchContext);
    return undefined;
  } catch (err) {
    return err;
  }
};

describe("queueDispatch's ctx: the harness' shapes, an unknown shape refused", () => {
  it("accepts the harness' meter (runPaidCall only), an older record ledger, writers with span and write", () => {
    expect(refusal({ cost: { runPaidCall: async () => ({ succeeded: true }) }, trace: { span: () => ({ end() {}, setAttribute() {} }) }, artifacts: { write: async () => '/x' }, signal: new AbortController().signal })).toBeUndefined();
    expect(refusal({ cost: { record: () => undefined } })).toBeUndefined();
  });

  // Issue 29: a meter without record() had every receipt replayed into nothing, silently.
  it('a cost meter with neither runPaidCall nor record, a trace without span, artifacts without write or a signal that is no AbortSignal are caller errors naming the field', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ cost: { total: () => 0 } }, /^dispatch ctx\.cost: has neither runPaidCall\(input\) nor record\(receipt\)/],
      [{ trace: { flush: async () => undefined } }, /^dispatch ctx\.trace: has no span function/],
      [{ artifacts: { read: async () => '' } }, /^dispatch ctx\.artifacts: has no write\(path, content\) function/],
      [{ signal: { aborted: false } }, /^dispatch ctx\.signal: expected an AbortSignal/],
    ];
    for (const [ctx, message] of cases) {
      const err = refusal(ctx);
      expect(err, message.source).toBeInstanceOf(DispatchError);
      expect(err).toMatchObject({ kind: 'caller', type: 'InvalidDispatchContext', retryable: false });
      expect((err as Error).message).toMatch(message);
    }
  });

  // Issue 29: the work was passed as a callback to the harness' span(name, attributes), which
  // ignored it and returned a handle: queueDispatch returned {} and never ran the Dispatch.
  it("runs the work under the harness' span handle and ends it, with the error when it threw", async () => {
    const ended: Array<[string, Record<string, unknown> | undefined, Record<string, unknown> | undefined]> = [];
    const trace = { span: (name: string, attributes?: Record<string, unknown>) => ({ end: (more?: Record<string, unknown>) => void ended.push([name, attributes, more]), setAttribute: () => undefined }) };
    expect(await withCallerSpan(trace, 'rollout-queue.dispatch', { cellId: 'c' }, async () => 'artifact')).toBe('artifact');
    await expect(withCallerSpan(trace, 'rollout-queue.dispatch', { cellId: 'd' }, async () => { throw new TypeError('boom'); })).rejects.toThrow('boom');
    expect(ended).toEqual([['rollout-queue.dispatch', { cellId: 'c' }, undefined], ['rollout-queue.dispatch', { cellId: 'd' }, { error: 'TypeError: boom' }]]);
    // The older callback form still runs the work inside its span.
    const seen: string[] = [];
    const callback = { span: async <T>(name: string, fn: () => T | Promise<T>, _attributes?: unknown): Promise<T> => (seen.push(name), fn()) };
    expect(await withCallerSpan(callback, 'rollout-queue.dispatch', {}, async () => 7)).toBe(7);
    expect(seen).toEqual(['rollout-queue.dispatch']);
    // A harness-form span that returns no handle is refused before the work starts.
    let ran = false;
    await expect(withCallerSpan({ span: () => undefined as never }, 'x', {}, async () => (ran = true))).rejects.toMatchObject({ kind: 'caller', message: expect.stringMatching(/^dispatch ctx\.trace\.span: returned undefined, not a span handle/) });
    expect(ran).toBe(false);
  });
});
