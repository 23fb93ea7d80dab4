import { readdirSync, readFileSync } from 'node:fs';

/**
 * Pids of every live descendant of `rootPid`, read from `/proc/<pid>/stat` (Linux). On
 * systems without /proc it returns [] and only the process group is killed.
 */
export function descendantsOf(rootPid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may itself hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // The process exited between readdir and read.
    }
  }
  const found: number[] = [];
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      stack.push(child);
    }
  }
  return found;
}

/** SIGKILLs each pid and the process group it may lead; gone ones are skipped. */
function killAll(pids: readonly number[]): void {
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
 * SIGKILLs a rollout child, its process group and every descendant's process group.
 * Descendants are collected first: a code runner starts its entrypoint in a group of its
 * own (so it can kill it on its own time limit), which `kill(-pid)` alone would miss.
 */
export function killTree(rootPid: number): void {
  killAll([rootPid, ...descendantsOf(rootPid)]);
}

/**
 * SIGKILLs every descendant of `rootPid` (and their process groups) but not the root: what
 * a finished rollout left running, e.g. a `detached` grandchild its code runner never saw.
 */
export function killDescendants(rootPid: number): void {
  killAll(descendantsOf(rootPid));
}
