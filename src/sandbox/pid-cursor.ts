import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';

/**
 * The pid namespace's allocation cursor: the last field of `/proc/loadavg`, the pid most
 * recently handed out in the reader's own pid namespace (fs/proc/loadavg.c:
 * `idr_get_cursor(&task_active_pid_ns(current)->idr) - 1`). Every process and every thread
 * created in this namespace or one below it gets a pid here, so while the cursor has not moved,
 * nothing was created: a walk of this process' children that found none need not be repeated
 * (see `ownChildren`). The cursor wraps at `pid_max`; coming back to the same value takes a whole
 * cycle of pid_max − 300 allocations between two reads.
 *
 * Trusted only where it is the kernel's and live: `/proc/loadavg` must be on the same device as
 * `/proc/self` (LXCFS and similar overlays bind-mount a file of their own there, refreshed on
 * their own schedule), and one spawn must move it. Otherwise {@link pidCursor} returns undefined
 * and every walk is made.
 */
/** The kept fd; `unusable` once the check or a read failed (for good: never opened again); undefined before the first call. */
let source: { readonly fd: number } | 'unusable' | undefined;
const buffer = Buffer.alloc(128);
const LOADAVG = /^\d+\.\d+ \d+\.\d+ \d+\.\d+ \d+\/\d+ (\d+)\n$/;

function readAt(fd: number): number | undefined {
  const length = readSync(fd, buffer, 0, buffer.length, 0);
  const match = LOADAVG.exec(buffer.toString('latin1', 0, length));
  return match ? Number(match[1]) : undefined;
}

function open(): { fd: number } | 'unusable' {
  let fd: number | undefined;
  try {
    fd = openSync('/proc/loadavg', 'r');
    if (fstatSync(fd).dev !== statSync('/proc/self').dev) throw new Error('not procfs');
    const before = readAt(fd);
    spawnSync(process.execPath, ['--version'], { stdio: 'ignore', timeout: 5_000 });
    const after = readAt(fd);
    if (before === undefined || after === undefined || after === before) throw new Error('not live');
    return { fd };
  } catch {
    if (fd !== undefined) closeSync(fd);
    return 'unusable';
  }
}

/**
 * The last pid allocated in this process' pid namespace, or undefined where that cannot be
 * read as the kernel's live value (checked once, at the first call, with one spawn of
 * `node --version`). Never throws. One positional read of a kept fd.
 */
export function pidCursor(): number | undefined {
  // Not `??=` over null: a failed check must not be retried (each retry spawns a process).
  source ??= open();
  if (source === 'unusable') return undefined;
  try {
    const cursor = readAt(source.fd);
    if (cursor !== undefined) return cursor;
  } catch {
    // Closed by rollout code (and maybe reused): below.
  }
  source = 'unusable'; // leave that fd alone; from now on every walk is made
  return undefined;
}
