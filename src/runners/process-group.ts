import { performance } from 'node:perf_hooks';
import type { AttemptProcess, Sandbox } from '../sandbox/index.js';
import { OutputCapture } from './output-capture.js';

/** Time a process group gets between SIGTERM and SIGKILL, in ms. */
export const KILL_GRACE_MS = 200;

/**
 * Longest wait, in ms, for the output pipes to close after the group leader exited and the
 * group was killed. Only a process that left the group (setsid) can hold them longer; its
 * output is then cut off.
 */
export const CLOSE_GUARD_MS = 1000;

/** Bytes of stderr's tail quoted in error messages. */
export const TAIL_BYTES = 2048;

/**
 * Bytes kept before the quoted tail, so a secret that straddles the tail's start can be
 * redacted whole before the tail is cut (a secret up to this long never leaks a piece).
 */
export const TAIL_MARGIN_BYTES = 2048;

/** What {@link runProcessGroup} starts. */
export interface GroupRunRequest {
  /** Program and arguments; the program is looked up on `env.PATH` unless it holds a `/`. */
  readonly argv: readonly [string, ...string[]];
  /** Working directory of the child. */
  readonly cwd: string;
  /** The child's whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Written to the child's stdin, which is then closed. */
  readonly stdin: string;
  /** Wall-clock limit from spawn, in ms; past it the group is killed and `ended` is "timeout". */
  readonly timeoutMs: number;
  /** Bytes kept of each of stdout and stderr (the head). */
  readonly maxOutputBytes: number;
  /** On abort the group is killed and `ended` is "aborted". */
  readonly signal: AbortSignal;
  /** The attempt's containment unit: the program runs inside it, and it is what gets killed. */
  readonly sandbox: Sandbox;
}

/** How a process group run ended. */
export interface GroupRunOutcome {
  /** "exited": on its own; "timeout": killed at `timeoutMs`; "aborted": killed because `signal` aborted. */
  readonly ended: 'exited' | 'timeout' | 'aborted';
  /** Exit code of the group leader, or null when a signal ended it. */
  readonly exitCode: number | null;
  /** Signal that ended the group leader, or null. */
  readonly exitSignal: NodeJS.Signals | null;
  readonly stdout: OutputCapture;
  readonly stderr: OutputCapture;
  /** From spawn to the leader's exit, in ms. */
  readonly durationMs: number;
}

/**
 * Runs `argv` inside `request.sandbox` (the leader of a new process group, in the attempt's
 * PID namespace and cgroup where the host allows), feeds it `stdin`, captures its output, and
 * kills **everything in the sandbox** (SIGTERM, then SIGKILL after {@link KILL_GRACE_MS}) on
 * its time limit or on abort. When the leader exits on its own, whatever it left behind is
 * killed with SIGKILL (at a namespace level the kernel has already done so), so nothing
 * outlives a run. A signal death is reported as the signal at every level.
 *
 * Resolves once the leader has exited and its output pipes have closed (or
 * {@link CLOSE_GUARD_MS} passed). Rejects only when the program could not be started
 * (the error carries node's `code`, e.g. ENOENT, EACCES, EAGAIN).
 */
export function runProcessGroup(request: GroupRunRequest): Promise<GroupRunOutcome> {
  return new Promise<GroupRunOutcome>((resolve, reject) => {
    const [program, ...args] = request.argv;
    const stdout = new OutputCapture(request.maxOutputBytes, 0);
    const stderr = new OutputCapture(request.maxOutputBytes, TAIL_BYTES + TAIL_MARGIN_BYTES);
    const startedAt = performance.now();
    let child: AttemptProcess;
    try {
      child = request.sandbox.spawn([program, ...args], { cwd: request.cwd, env: request.env });
    } catch (err) {
      reject(err);
      return;
    }

    let spawned = false;
    let ended: GroupRunOutcome['ended'] = 'exited';
    let exit: { code: number | null; signal: NodeJS.Signals | null; durationMs: number } | undefined;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let closeGuard: NodeJS.Timeout | undefined;

    const killGroup = (sig: 'SIGTERM' | 'SIGKILL'): void => {
      if (spawned) request.sandbox.signal(sig);
    };
    const stop = (why: 'timeout' | 'aborted'): void => {
      if (exit !== undefined || ended !== 'exited') return;
      ended = why;
      killGroup('SIGTERM');
      graceTimer = setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
    };
    const runTimer = setTimeout(() => stop('timeout'), request.timeoutMs);
    const onAbort = (): void => stop('aborted');
    request.signal.addEventListener('abort', onAbort, { once: true });

    const cleanup = (): void => {
      clearTimeout(runTimer);
      clearTimeout(graceTimer);
      clearTimeout(closeGuard);
      request.signal.removeEventListener('abort', onAbort);
    };
    const finish = (): void => {
      if (settled || exit === undefined) return;
      settled = true;
      cleanup();
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({ ended, exitCode: exit.code, exitSignal: exit.signal, stdout, stderr, durationMs: exit.durationMs });
    };

    child.once('error', (err: Error) => {
      // Not started (no 'spawn'), or a launch server lost mid-run: either way no outcome of the
      // program's own. Kills go through process.kill, never child.kill, so nothing else errors.
      if (settled) return;
      settled = true;
      cleanup();
      if (spawned) request.sandbox.signal('SIGKILL');
      reject(err);
    });
    // The stdio streams and the pid are there once it has started (at once for a spawned
    // launcher; after the launch server's reply for a served attempt).
    child.once('spawn', () => {
      spawned = true;
      child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
      // EPIPE when the program exits without reading its stdin: not an error of the run.
      child.stdin?.on('error', () => {});
      child.stdin?.end(request.stdin);
      // Stopped (time limit, abort) before it had started: nothing was signalled yet.
      if (ended !== 'exited') killGroup('SIGKILL');
    });
    child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      exit = { ...request.sandbox.exitStatus(code, signal), durationMs: Math.round(performance.now() - startedAt) };
      clearTimeout(runTimer);
      clearTimeout(graceTimer);
      killGroup('SIGKILL'); // whatever the leader left behind in its group
      closeGuard = setTimeout(finish, CLOSE_GUARD_MS);
    });
    child.once('close', finish);

    if (request.signal.aborted) onAbort();
  });
}
