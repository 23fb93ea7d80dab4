import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { pidCursor } from './pid-cursor.js';
import { markLooked, spawnedSinceLook, watchingSpawns } from './spawn-watch.js';

/**
 * Reading this process' own direct children after every rollout must be cheap: opening,
 * reading and closing `/proc/self/task/<tid>/children` for each of Node's ~11 threads costs
 * ~50 syscalls. So each thread's file stays open and is re-read with a positional read at
 * offset 0 (a seq_file regenerates its content on every read from 0).
 *
 * Why this still finds every child a full re-read would:
 * - The thread list is read afresh (one readdir) unless the kept tasks are shown to be all the
 *   threads (below), never guessed from a thread count alone: a thread may exit and another
 *   start between two walks. A thread that exited is no longer listed; its children were re-parented by the kernel to a live thread of the
 *   group, which is listed, so they are found there.
 * - A kept file belongs to the task it was opened for, not to its number: once that task is
 *   gone it reads as empty, while a new thread may have got the same tid (pid_max may be
 *   32768). So an empty read of a kept non-main thread is confirmed with that task's
 *   `oom_score_adj` (the cheapest file of a task to read), kept open too, which fails (ESRCH)
 *   once its task is gone; then both are reopened by path. A non-empty read came from a live
 *   task. The main thread (tid = pid) runs this code, so it is alive.
 * - The thread list is not read (a readdir costs more than all the kept reads together) when
 *   the thread count, one fstat of the kept `/proc/self/task` (its link count is 2 + the
 *   threads), equals the number of kept tasks and every kept task is confirmed alive: then the
 *   threads are exactly the kept ones. The count is taken before the reads, as the list is.
 * - No thread is read at all while the pid namespace's allocation cursor (see pidCursor) has not
 *   moved since a walk that found no children: a child of ours can only appear by being
 *   created, which allocates a pid in our namespace (re-parenting brings us orphans only of our
 *   own descendants, and there were none). The cursor is read before the walk, so a child made
 *   while it runs moves the cursor past the value kept. Measured: the whole walk is ~0.1 ms of a
 *   rollout child's CPU per rollout (11 threads: 23 reads and an fstat); this is one read.
 * - Not even that read is made in a process that watches its own spawns (spawn-watch.ts, a
 *   rollout child): after a walk that found no children, while it has created no process since.
 *   Such a process never reads the cursor (nor spawns the `node --version` that checks it).
 * - What a kept fd yields is checked strictly (`children` is `pid ` repeated): rollout code
 *   shares this process and could close one of our fds by mistake, and the number be
 *   reused for a file of its own. Anything else drops the entry and the path is read.
 */
interface KeptTask {
  readonly children: number;
  /** `oom_score_adj` of the same task, to tell a gone task from one without children; undefined for the main thread. */
  readonly probe: number | undefined;
}

const kept = new Map<string, KeptTask>();
/** `/proc/self/task` kept open, with its identity (an fd closed by rollout code and reused is not it); null where it cannot be opened. */
let taskDir: { readonly fd: number; readonly dev: number; readonly ino: number } | null | undefined;
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

/** Drops a kept task, closing the fds that are still ours (`children`: not its probe, which rollout code may own now). */
function forget(tid: string, close: 'both' | 'children' | 'none'): void {
  const task = kept.get(tid);
  kept.delete(tid);
  if (task && close !== 'none') closeQuietly(task.children);
  if (task && close === 'both') closeQuietly(task.probe);
}

