import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { workRoot } from '../../src/sandbox/index.js';
import { hostProcesses, type HostProcess } from './host-processes.js';

/** Work dirs on the machine whose name starts with `prefix` (a lease id plus "."). */
export function workDirs(prefix: string): string[] {
  return existsSync(workRoot()) ? readdirSync(workRoot()).filter((name) => name.startsWith(prefix)) : [];
}

/**
 * Live processes running `<interpreter> <entry>` (e.g. `python3 main.py`) whose working directory
 * is a work dir starting with `prefix`: an artifact of that lease (not its sandbox launchers).
 */
export function artifactProcesses(prefix: string, entry: string): Array<HostProcess & { cwd: string }> {
  const root = `${workRoot()}${path.sep}${prefix}`;
  const found: Array<HostProcess & { cwd: string }> = [];
  for (const p of hostProcesses()) {
    if (p.state === 'Z' || p.argv.length !== 2 || p.argv[1] !== entry) continue;
    try {
      const cwd = readlinkSync(`/proc/${p.pid}/cwd`);
      if (cwd.startsWith(root)) found.push({ ...p, cwd });
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

/** Polls `condition` every 50 ms until it is true or `withinMs` passes; returns its last value. */
export async function until(condition: () => boolean | Promise<boolean>, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await condition();
    if (value || Date.now() >= deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}
