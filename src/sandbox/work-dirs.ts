import { close, constants, mkdirSync, mkdtempSync, openSync, readdirSync, rmdirSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { workRoot } from './work-root.js';

/**
 * Makes `<work root>/<prefix>XXXXXX` (mode 0700), and the work root when it is missing.
 * Synchronous: two syscalls on the rollout child's own thread cost less than the thread-pool
 * round trips of the promise API, and a rollout child runs one attempt at a time.
 */
export function makeWorkDir(prefix: string): string {
  const template = path.join(workRoot(), prefix);
  try {
    return mkdtempSync(template);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(workRoot(), { recursive: true });
    return mkdtempSync(template);
  }
}

/**
 * Removes a work directory; what cannot be removed now is left to the sweep of dead attempts.
 * The name is gone when this returns, but the directory is held open across its removal and
 * closed on the thread pool: freeing a directory's inode is the slow part (ext4 mounted with
 * `discard` issues a synchronous block discard, measured 1–3 ms asleep per rmdir), which would
 * otherwise hold up the attempt's result on the rollout child's event loop. Top-level files are
 * unlinked directly (an artifact leaves its own files and rarely a directory): half the CPU of
 * `rmSync`'s generic walk, which still takes whatever else is there.
 */
export function removeWorkDir(dir: string, maxRetries: number): void {
  let held: number | undefined;
  try {
    held = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    // Gone already, or not ours to open: the removal below decides.
  }
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const target = path.join(dir, entry.name);
      if (entry.isDirectory()) rmSync(target, { recursive: true, force: true, maxRetries });
      else unlinkSync(target);
    }
    rmdirSync(dir);
  } catch {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries });
    } catch {
      // Left to the sweep of dead attempts.
    }
  } finally {
    if (held !== undefined) close(held, () => {});
  }
}
