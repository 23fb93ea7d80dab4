import { describe, expect, it } from 'vitest';
import { defaultChildren } from '../../../src/consumer/child-count.js';
import { compileWorkerOptions } from '../../../src/consumer/worker-options.js';

describe('worker options of slots and children', () => {
  it('children defaults from the slots (concurrency + evalConcurrency) and this machine; a given number is kept', () => {
    expect(compileWorkerOptions({ concurrency: 300 }).children).toBe(defaultChildren(301));
    expect(compileWorkerOptions({ concurrency: 300, children: 5 }).children).toBe(5);
    expect(compileWorkerOptions({}).blockedLoopMs).toBe(10_000);
  });

  it('refuses a children of 0 or a blockedLoopMs under 500, naming the option', () => {
    expect(() => compileWorkerOptions({ children: 0 })).toThrow(/^worker option children: /);
    expect(() => compileWorkerOptions({ blockedLoopMs: 100 })).toThrow(/^worker option blockedLoopMs: /);
  });

  it('takes up to 1000 slots (slots are not processes)', () => {
    expect(compileWorkerOptions({ concurrency: 1000 }).concurrency).toBe(1000);
    expect(() => compileWorkerOptions({ concurrency: 1001 })).toThrow(/^worker option concurrency: /);
  });
});
