import { spawn, spawnSync } from 'node:child_process';
import { closeSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pidCursor } from '../../../src/sandbox/pid-cursor.js';
import { subtreeOf } from '../../../src/sandbox/index.js';

describe('pidCursor', () => {
  // Pids wrap at pid_max: nothing here compares a cursor with a pid taken at another moment.
  const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));

  it("reads the pid namespace's last allocated pid, a pid /proc/loadavg would show", () => {
    const cursor = pidCursor();
    expect(Number.isInteger(cursor)).toBe(true);
    expect(cursor).toBeGreaterThan(0);
    expect(cursor).toBeLessThanOrEqual(pidMax);
    expect(readFileSync('/proc/loadavg', 'utf8')).toMatch(/ \d+\/\d+ \d+\n$/);
  });

  it('moves when a process is created', () => {
    const before = pidCursor();
    const { status } = spawnSync(process.execPath, ['--version'], { stdio: 'ignore' });
    expect(status).toBe(0);
    expect(pidCursor()).not.toBe(before);
  });
});

describe("subtreeOf('self') between quiet walks", () => {
  it('finds a child made after walks that found none (the cursor moved past the quiet value)', async () => {
    expect(subtreeOf('self')).toEqual([]);
    expect(subtreeOf('self')).toEqual([]); // the quiet path: nothing created since the walk above
    const child = spawn('sleep', ['300'], { stdio: 'ignore' });
    try {
      expect(subtreeOf('self')).toEqual([child.pid]);
    } finally {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    expect(subtreeOf('self')).toEqual([]);
  });
});

/** This process' fds that are open on `file`. */
function fdsOn(file: string): number[] {
  return readdirSync('/proc/self/fd').map(Number).filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false;
    }
  });
}

describe('pidCursor once its kept fd is gone (rollout code closed it)', () => {
  it('says undefined for good, and never re-runs its check (a spawn of node per call)', () => {
    expect(pidCursor()).toBeDefined();
    const kept = fdsOn('/proc/loadavg');
    expect(kept).toHaveLength(1);
    closeSync(kept[0] as number);
    expect(pidCursor()).toBeUndefined();
    // The fault: `source ??= open()` re-ran the check on the null a failure left, so every later
    // call spawned `node --version` and kept a new fd on /proc/loadavg.
    expect(pidCursor()).toBeUndefined();
    expect(pidCursor()).toBeUndefined();
    expect(fdsOn('/proc/loadavg')).toEqual([]);
  });
});
