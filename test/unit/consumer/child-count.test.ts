import { describe, expect, it } from 'vitest';
import { defaultChildren } from '../../../src/consumer/child-count.js';

describe('defaultChildren', () => {
  it('one shared child per 32 slots, at most one per core and per 256 MiB free, at least one', () => {
    const small = { cores: 2, freeMb: 20_000 };
    expect([2, 50, 200, 500].map((slots) => defaultChildren(slots, small))).toEqual([1, 2, 2, 2]);
    const big = { cores: 16, freeMb: 64_000 };
    expect([2, 50, 200, 500].map((slots) => defaultChildren(slots, big))).toEqual([1, 2, 7, 16]);
    expect(defaultChildren(500, { cores: 16, freeMb: 600 })).toBe(2);
    expect(defaultChildren(500, { cores: 16, freeMb: 100 })).toBe(1);
  });
});
