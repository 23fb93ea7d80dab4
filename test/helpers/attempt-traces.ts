import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { workRoot } from '../../src/sandbox/index.js';
import { hostProcesses, type HostProcess } from './host-processes.js';

/** Work dirs on the machine whose name starts with `prefix` (a lease id plus "."). */
export function workDirs(prefix: string): string[] {
  return existsSync(workRoot()) ? readdirSync(workRoot()).filter((name) => name.startsWith(prefix)) : [];
}

/**
 * Live processes running `<interpreter> <entry>` (e.g. `python3 main.py`) of an attempt whose
 * work dir starts with `prefix`: an artifact of that lease (not its sandbox launchers). Found by
 * its working directory, or, where that is the tenant view's `/work` (the sealed level), by its
 * attempt cgroup, named like the work dir; `cwd` is that work dir as the host names it.
 */
export function artifactProcesses(prefix: string, entry: string): Array<HostProcess & { cwd: string }> {
  const root = `${workRoot()}${path.sep}${prefix}`;
  const found: Array<HostProcess & { cwd: string }> = [];
  for (const p of hostProcesses()) {
    if (p.state === 'Z' || p.argv.length !== 2 || p.argv[1] !== entry) continue;
    try {
      const cwd = readlinkSync(`/proc/${p.pid}/cwd`);
      if (cwd.startsWith(root)) {
        found.push({ ...p, cwd });
        continue;
      }
      const group = readFileSync(`/proc/${p.pid}/cgroup`, 'utf8')
        .split('\n')
        .map((line) => line.slice(line.indexOf('/', line.indexOf(':', line.indexOf(':') + 1))))
        .map((where) => where.split('/').at(-1) ?? '')
        .find((name) => name.startsWith(prefix));
      if (group) found.push({ ...p, cwd: path.join(workRoot(), group) });
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
