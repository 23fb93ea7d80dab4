import { readFileSync, readlinkSync } from 'node:fs';

/**
 * Who created a sandbox, written into its directory and cgroup names, so a sweep can tell
 * a dead attempt's leftovers from a live one's: pid, start time (clock ticks since boot,
 * `/proc/<pid>/stat` field 22; 0 where there is no /proc) and the pid namespace inode
 * (pids mean nothing across namespaces, so a sweeper in another namespace never judges).
 */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTicks: number;
  readonly pidNamespace: number;
}

/** `p<pid>s<startTicks>n<pidNamespace>`: the form of an identity inside a name. */
const MARKER = /-p(\d+)s(\d+)n(\d+)-[A-Za-z0-9]{6}$/;

/** State letter and start time (clock ticks since boot) of `pid` from /proc, or undefined when /proc cannot tell. */
function statOf(pid: number | 'self'): { state: string; startTicks: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may hold spaces): state is field 3, starttime field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', startTicks: Number(fields[19]) || 0 };
  } catch {
    return undefined;
  }
}

/** Start time of `pid` in clock ticks since boot, or 0 when /proc cannot tell. */
export function startTicksOf(pid: number | 'self'): number {
  return statOf(pid)?.startTicks ?? 0;
}

function pidNamespaceOf(pid: number | 'self'): number {
  try {
    return Number(/\[(\d+)\]/.exec(readlinkSync(`/proc/${pid}/ns/pid`))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

let own: ProcessIdentity | undefined;

/**
 * This process' identity as the mounted /proc names it (read once): the pid `/proc/self` points
 * to and the pid namespace of /proc's PID 1. For a rollout child that runs in a PID namespace of
 * its own (a PID-1 worker's) these are the worker's view, so the worker can judge it; anywhere
 * else they equal `process.pid` and our own namespace. /proc/1 unreadable (not root): our own.
 */
export function ownIdentity(): ProcessIdentity {
  if (!own) {
    let pid = process.pid;
    try {
      pid = Number(readlinkSync('/proc/self')) || process.pid;
    } catch {
      // No /proc.
    }
    own = { pid, startTicks: startTicksOf('self'), pidNamespace: pidNamespaceOf(1) || pidNamespaceOf('self') };
  }
  return own;
}

/** True when /proc belongs to our pid namespace (its pids are ours to signal). */
export function procIsOwnNamespace(): boolean {
  try {
    return Number(readlinkSync('/proc/self')) === process.pid;
  } catch {
    return false;
  }
}

/** The marker of `identity` for a name: `p<pid>s<startTicks>n<pidNamespace>`. */
export function identityMarker(identity: ProcessIdentity): string {
  return `p${identity.pid}s${identity.startTicks}n${identity.pidNamespace}`;
}

/** The creator identity in a sandbox name (`…-p<pid>s<ticks>n<ns>-XXXXXX`), or undefined for a foreign name. */
export function parseIdentity(name: string): ProcessIdentity | undefined {
  const match = MARKER.exec(name);
  if (!match) return undefined;
  return { pid: Number(match[1]), startTicks: Number(match[2]), pidNamespace: Number(match[3]) };
}

/**
 * False only when `identity`'s process is certainly gone: same pid namespace as ours, and
 * no such pid, a zombie, or a pid reused by a process that started at another time. Anything we
 * cannot judge (another namespace, no permission) counts as alive, so nothing of a live
 * attempt is ever removed.
 */
export function isAlive(identity: ProcessIdentity): boolean {
  const me = ownIdentity();
  if (identity.pidNamespace !== me.pidNamespace) return true;
  if (identity.pid === me.pid) return identity.startTicks === me.startTicks || identity.startTicks === 0;
  try {
    process.kill(identity.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const now = statOf(identity.pid);
  if (!now) return true;
  // A zombie is dead: its parent died too (a SIGKILLed worker) and no init has reaped it yet.
  if (now.state === 'Z' || now.state === 'X') return false;
  return identity.startTicks === 0 || now.startTicks === 0 || now.startTicks === identity.startTicks;
}
