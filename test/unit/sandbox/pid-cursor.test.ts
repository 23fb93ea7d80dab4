import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
