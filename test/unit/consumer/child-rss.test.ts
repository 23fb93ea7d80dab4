import { closeSync, readdirSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { residentBytes, rolloutResidentBytes, RSS_READ_GROWTH_BYTES, RSS_READ_INTERVAL_MS } from '../../../src/consumer/child-rss.js';

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

describe('rolloutResidentBytes (statm read at most every RSS_READ_INTERVAL_MS)', () => {
  const MiB = 1024 * 1024;
  // The last read is module state: each test starts far past the previous one's clock, so its first call reads.

  it('carries the last read over within the interval, plus what V8 allocated since', () => {
    const start = 1e9;
    const read = rolloutResidentBytes(start);
    expect(read).toBeGreaterThan(0);
    const carried = rolloutResidentBytes(start + 1);
    expect(carried).toBeGreaterThanOrEqual(read);
    expect(carried).toBeLessThan(read + RSS_READ_GROWTH_BYTES);
  });

  it('reads statm again once V8 memory grew by RSS_READ_GROWTH_BYTES, however soon', () => {
    const start = 2e9;
    const first = rolloutResidentBytes(start);
    const hoard = Array.from({ length: 48 }, () => Buffer.alloc(MiB, 1));
    const next = rolloutResidentBytes(start + 1);
    expect(next).toBeGreaterThan(first + 32 * MiB);
    expect(hoard).toHaveLength(48);
  });

  it('reads statm again once the interval has passed', () => {
    const start = 3e9;
    rolloutResidentBytes(start);
    // Memory V8 does not see (here: pages of a Buffer whose size V8 counted before the read, then touched) only shows in statm.
    const lazy = Buffer.allocUnsafeSlow(48 * MiB);
    const beforeTouch = rolloutResidentBytes(start + 1);
    lazy.fill(1);
    expect(rolloutResidentBytes(start + 2)).toBe(beforeTouch);
    expect(rolloutResidentBytes(start + 2 + RSS_READ_INTERVAL_MS)).toBeGreaterThan(beforeTouch + 32 * MiB);
  });
});
