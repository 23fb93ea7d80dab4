import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';

/**
 * Reading this process' own direct children after every rollout must be cheap: opening,
 * reading and closing `/proc/self/task/<tid>/children` for each of Node's ~11 threads costs
 * ~50 syscalls. So each thread's file stays open and is re-read with a positional read at
 * offset 0 (a seq_file regenerates its content on every read from 0).
 *
 * Why this still finds every child a full re-read would:
 * - The thread list is read afresh each time (one readdir), never guessed from a thread
 *   count: a thread may exit and another start between two walks. A thread that exited is
 *   no longer listed; its children were re-parented by the kernel to a live thread of the
 *   group, which is listed, so they are found there.
 * - A kept file belongs to the task it was opened for, not to its number: once that task is
 *   gone it reads as empty, while a new thread may have got the same tid (pid_max may be
 *   32768). So an empty read of a kept non-main thread is confirmed with that task's `statm`,
 *   kept open too, which fails (ESRCH) once its task is gone; then both are reopened by path.
 *   A non-empty read came from a live task. The main thread (tid = pid) runs this code, so
 *   it is alive.
 * - What a kept fd yields is checked strictly (`children` is `pid ` repeated): rollout code
 *   shares this process and could close one of our fds by mistake, and the number be
 *   reused for a file of its own. Anything else drops the entry and the path is read.
 */
interface KeptTask {
  readonly children: number;
  /** `statm` of the same task, to tell a gone task from one without children; undefined for the main thread. */
  readonly statm: number | undefined;
}

const kept = new Map<string, KeptTask>();
/** Large enough for ~500 children; a fuller file is read by path instead. */
const buffer = Buffer.alloc(4096);
const CHILDREN = /^(?:[1-9]\d* )*$/;

function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    closeSync(fd);
  } catch {
    // Already closed.
  }
}

function forget(tid: string, close: boolean): void {
  const task = kept.get(tid);
  kept.delete(tid);
  if (task && close) {
    closeQuietly(task.children);
    closeQuietly(task.statm);
  }
}

function open(tid: string): KeptTask | undefined {
  let children: number | undefined;
  try {
    children = openSync(`/proc/self/task/${tid}/children`, 'r');
    const statm = tid === String(process.pid) ? undefined : openSync(`/proc/self/task/${tid}/statm`, 'r');
    const task = { children, statm };
    kept.set(tid, task);
    return task;
  } catch {
    closeQuietly(children); // the thread is gone, or /proc has no `children` files
    return undefined;
  }
}

/** Content of a kept `children` fd; undefined when it is not one (any error, wrong form, too long for the buffer). */
function readKept(fd: number): string | undefined {
  try {
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    if (length === buffer.length) return undefined;
    const text = buffer.toString('latin1', 0, length);
    return CHILDREN.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/** True while the task a kept `statm` fd was opened for exists. */
function alive(statm: number): boolean {
  try {
    readSync(statm, buffer, 0, buffer.length, 0);
    return true;
  } catch {
    return false;
  }
}

function readByPath(tid: string): string {
  try {
    return readFileSync(`/proc/self/task/${tid}/children`, 'latin1');
  } catch {
    return ''; // gone
  }
}

function childrenOf(tid: string): string {
  const task = kept.get(tid);
  if (task) {
    const text = readKept(task.children);
    if (text === undefined) forget(tid, false); // not ours any more (see above): leave that fd alone
    else if (text !== '' || task.statm === undefined || alive(task.statm)) return text;
    else forget(tid, true); // its task is gone and the tid was reused
  }
  const fresh = open(tid);
  if (!fresh) return readByPath(tid);
  return readKept(fresh.children) ?? readByPath(tid);
}

/**
 * Pids of this process' direct children, over all its threads, as `/proc/self/task/<tid>/children`
 * lists them (a child found twice is listed twice). [] where /proc has no task list.
 * Expects /proc to belong to this process' pid namespace (checked by the caller).
 */
export function ownChildren(): number[] {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return [];
  }
  const listed = new Set(tids);
  for (const tid of [...kept.keys()]) if (!listed.has(tid)) forget(tid, true);
  const found: number[] = [];
  for (const tid of tids) {
    const text = childrenOf(tid);
    if (text === '') continue; // the usual answer: no children
    for (const part of text.split(' ')) {
      const child = Number(part);
      if (Number.isInteger(child) && child > 0) found.push(child);
    }
  }
  return found;
}
