import { closeSync, readdirSync, readlinkSync } from 'node:fs';
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

describe('residentBytes once its kept statm fd is gone (rollout code closed it)', () => {
  it('falls back to process.memoryUsage.rss() for good, never opening statm again', () => {
    residentBytes();
    const statm = `/proc/${process.pid}/statm`;
    const kept = readdirSync('/proc/self/fd').map(Number).filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === statm;
      } catch {
        return false;
      }
    });
    expect(kept).toHaveLength(1);
    closeSync(kept[0] as number);
    for (let i = 0; i < 3; i++) expect(residentBytes()).toBeGreaterThan(0);
    const reopened = readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === statm;
      } catch {
        return false;
      }
    });
    expect(reopened).toEqual([]);
  });
});