function open(tid: string): KeptTask | undefined {
  let children: number | undefined;
  try {
    children = openSync(`/proc/self/task/${tid}/children`, 'r');
    const probe = tid === String(process.pid) ? undefined : openSync(`/proc/self/task/${tid}/oom_score_adj`, 'r');
    const task = { children, probe };
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

const OOM_SCORE_ADJ = /^-?\d+\n$/;

/** What a kept `oom_score_adj` fd says of its task: there, gone (ESRCH), or the fd is not that file any more. */
function probeTask(probe: number): 'alive' | 'gone' | 'foreign' {
  try {
    const length = readSync(probe, buffer, 0, buffer.length, 0);
    return OOM_SCORE_ADJ.test(buffer.toString('latin1', 0, length)) ? 'alive' : 'foreign';
  } catch (error) {
    return (error as { code?: unknown } | null)?.code === 'ESRCH' ? 'gone' : 'foreign';
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
    if (text === undefined) forget(tid, 'none'); // not ours any more (see above): leave that fd alone
    else if (text !== '' || task.probe === undefined) return text;
    else {
      const probe = probeTask(task.probe);
      if (probe === 'alive') return text;
      forget(tid, probe === 'gone' ? 'both' : 'children'); // gone: the tid was reused
    }
  }
  const fresh = open(tid);
  if (!fresh) return readByPath(tid);
  return readKept(fresh.children) ?? readByPath(tid);
}

/** This process' thread count from the kept `/proc/self/task`; undefined when it cannot be read as that directory. */
function threadCount(): number | undefined {
  if (taskDir === undefined) {
    try {
      const fd = openSync('/proc/self/task', 'r');
      const { dev, ino } = fstatSync(fd);
      taskDir = { fd, dev, ino };
    } catch {
      taskDir = null;
    }
  }
  if (taskDir === null) return undefined;
  try {
    const stats = fstatSync(taskDir.fd);
    if (stats.isDirectory() && stats.dev === taskDir.dev && stats.ino === taskDir.ino) return stats.nlink - 2;
  } catch {
    // Not ours any more: below.
  }
  taskDir = undefined; // closed (and maybe reused) by rollout code: leave that fd alone, open it again next time
  return undefined;
}

/** The children of the kept tasks when they are all the threads there are (see above); undefined when the list must be read. */
function keptChildren(): number[] | undefined {
  if (kept.size === 0 || threadCount() !== kept.size) return undefined;
  const found: number[] = [];
  for (const task of kept.values()) {
    const text = readKept(task.children);
    if (text === undefined) return undefined;
    if (text === '') {
      if (task.probe !== undefined && probeTask(task.probe) !== 'alive') return undefined;
      continue;
    }
    pushPids(text, found);
  }
  return found;
}

function pushPids(text: string, into: number[]): void {
  for (const part of text.split(' ')) {
    const child = Number(part);
    if (Number.isInteger(child) && child > 0) into.push(child);
  }
}

/** The pid cursor read before the last walk, when that walk found no children; else undefined. */
let quietAt: number | undefined;
/** The last walk found no children (those kept on purpose aside). */
let quiet = false;

/** Children this process keeps on purpose (its launch server): never listed, so never killed as leftovers. */
const spared = new Set<number>();

/** Leaves `pid`, a child this process keeps on purpose, out of {@link ownChildren} (and so of every walk of 'self'). */
export function keepChild(pid: number): void {
  spared.add(pid);
}

/** Undoes {@link keepChild} (the child is gone). */
export function releaseChild(pid: number): void {
  spared.delete(pid);
}

/**
 * Pids of this process' direct children, over all its threads, as `/proc/self/task/<tid>/children`
 * lists them (a child found twice is listed twice), except those kept on purpose ({@link keepChild}).
 * [] where /proc has no task list. Expects /proc to belong to this process' pid namespace
 * (checked by the caller).
 */
export function ownChildren(): number[] {
  if (quiet && !spawnedSinceLook()) return [];
  // Before the cursor and the walk: a process created after this point is looked for next time.
  markLooked();
  // A process that watches its spawns needs no cursor, nor the spawn that checks it once.
  const cursor = watchingSpawns() ? undefined : pidCursor();
  if (cursor !== undefined && cursor === quietAt) return [];
  const walked = walkThreads();
  const found = spared.size === 0 ? walked : walked.filter((pid) => !spared.has(pid));
  quiet = found.length === 0;
  quietAt = quiet ? cursor : undefined;
  return found;
}

function walkThreads(): number[] {
  const known = keptChildren();
  if (known) return known;
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return [];
  }
  const listed = new Set(tids);
  for (const tid of [...kept.keys()]) if (!listed.has(tid)) forget(tid, 'both');
  const found: number[] = [];
  for (const tid of tids) {
    const text = childrenOf(tid);
    if (text === '') continue; // the usual answer: no children
    pushPids(text, found);
  }
  return found;
}
