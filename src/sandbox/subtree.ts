import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ownChildren } from './own-children.js';
import { procIsOwnNamespace } from './process-identity.js';

/**
 * /proc was seen to be our pid namespace's: that cannot change for a process, so it is not
 * asked again (a failed look, e.g. out of fds, is asked again next time).
 */
let ownNamespace = false;

function directChildren(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return []; // gone
  }
  const found: number[] = [];
  for (const tid of tasks) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const part of text.split(' ')) {
      const child = Number(part);
      if (Number.isInteger(child) && child > 0) found.push(child);
    }
  }
  return found;
}

/**
 * Pids below `rootPid` in its own process tree, read from `/proc/<pid>/task/<tid>/children`
 * (Linux ≥ 3.5): a walk of that subtree only, never a scan of every process on the machine.
 * A process that escaped by double-forking (re-parented to init) is not in it: that is what
 * a PID namespace or a cgroup is for. Returns [] where /proc has no `children` files, and
 * where /proc belongs to another pid namespace (its pids would name other processes here: a
 * rollout child in a namespace of its own, whose namespace ends everything with it).
 * `'self'` reads this process' own threads through kept fds (see `ownChildren`): it is
 * walked after every rollout.
 */
export function subtreeOf(rootPid: number | 'self'): number[] {
  const found: number[] = [];
  ownNamespace ||= procIsOwnNamespace();
  if (!ownNamespace) return found;
  const stack: Array<number | 'self'> = [rootPid];
  const seen = new Set<number>();
  while (stack.length > 0 && found.length < 100_000) {
    const pid = stack.pop() as number | 'self';
    for (const child of pid === 'self' ? ownChildren() : directChildren(pid)) {
      if (seen.has(child)) continue;
      seen.add(child);
      found.push(child);
      stack.push(child);
    }
  }
  return found;
}

/** Sends `sig` to a pid (or, negative, a process group) that may be gone already. */
export function signalQuietly(target: number, sig: NodeJS.Signals): void {
  try {
    process.kill(target, sig);
  } catch {
    // Gone.
  }
}

/**
 * Longest wait, ms, for SIGSTOPped processes in an uninterruptible sleep (state D) to stop: one
 * stuck there (a hung NFS read) forks nothing while it is, so past this it is taken as it is.
 */
const STOP_WAIT_MS = 500;
/**
 * Longest wait, ms, for a runnable or sleeping process to stop. It stops only once the scheduler
 * runs it, which on a loaded machine can take longer than STOP_WAIT_MS: giving up on it then let
 * it fork between the last walk and the kill. Past this the walk and kill go on regardless (the
 * wait blocks the caller's event loop, so it is kept well under a lock's duration).
 */
const STOP_GIVE_UP_MS = 3_000;
/** Slept on between looks at whether they stopped (Atomics.wait: no busy loop). */
const pause = new Int32Array(new SharedArrayBuffer(4));

/** A process' state letter (`/proc/<pid>/stat` field 3), 'X' when it is gone. */
function stateOf(pid: number): string {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return 'X';
  }
  return stat[stat.lastIndexOf(')') + 2] ?? 'X';
}

/** True when a process forks nothing any more: stopped, a zombie, or gone. */
function forksNoMore(state: string): boolean {
  return state === 'T' || state === 't' || state === 'Z' || state === 'X';
}

/**
 * Waits (blocking, see `pause`) until every pid forks no more; one in state D counts as
 * settled after STOP_WAIT_MS, any other after STOP_GIVE_UP_MS from `since`.
 */
function awaitStopped(pids: readonly number[], since: number): void {
  for (;;) {
    const waited = performance.now() - since;
    if (waited >= STOP_GIVE_UP_MS) return;
    const settled = pids.every((pid) => {
      const state = stateOf(pid);
      return forksNoMore(state) || (state === 'D' && waited >= STOP_WAIT_MS);
    });
    if (settled) return;
    Atomics.wait(pause, 0, 0, 1);
  }
}

/**
 * Freezes `rootPid`'s subtree before it is signalled: each process found is SIGSTOPped and,
 * once all of them have stopped, the subtree is walked again, until a walk finds nothing new.
 * A walk followed by a kill misses a child forked in between (re-parented to init, it outlives
 * the kill; seen under load as a setsid helper outliving a time limit); a stopped process forks
 * nothing. Nothing is resumed here: SIGKILL ends stopped processes, and a caller sending another
 * signal sends SIGCONT after it. Where the walk finds nothing (the usual case after a rollout)
 * this is one walk, as before.
 * @param options.stopRoot stop `rootPid` itself first (never for `'self'`).
 * @returns the pids found below the root (root excluded), added to `options.into` when given.
 */
export function stopSubtree(rootPid: number | 'self', options: { stopRoot: boolean; into?: Set<number> }): Set<number> {
  const into = options.into ?? new Set<number>();
  // Without the root to stop, the first step is a walk: when it finds nothing (after almost
  // every rollout) there is nothing to freeze.
  let toStop: number[] = options.stopRoot && rootPid !== 'self' ? [rootPid] : subtreeOf(rootPid);
  if (toStop.length === 0) return into;
  const stopped = new Set<number>();
  const since = performance.now();
  for (;;) {
    for (const pid of toStop) signalQuietly(pid, 'SIGSTOP');
    awaitStopped(toStop, since);
    for (const pid of toStop) stopped.add(pid);
    toStop = subtreeOf(rootPid).filter((pid) => !stopped.has(pid));
    if (toStop.length === 0) break;
    if (performance.now() - since >= STOP_GIVE_UP_MS) {
      for (const pid of toStop) stopped.add(pid);
      break;
    }
  }
  for (const pid of stopped) if (pid !== rootPid) into.add(pid);
  return into;
}

/** SIGKILLs each pid and the process group it may lead; gone ones are skipped. */
export function killPids(pids: readonly number[]): void {
  for (const pid of pids) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Already gone, or not a group leader.
      }
    }
  }
}

/**
 * SIGKILLs `rootPid`'s process group and its whole subtree (each descendant and the group it
 * may lead), frozen and collected before killing (see {@link stopSubtree}) so neither a
 * re-parented grandchild nor a child forked meanwhile is missed. With `includeRoot: false` the
 * root itself is spared and never stopped (a reused rollout child).
 */
export function killSubtree(rootPid: number | 'self', options: { includeRoot: boolean }): void {
  const includeRoot = options.includeRoot && rootPid !== 'self';
  const below = [...stopSubtree(rootPid, { stopRoot: includeRoot })];
  killPids(includeRoot ? [rootPid, ...below] : below);
}
