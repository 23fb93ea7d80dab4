import { describe, expect, it } from 'vitest';
import { residentBytes } from '../../../src/consumer/child-rss.js';

describe('residentBytes (kept /proc/self/statm)', () => {
  it('is what process.memoryUsage.rss() says, read after read', () => {
    for (let i = 0; i < 5; i++) {
      const before = process.memoryUsage.rss();
      const read = residentBytes();
      const after = process.memoryUsage.rss();
      // Memory may move between the three reads; the counter is the same.
      expect(read).toBeGreaterThanOrEqual(Math.min(before, after) - 1024 * 1024);
      expect(read).toBeLessThanOrEqual(Math.max(before, after) + 1024 * 1024);
    }
  });

  it('follows growth of the heap', () => {
    const first = residentBytes();
    const hoard = Array.from({ length: 64 }, () => Buffer.alloc(1024 * 1024, 1));
    expect(residentBytes()).toBeGreaterThan(first + 32 * 1024 * 1024);
    expect(hoard).toHaveLength(64);
  });
});
