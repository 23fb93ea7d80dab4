import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// Fresh-user report: a second Ctrl-C made `run` exit 130 with no summary and no word on how to
// go on. The first signal now says that a second exits at once; the second says how to resume.
const SCRIPT = `
import { interruptSignal } from './src/cli/signals.ts';
const interrupt = interruptSignal(130, { first: 'first note', forced: 'forced note: rollout-queue resume r1' });
interrupt.signal.addEventListener('abort', () => process.stdout.write('aborted\\n'));
process.stdout.write('ready\\n');
setInterval(() => undefined, 1000);
`;

describe('interruptSignal', () => {
  it('first SIGINT aborts with its note and keeps running; a second exits 130 with the forced note', async () => {
    const child = spawn(process.execPath, ['--import', './test/helpers/ts-loader.mjs', '--input-type=module', '-e', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // stdout and stderr are separate pipes: a line on one says nothing about the other's arrival.
    const seen = (text: string, stream: 'stdout' | 'stderr' = 'stdout'): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (!(stream === 'stdout' ? stdout : stderr).includes(text)) return;
          child[stream].off('data', check);
          resolve();
        };
        child[stream].on('data', check);
        check();
      });
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    await seen('ready');
    child.kill('SIGINT');
    await Promise.all([seen('aborted'), seen('first note', 'stderr')]);
    expect(stderr).not.toContain('forced note');
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('forced note: rollout-queue resume r1');
  });
});
