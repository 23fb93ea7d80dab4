import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { killSubtree, subtreeOf } from '../../../src/sandbox/index.js';
import { hostProcesses } from '../../helpers/host-processes.js';
import { waitFor } from '../../helpers/wait-for.js';

// The process-group fallback kills what a walk of the subtree found. A child forked between the
// walk and the kill, in a session of its own (setsid), was in neither: re-parented to init, it
// outlived the kill. A shell forking such children as fast as it can hits that window every time.
describe('killSubtree', () => {
  it('leaves nothing of a tree that keeps forking setsid children while it is killed', async () => {
    const linger = String(7000 + (process.pid % 1000)); // an argv no other process here has
    const looper = spawn('sh', ['-c', `while :; do setsid sleep ${linger} & done`], { detached: true, stdio: 'ignore' });
    const root = looper.pid as number;
    const exited = new Promise((resolve) => looper.once('exit', resolve));
    await waitFor(() => subtreeOf(root).length >= 20, 'the shell to fork 20 children', 10_000);
    killSubtree(root, { includeRoot: true });
    await exited;
    // A SIGKILLed process ends only once the scheduler runs it (under load, after this test
    // looks): the wait is for that. One that escaped the kill sleeps on for ${linger} s.
    const lingering = (): number[] => hostProcesses().filter((p) => p.state !== 'Z' && p.argv.join(' ') === `sleep ${linger}`).map((p) => p.pid);
    try {
      await waitFor(() => lingering().length === 0, () => `the killed tree to end (left: ${lingering().join(' ')})`, 10_000);
    } finally {
      for (const pid of lingering()) process.kill(pid, 'SIGKILL');
    }
  });
});
