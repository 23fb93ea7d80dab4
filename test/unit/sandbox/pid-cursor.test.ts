import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pidCursor } from '../../../src/sandbox/pid-cursor.js';
import { subtreeOf } from '../../../src/sandbox/index.js';

describe('pidCursor', () => {
  it("reads the pid namespace's last allocated pid, as /proc/loadavg shows it", () => {
    const cursor = pidCursor();
    expect(cursor).toBeTypeOf('number');
    const shown = Number(readFileSync('/proc/loadavg', 'utf8').trim().split(' ').at(-1));
    expect(shown).toBeGreaterThanOrEqual(cursor as number); // pids only move on (a wrap needs ~32 k between the two reads)
  });

  it('moves when a process is created', () => {
    const before = pidCursor();
    const { pid } = spawnSync(process.execPath, ['--version'], { stdio: 'ignore' });
    const after = pidCursor();
    expect(after).not.toBe(before);
    expect(after).toBeGreaterThanOrEqual(pid as number);
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
