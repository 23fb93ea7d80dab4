import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { killSubtree, subtreeOf } from '../../../src/sandbox/index.js';

// subtreeOf('self') runs after every rollout, so it keeps /proc/self/task/<tid>/children open
// and re-reads it; it must still see what a fresh read by path sees, as threads come and go.

/** This process' direct children as a fresh read of every thread's file by path shows them. */
function childrenByPath(): number[] {
  const found: number[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const text = readFileSync(`/proc/self/task/${tid}/children`, 'utf8');
      for (const part of text.split(' ')) if (Number(part) > 0) found.push(Number(part));
    } catch {
      // The thread exited while we looked.
    }
  }
  return found.sort((a, b) => a - b);
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

function sleeper(): ChildProcess {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  started.push(child);
  return child;
}

const exited = (child: ChildProcess): Promise<void> => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));

/** A worker thread that spawns `sleep 300` (its own child, not the main thread's) and reports the pid. */
async function threadWithChild(): Promise<{ worker: Worker; pid: number }> {
  const worker = new Worker(
    `const { spawn } = require('node:child_process');
     const { parentPort } = require('node:worker_threads');
     const child = spawn('sleep', ['300'], { stdio: 'ignore' });
     parentPort.postMessage(child.pid);
     parentPort.on('message', () => process.exit(0));`,
    { eval: true },
  );
  const pid = await new Promise<number>((resolve) => worker.once('message', resolve));
  return { worker, pid };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("subtreeOf('self') with kept /proc fds", () => {
  it('sees each new child on later walks and forgets it once reaped', async () => {
    const before = subtreeOf('self');
    const first = sleeper();
    expect(subtreeOf('self')).toContain(first.pid);
    const second = sleeper();
    expect(subtreeOf('self')).toEqual(expect.arrayContaining([first.pid, second.pid]));
    first.kill('SIGKILL');
    await exited(first);
    expect(subtreeOf('self')).not.toContain(first.pid);
    expect(subtreeOf('self')).toContain(second.pid);
    expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath());
    second.kill('SIGKILL');
    await exited(second);
    expect(subtreeOf('self')).toEqual(before);
  });

  it("finds a worker thread's child, also after that thread exited (re-parented to another thread)", async () => {
    expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath()); // fds kept for the current threads
    const { worker, pid } = await threadWithChild();
    try {
      expect(subtreeOf('self')).toContain(pid);
      worker.postMessage('exit');
      await new Promise((resolve) => worker.once('exit', resolve));
      expect(alive(pid)).toBe(true);
      expect(subtreeOf('self')).toContain(pid);
      expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath());
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });

  it('agrees with a fresh read by path while threads start and exit between walks', async () => {
    const pids: number[] = [];
    try {
      for (let round = 0; round < 4; round++) {
        const { worker, pid } = await threadWithChild();
        pids.push(pid);
        expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath());
        worker.postMessage('exit');
        await new Promise((resolve) => worker.once('exit', resolve));
        expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath());
      }
      expect(subtreeOf('self')).toEqual(expect.arrayContaining(pids));
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGKILL');
    }
  });

  it('finds the child of a thread that started after another exited, the thread count unchanged', async () => {
    const idle = new Worker("require('node:worker_threads').parentPort.once('message', () => process.exit(0)); require('node:worker_threads').parentPort.postMessage('up');", { eval: true });
    await new Promise((resolve) => idle.once('message', resolve));
    const threads = (): number => readdirSync('/proc/self/task').length;
    const before = threads();
    expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath()); // the idle thread's fds are kept
    idle.postMessage('exit');
    await new Promise((resolve) => idle.once('exit', resolve));
    const { worker, pid } = await threadWithChild(); // one thread gone, one new: the same count
    try {
      expect(threads()).toBe(before);
      expect(subtreeOf('self')).toContain(pid);
      expect(subtreeOf('self').sort((a, b) => a - b)).toEqual(childrenByPath());
    } finally {
      process.kill(pid, 'SIGKILL');
      worker.postMessage('exit');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  });

  it("killSubtree('self') kills a thread's orphaned child and what it started, sparing this process", async () => {
    const { worker, pid } = await threadWithChild();
    worker.postMessage('exit');
    await new Promise((resolve) => worker.once('exit', resolve));
    const shell = spawn('sh', ['-c', 'sleep 300 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(shell);
    const grandchild = Number(await new Promise<string>((resolve) => shell.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString()))));
    expect(subtreeOf('self')).toEqual(expect.arrayContaining([pid, shell.pid, grandchild]));
    killSubtree('self', { includeRoot: false });
    await exited(shell);
    // Neither is our child any more (the thread's child was re-parented to us, reaped by no
    // one; the grandchild to init): dead means a zombie or gone.
    const dead = (target: number): boolean => {
      try {
        return readFileSync(`/proc/${target}/stat`, 'utf8').split(') ')[1]?.[0] === 'Z';
      } catch {
        return true;
      }
    };
    for (const until = Date.now() + 5000; Date.now() < until && !(dead(pid) && dead(grandchild)); ) await new Promise((resolve) => setTimeout(resolve, 20));
    expect([dead(pid), dead(grandchild)]).toEqual([true, true]);
  });
});
