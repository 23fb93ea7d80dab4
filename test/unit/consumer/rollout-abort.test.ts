import { describe, expect, it } from 'vitest';
import { RolloutAbort, RolloutAborted } from '../../../src/consumer/rollout-abort.js';

describe('RolloutAbort: a rollout child\'s ctx.signal and the stage it stops', () => {
  it('a signal read before the abort is aborted with the reason, and its listeners run', () => {
    const abort = new RolloutAbort();
    const { signal } = abort;
    expect(abort.signal).toBe(signal);
    expect(signal.aborted).toBe(false);
    const seen: unknown[] = [];
    signal.addEventListener('abort', () => seen.push(signal.reason));
    const reason = new RolloutAborted('cancelled');
    abort.abort(reason);
    expect(abort.reason).toBe(reason);
    expect(signal.aborted).toBe(true);
    expect(seen).toEqual([reason]);
  });

  it('a signal first read after the abort is already aborted with the reason', () => {
    const abort = new RolloutAbort();
    const reason = new RolloutAborted('run-timeout');
    abort.abort(reason);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
    expect(abort.signal).toBe(abort.signal);
  });

  it('the first abort wins, as with an AbortController', () => {
    const abort = new RolloutAbort();
    const first = new RolloutAborted('reward-timeout');
    abort.abort(first);
    abort.abort(new RolloutAborted('cancelled'));
    expect(abort.reason).toBe(first);
    expect(abort.signal.reason).toBe(first);
  });

  it('race passes the work\'s value and error through while not aborted', async () => {
    const abort = new RolloutAbort();
    await expect(abort.race(Promise.resolve(7))).resolves.toBe(7);
    const error = new Error('run threw');
    await expect(abort.race(Promise.reject(error))).rejects.toBe(error);
    expect(abort.reason).toBeUndefined();
  });

  it('race rejects with the reason when the rollout is aborted while the work hangs, and at once after', async () => {
    const abort = new RolloutAbort();
    const hanging = abort.race(new Promise<never>(() => undefined));
    const reason = new RolloutAborted('cancelled');
    abort.abort(reason);
    await expect(hanging).rejects.toBe(reason);
    await expect(abort.race(Promise.resolve(1))).rejects.toBe(reason);
  });

  it('an abort after a stage settled leaves its outcome alone and stops the next stage', async () => {
    const abort = new RolloutAbort();
    await expect(abort.race(Promise.resolve('output'))).resolves.toBe('output');
    const next = abort.race(new Promise<never>(() => undefined));
    const reason = new RolloutAborted('reward-timeout');
    abort.abort(reason);
    await expect(next).rejects.toBe(reason);
  });
});
