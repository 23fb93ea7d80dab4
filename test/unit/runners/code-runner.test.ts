import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brandedKind, CallerError, InfrastructureError, ModelError, truncationMarker } from '../../../src/spec/index.js';
import { codeRunner } from '../../../src/runners/index.js';
import { fakeContext } from './fake-context.js';
import { BEACON_CLIENT_CJS, openBeacon, processState, stateAfterDeath } from './process-probe.js';

/** Awaits a promise that must reject and returns its error. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  const settled = await promise.then(
    (value) => ({ ok: true as const, value }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  if (settled.ok) throw new Error(`expected a rejection, got ${JSON.stringify(settled.value)}`);
  expect(settled.err).toBeInstanceOf(Error);
  return settled.err as Error;
}

// No gold: a program run on the worker never receives the key its reward scores against (issue 28), so it reads a non-gold `expect`.
const task = { id: 't1', question: 'What is 6 * 7?', expect: 42 };

describe('codeRunner outcomes', () => {
  it('exit 0 returns stdout, stderr, exitCode and durationMs, with the task on stdin', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const artifact = `
      let input = '';
      process.stdin.on('data', (c) => { input += c; });
      process.stdin.on('end', () => {
        const task = JSON.parse(input);
        console.log('id=' + task.id + ' expect=' + task.expect);
        console.error('working...');
      });`;
    const output = await run(artifact, task, fakeContext());
    expect(output).toEqual({
      stdout: 'id=t1 expect=42\n',
      stderr: 'working...\n',
      exitCode: 0,
      durationMs: expect.any(Number),
      stdoutTruncated: false,
      stderrTruncated: false,
      peakRssBytes: output.peakRssBytes,
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 0,
    });
    expect(output.peakRssBytes === null || output.peakRssBytes > 0).toBe(true);
    expect(output.durationMs).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(JSON.stringify(output))).toEqual(output);
  });

  it('runs a .py entrypoint without a #! line with python3 (regression: /bin/sh ran it and failed with "import: not found")', async () => {
    const run = codeRunner({ entrypoint: 'main.py', timeoutMs: 10_000 });
    const artifact = 'import json, sys\ntask = json.load(sys.stdin)\nprint("Answer:", task["expect"])\n';
    const output = await run(artifact, task, fakeContext());
    expect(output.stdout).toBe('Answer: 42\n');
  });

  it('writes every file of { files } and runs the entrypoint among them', async () => {
    const run = codeRunner({ entrypoint: 'src/main.mjs', timeoutMs: 10_000 });
    const output = await run(
      {
        files: {
          'src/main.mjs': "import { double } from './lib/double.mjs';\nconsole.log(double(21));",
          'src/lib/double.mjs': 'export const double = (x) => x * 2;',
          'README.md': 'not run',
        },
      },
      task,
      fakeContext(),
    );
    expect(output.stdout).toBe('42\n');
  });

  it('runs a non-JS entrypoint through its #! line', async () => {
    const run = codeRunner({ entrypoint: 'solve.sh', timeoutMs: 10_000 });
    const output = await run('#!/bin/sh\nread line\necho "got: $line"\n', { id: 'x' }, fakeContext());
    expect(output.stdout).toBe('got: {"id":"x"}\n');
  });

  it('runs config.command when given', async () => {
    const run = codeRunner({ entrypoint: 'main.sh', command: ['sh', 'main.sh', 'arg-1'], timeoutMs: 10_000 });
    const output = await run('echo "args: $1"', task, fakeContext());
    expect(output.stdout).toBe('args: arg-1\n');
  });

  it('non-zero exit → ModelError NonZeroExit with the exit code and the stderr tail only', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const artifact = `
      process.stderr.write('HEAD-OF-STDERR\\n' + 'x'.repeat(10000) + '\\n');
      process.stderr.write('TypeError: last words of the artifact\\n');
      process.exitCode = 3;`;
    const err = await rejection(run(artifact, task, fakeContext()));
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).type).toBe('NonZeroExit');
    expect(brandedKind(err)).toBe('model');
    expect(err.message).toContain('exited with code 3');
    expect(err.message).toContain('TypeError: last words of the artifact');
    expect(err.message).not.toContain('HEAD-OF-STDERR');
    expect(err.message.length).toBeLessThan(2048 + 400);
  });

  it('an uncaught exception → NonZeroExit quoting the stack', async () => {
    const run = codeRunner({ entrypoint: 'main.cjs', timeoutMs: 10_000 });
    const err = await rejection(run("null.answer; // TypeError", task, fakeContext()));
    expect((err as ModelError).type).toBe('NonZeroExit');
    expect(err.message).toContain('exited with code 1');
    expect(err.message).toMatch(/TypeError: Cannot read properties of null/);
  });

  it('death by a signal (process.abort) → NonZeroExit naming the signal', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const err = await rejection(run('process.abort();', task, fakeContext()));
    expect((err as ModelError).type).toBe('NonZeroExit');
    expect(err.message).toContain('killed by signal SIGABRT');
  });

  it('own time limit → RunTimeout within bounds, quoting stderr', async () => {
    const timeoutMs = 1000;
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs });
    const artifact = "process.stderr.write('spinning\\n', () => { for (;;) {} });";
    const started = performance.now();
    const err = await rejection(run(artifact, task, fakeContext()));
    const elapsed = performance.now() - started;
    expect((err as ModelError).type).toBe('RunTimeout');
    expect(brandedKind(err)).toBe('model');
    expect(err.message).toContain(`timeoutMs of ${timeoutMs} ms`);
    expect(err.message).toContain('spinning');
    expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 5);
    expect(elapsed).toBeLessThan(timeoutMs + 3000);
  });

  it('kills the leader and its grandchildren on timeout (pids reported over a beacon)', async () => {
    const beacon = await openBeacon();
    try {
      const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 1500 });
      const artifact = `
        const { spawn } = require('node:child_process');
        const sleeper = spawn('sleep', ['1000'], { stdio: 'inherit' });
        const net = require('node:net');
        const beacon = net.connect(Number(process.env.BEACON_PORT), '127.0.0.1', () => {
          // Host pids: in the attempt's PID namespace process.pid is the namespace's own.
          const self = Number(require('node:fs').readlinkSync('/proc/self'));
          const grandchild = Number(require('node:fs').readFileSync('/proc/self/task/' + self + '/children', 'utf8').trim());
          beacon.write(JSON.stringify({ pid: self, grandchild }) + '\\n', () => { for (;;) {} });
        });`;
      const outcome = rejection(run(artifact, task, fakeContext({ secrets: { BEACON_PORT: String(beacon.port) } })));
      const pids = JSON.parse(await beacon.firstLine) as { pid: number; grandchild: number };
      expect(processState(pids.pid)).toBe('alive');
      expect(processState(pids.grandchild)).toBe('alive');
      const err = await outcome;
      expect((err as ModelError).type).toBe('RunTimeout');
      // The leader is reaped by the runner: gone. The orphaned grandchild is dead; whether it is
      // already reaped depends on PID 1 of the machine (some container inits never reap).
      expect(processState(pids.pid)).toBe('gone');
      expect(processState(pids.grandchild)).not.toBe('alive');
    } finally {
      await beacon.close();
    }
  });

  it('kills an artifact that ignores SIGTERM (SIGKILL after the grace)', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 1000 });
    const artifact = "process.on('SIGTERM', () => console.error('ignoring SIGTERM')); setInterval(() => {}, 1000);";
    const started = performance.now();
    const err = await rejection(run(artifact, task, fakeContext()));
    expect((err as ModelError).type).toBe('RunTimeout');
    expect(err.message).toContain('ignoring SIGTERM');
    expect(performance.now() - started).toBeLessThan(4000);
  });

  it('leftover processes of an artifact that exited 0 are killed', async () => {
    const beacon = await openBeacon();
    try {
      const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
      const artifact = `
        const { spawn } = require('node:child_process');
        const orphan = spawn('sleep', ['1000'], { stdio: 'ignore' });
        orphan.unref();
        const net = require('node:net');
        const beacon = net.connect(Number(process.env.BEACON_PORT), '127.0.0.1', () => {
          const self = require('node:fs').readlinkSync('/proc/self');
        const hostPid = Number(require('node:fs').readFileSync('/proc/self/task/' + self + '/children', 'utf8').trim());
        beacon.end(JSON.stringify({ orphan: hostPid }) + '\\n');
        });`;
      const output = await run(artifact, task, fakeContext({ secrets: { BEACON_PORT: String(beacon.port) } }));
      expect(output.exitCode).toBe(0);
      const { orphan } = JSON.parse(await beacon.firstLine) as { orphan: number };
      // It holds none of the runner's pipes, so the runner does not wait for its death; SIGKILL
      // was sent when the leader exited, and the kernel finishes it within moments.
      expect(await stateAfterDeath(orphan, 2000)).not.toBe('alive');
    } finally {
      await beacon.close();
    }
  });

  it('ctx.signal abort → AbortError promptly, with the reason, and the artifact is gone', async () => {
    const beacon = await openBeacon();
    try {
      const controller = new AbortController();
      const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 60_000 });
      const ctx = fakeContext({ signal: controller.signal, secrets: { BEACON_PORT: String(beacon.port) } });
      const outcome = rejection(run(`${BEACON_CLIENT_CJS}\nsetInterval(() => {}, 1000);`, task, ctx));
      const pid = Number(await beacon.firstLine);
      const abortedAt = performance.now();
      controller.abort(new Error('lock lost for lease unit-test'));
      const err = await outcome;
      expect(performance.now() - abortedAt).toBeLessThan(1500);
      expect(err.name).toBe('AbortError');
      expect(err.message).toContain(String(controller.signal.reason));
      expect(err).not.toBeInstanceOf(ModelError);
      expect(processState(pid)).toBe('gone');
    } finally {
      await beacon.close();
    }
  });

  it('an already aborted ctx.signal → AbortError without running anything', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const controller = new AbortController();
    controller.abort('cancelled by coordinator');
    const err = await rejection(run('throw new Error("must not run")', task, fakeContext({ signal: controller.signal })));
    expect(err.name).toBe('AbortError');
    expect(err.message).toContain('cancelled by coordinator');
  });

  // Issue 11: a capped stream keeps its head AND its tail (the answer is usually at the end),
  // with a marker line and the dropped byte count in between (was: the head only).
  it('caps a flood of output at maxOutputBytes, keeping the head and the tail', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000, maxOutputBytes: 1000 });
    const artifact = `
      process.stdout.write('START' + 'o'.repeat(5 * 1024 * 1024) + 'END');
      process.stderr.write('BEGIN' + 'e'.repeat(3 * 1024 * 1024) + 'FIN');`;
    const output = await run(artifact, task, fakeContext());
    const stdoutBytes = 5 + 5 * 1024 * 1024 + 3;
    expect(output.stdoutDroppedBytes).toBe(stdoutBytes - 1000);
    expect(output.stdout).toBe(`START${'o'.repeat(495)}${truncationMarker(stdoutBytes - 1000)}${'o'.repeat(497)}END`);
    expect(output.stdoutTruncated).toBe(true);
    expect(output.stderr.startsWith('BEGINeee')).toBe(true);
    expect(output.stderr.endsWith('eeeFIN')).toBe(true);
    expect(output.stderrDroppedBytes).toBe(5 + 3 * 1024 * 1024 + 3 - 1000);
    expect(output.stderrTruncated).toBe(true);
  });

  it('does not split a UTF-8 character at either cut', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000, maxOutputBytes: 10 });
    const output = await run("process.stdout.write('€'.repeat(100));", task, fakeContext());
    // 5 bytes each side hold one whole 3-byte character; the partial ones go with the dropped middle.
    expect(output.stdout).toBe(`€${truncationMarker(294)}€`);
    expect(output.stdoutTruncated).toBe(true);
    expect(output.stdoutDroppedBytes).toBe(294);
  });

  it('an artifact that never reads a large stdin still succeeds', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const output = await run("console.log('done')", { id: 'big', blob: 'z'.repeat(2_000_000) }, fakeContext());
    expect(output.stdout).toBe('done\n');
  });

  it('a #! line naming a missing interpreter → ModelError SpawnFailed', async () => {
    const run = codeRunner({ entrypoint: 'solve', timeoutMs: 10_000 });
    const err = await rejection(run('#!/nonexistent/interpreter\nprint(1)\n', task, fakeContext()));
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).type).toBe('SpawnFailed');
  });

  it('an interpreter missing on the worker → InfrastructureError', async () => {
    for (const command of [['/nonexistent/node', 'main.js'], ['no-such-interpreter-for-rollout-queue', 'main.js']]) {
      const run = codeRunner({ entrypoint: 'main.js', command, timeoutMs: 10_000 });
      const err = await rejection(run('console.log(1)', task, fakeContext()));
      expect(err).toBeInstanceOf(InfrastructureError);
      expect(err.message).toContain('ENOENT');
      expect(err.message).toContain(command[0]);
    }
  });

  it('removes the work directory after success, failure and timeout', async () => {
    const beacon = await openBeacon();
    try {
      const ctx = fakeContext({ secrets: { BEACON_PORT: String(beacon.port) } });
      const reportCwd = `
        const net = require('node:net');
        const b = net.connect(Number(process.env.BEACON_PORT), '127.0.0.1', () => b.write(process.cwd() + '\\n'));`;
      const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 1500 });
      await rejection(run(`${reportCwd}\nsetInterval(() => {}, 1000);`, task, ctx));
      const dir = await beacon.firstLine;
      expect(dir).toContain(`${ctx.leaseId}.${ctx.runAttemptId}.a1-`);
      expect(existsSync(dir)).toBe(false);
    } finally {
      await beacon.close();
    }
    const runner = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const ok = await runner("require('node:fs').writeFileSync('scratch.txt', 'x'); console.log(process.cwd());", task, fakeContext());
    const okDir = ok.stdout.trim();
    expect(okDir).toMatch(/rollout-queue/);
    expect(existsSync(okDir)).toBe(false);
  });

  it('removes what the artifact left in its directory (nested dirs, read-only files, links) without following a link out', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'rq-outside-'));
    try {
      writeFileSync(path.join(outside, 'keep.txt'), 'kept');
      const artifact = `
        const fs = require('node:fs');
        fs.mkdirSync('a/b/c', { recursive: true });
        fs.writeFileSync('a/b/c/deep.txt', 'x');
        fs.writeFileSync('ro.txt', 'x', { mode: 0o400 });
        fs.symlinkSync(${JSON.stringify(outside)}, 'to-outside');
        fs.symlinkSync(${JSON.stringify(path.join(outside, 'keep.txt'))}, 'to-file');
        console.log(process.cwd());`;
      const out = await codeRunner({ entrypoint: 'main.js' })(artifact, task, fakeContext());
      expect(existsSync(out.stdout.trim())).toBe(false);
      expect(readFileSync(path.join(outside, 'keep.txt'), 'utf8')).toBe('kept');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

// Fresh-user report: maxOutputBytes 32 MiB under `run --memory-mb 64`. The rollout child, whose
// heap is sandbox.memoryMb, crashed holding the kept output (heap out of memory: a plane crash),
// and after two re-dispatches the lease ended `infrastructure`, though the artifact's own peak
// was 10 MB. A maxOutputBytes the child cannot report is refused before anything runs.
describe('codeRunner output against sandbox.memoryMb', () => {
  it('refuses maxOutputBytes 32 MiB under memoryMb 64 as a caller error naming both and what each would need, running nothing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-output-fit-'));
    try {
      const marker = path.join(dir, 'ran');
      const run = codeRunner({ entrypoint: 'main.js', maxOutputBytes: 33_554_432 });
      const err = await rejection(run(`require('fs').writeFileSync(${JSON.stringify(marker)}, 'x');`, task, fakeContext({ memoryMb: 64 })));
      expect(err).toBeInstanceOf(CallerError);
      expect(err.message).toBe(
        'codeRunner: config.maxOutputBytes = 33554432 (per stream) does not fit in sandbox.memoryMb = 64 MiB: the rollout child holds stdout and stderr, ' +
          'each up to maxOutputBytes, as text and again while reporting them (6 × maxOutputBytes is budgeted), besides ~16 MiB of its own; raise sandbox.memoryMb to at least 208 or lower maxOutputBytes to at most 8388608',
      );
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs at the largest maxOutputBytes that fits, with stdout and stderr both full', async () => {
    const run = codeRunner({ entrypoint: 'main.js', maxOutputBytes: 8_388_608, timeoutMs: 30_000 });
    const flood = "const fs = require('fs'); const a = Buffer.alloc(1 << 20, 97); for (let i = 0; i < 14; i++) { fs.writeSync(2, a); fs.writeSync(1, a); }";
    const output = await run(flood, task, fakeContext({ memoryMb: 64 }));
    expect(output.stdoutTruncated && output.stderrTruncated).toBe(true);
  });
});
