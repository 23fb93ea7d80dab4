import { readdirSync, readFileSync } from 'node:fs';
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
 * may lead), collected before killing so a re-parented grandchild is not missed. With
 * `includeRoot: false` the root itself is spared (a reused rollout child).
 */
export function killSubtree(rootPid: number | 'self', options: { includeRoot: boolean }): void {
  const below = subtreeOf(rootPid);
  killPids(options.includeRoot && rootPid !== 'self' ? [rootPid, ...below] : below);
}
