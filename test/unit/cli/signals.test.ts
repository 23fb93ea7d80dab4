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

// Fresh-user report: `demo` hung up on (its terminal closed) or writing into a closed pipe
// (`demo 2>&1 | head -5`) died on the spot and left its workers and redis-server running.
// Both are stop requests now.
const STOP_SCRIPT = `
import { onStopSignals } from './src/cli/signals.ts';
onStopSignals((reason) => process.stderr.write('stop ' + reason + '\\n'), (reason) => process.stderr.write('again ' + reason + '\\n'));
process.stderr.write('ready\\n');
if (process.argv.includes('--flood')) setInterval(() => process.stdout.write('x'.repeat(4096)), 5);
setInterval(() => undefined, 1000);
`;

function startStopScript(options: { flood?: boolean } = {}) {
  const node = [process.execPath, '--import', './test/helpers/ts-loader.mjs', '--input-type=module', '-e', STOP_SCRIPT, ...(options.flood ? ['--', '--flood'] : [])];
  const [program, ...args] = node;
  const child = spawn(program as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const waiters: Array<() => void> = [];
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const wake of waiters.splice(0)) wake();
  });
  const seen = async (text: string): Promise<void> => {
    while (!stderr.includes(text)) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, seen, stderr: () => stderr, exited };
}

describe('onStopSignals', () => {
  it('takes SIGHUP as a stop request', async () => {
    const script = startStopScript();
    await script.seen('ready');
    script.child.kill('SIGHUP');
    await script.seen('stop SIGHUP');
    script.child.kill('SIGKILL');
    await script.exited;
  });

  it('takes a stdout whose reader went away (EPIPE) as one stop request, and keeps running', async () => {
    const script = startStopScript({ flood: true });
    await script.seen('ready');
    script.child.stdout.destroy();
    await script.seen('stop EPIPE');
    // Writes go on failing after the first: none is a second request, none throws.
    script.child.kill('SIGTERM');
    await script.seen('again SIGTERM');
    expect(script.stderr().match(/EPIPE/g)).toHaveLength(1);
    expect(script.child.exitCode).toBeNull();
    script.child.kill('SIGKILL');
    await script.exited;
  });
});
