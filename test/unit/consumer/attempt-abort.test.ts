import { describe, expect, it } from 'vitest';
import { AttemptAbort } from '../../../src/consumer/attempt-abort.js';

describe('AttemptAbort', () => {
  it('aborts once: the first reason stays, the listener hears it once, later aborts change nothing', () => {
    const abort = new AttemptAbort();
    const heard: (string | undefined)[] = [];
    abort.listen(() => heard.push(abort.reason));
    expect(abort.reason).toBeUndefined();
    expect(abort.abort('lock-lost')).toBe(true);
    expect(abort.abort('shutdown')).toBe(false);
    expect(abort.reason).toBe('lock-lost');
    expect(heard).toEqual(['lock-lost']);
  });

  it('a removed listener is not called; an abort before any listener is kept for the next one to read', () => {
    const abort = new AttemptAbort();
    let calls = 0;
    const unlisten = abort.listen(() => calls++);
    unlisten();
    abort.abort('cancelled');
    expect(calls).toBe(0);
    expect(abort.reason).toBe('cancelled');
  });
});
