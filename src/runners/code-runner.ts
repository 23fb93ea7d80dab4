import path from 'node:path';
import { InfrastructureError, ModelError } from '../spec/errors.js';
import type { Rendered, RolloutContext, Task } from '../spec/index.js';
import { childEnv, redactSecrets } from './child-env.js';
import { checkOutputFits, commandFor, compileCodeRunnerOptions, type CodeRunnerOptions, type CompiledCodeRunnerOptions } from './code-runner-options.js';
import { Sandbox, type SandboxUsage } from '../sandbox/index.js';
import { runProcessGroup, TAIL_BYTES, type GroupRunOutcome } from './process-group.js';
import { artifactFiles, attemptName, writeArtifact } from './work-dir.js';

/** What a successful code run returns as the rollout's output (JSON data). */
export interface CodeRunOutput {
  /**
   * Stdout as UTF-8, secret values replaced by `[secret NAME]`. When it went past
   * `maxOutputBytes`: its first half of that budget, a `truncationMarker` line
   * (`[... N bytes dropped (maxOutputBytes) ...]`) and its last half.
   */
  readonly stdout: string;
  /** Stderr, kept the same way as stdout. */
  readonly stderr: string;
  /** Always 0: any other exit throws `ModelError('NonZeroExit')`. */
  readonly exitCode: 0;
  /** From spawn to exit, in ms. */
  readonly durationMs: number;
  /** True when stdout went past `maxOutputBytes` and its middle was dropped. */
  readonly stdoutTruncated: boolean;
  /** True when stderr went past `maxOutputBytes` and its middle was dropped. */
  readonly stderrTruncated: boolean;
  /**
   * Peak memory of the artifact's whole process tree, bytes: what its cgroup was charged
   * (resident memory plus page cache). Null where the worker has no cgroup to measure it.
   */
  readonly peakRssBytes: number | null;
  /** Bytes of stdout dropped between the kept head and tail (0 when not truncated). */
  readonly stdoutDroppedBytes: number;
  /** Bytes of stderr dropped between the kept head and tail (0 when not truncated). */
  readonly stderrDroppedBytes: number;
}

/** The run function made by {@link codeRunner}. */
export type CodeRunFn = (rendered: Rendered, task: Task, ctx: RolloutContext) => Promise<CodeRunOutput>;

/** Spawn errors that say the machine is short of something: the plane's problem, never the artifact's. */
const RESOURCE_ERRORS: ReadonlySet<string> = new Set(['EAGAIN', 'ENOMEM', 'EMFILE', 'ENFILE', 'ENOSPC']);

/**
 * Factory of the built-in code runner (`rollout-queue/runners:codeRunner`).
 *
 * The returned `run(rendered, task, ctx)`:
 * 1. makes the attempt's sandbox (`src/sandbox`): a fresh private directory
 *    `<os.tmpdir()>/rollout-queue/<leaseId>.<runAttemptId>.a<attempt>-p<pid>s<start>n<pidns>-<random>`
 *    and, where the host allows, a cgroup limiting memory to `ctx.memoryMb` (the spec's
 *    `sandbox.memoryMb`) over the artifact's whole tree; writes the artifact there;
 * 2. runs the entrypoint there in the sandbox (its own PID namespace where the host allows,
 *    else its own process group), with the task as JSON on stdin and a clean environment:
 *    `PATH` (the worker's), `HOME` and `TMPDIR` (the work directory), `LANG=C.UTF-8`, plus
 *    `ctx.secrets`. Nothing else of the worker's environment is passed;
 * 3. kills everything in the sandbox on `timeoutMs` or when `ctx.signal` aborts (SIGTERM,
 *    then SIGKILL after 200 ms), and whatever is left when the entrypoint exits;
 * 4. destroys the sandbox (processes, cgroup, directory), whatever the outcome.
 *
 * Outcomes: exit 0 → resolves {@link CodeRunOutput}. Over the memory limit (the kernel's
 * OOM killer killed a process of the tree; cgroup levels) → `ModelError('MemoryLimit')`
 * naming the limit and the peak. Non-zero exit or a signal →
 * `ModelError('NonZeroExit')`; own time limit → `ModelError('RunTimeout')`; a `#!` line or
 * file format the OS cannot run → `ModelError('SpawnFailed')`; all three quote the last
 * 2 KiB of stderr. `ctx.signal` abort → an error named `AbortError` whose message holds
 * `String(ctx.signal.reason)` (and `cause` is the reason). Entrypoint not among the
 * artifact's files, interpreter missing on this worker, the machine out of processes,
 * memory or file descriptors, or the attempt's launch server lost mid-run (`ELAUNCHER`) →
 * `InfrastructureError`. A bad `rendered` (not a string or
 * `{ files }`, a path that is absolute or escapes with `..`), or a `maxOutputBytes` the rollout
 * child cannot report within `sandbox.memoryMb` (see `memoryMbForOutput`) → `CallerError`. Secret values
 * are replaced by `[secret NAME]` in every message and in the returned stdout/stderr (a value
 * split across two writes included).
 *
 * @param options See {@link CodeRunnerOptions}.
 * @throws CallerError at factory time for a bad option, naming the field and the fix.
 */
export function codeRunner(options: CodeRunnerOptions): CodeRunFn {
  const compiled = compileCodeRunnerOptions(options);
  return (rendered, task, ctx) => runCode(compiled, rendered, task, ctx);
}

async function runCode(
  options: CompiledCodeRunnerOptions,
  rendered: Rendered,
  task: Task,
  ctx: RolloutContext,
): Promise<CodeRunOutput> {
  throwIfAborted(ctx, options);
  checkOutputFits(options.maxOutputBytes, ctx.memoryMb);
  for (const [name, value] of Object.entries(ctx.secrets)) {
    // spawn would refuse it with a message that quotes the value (escaped, so redaction would miss it).
    if (value.includes('\0')) throw new InfrastructureError(`codeRunner: secret ${name} holds a NUL byte on this worker and cannot be passed in an environment; fix its value`);
  }
  const files = artifactFiles(rendered, options.entrypoint);
  if (!files.has(options.entrypoint)) {
    const listed = [...files.keys()].slice(0, 10).map((file) => JSON.stringify(file)).join(', ');
    throw new InfrastructureError(
      `codeRunner: the artifact has no entrypoint ${JSON.stringify(options.entrypoint)} (its files: ${listed || 'none'}); ` +
        'the rendered artifact did not arrive whole, or config.entrypoint names another file',
    );
  }
  let sandbox: Sandbox;
  try {
    sandbox = await Sandbox.create({ name: attemptName(ctx), memoryMb: ctx.memoryMb });
  } catch (err) {
    throw new InfrastructureError(`codeRunner: could not create the attempt's sandbox (work directory, cgroup): ${errorText(err)}`, { cause: err });
  }
  const dir = sandbox.dir;
  try {
    try {
      writeArtifact(dir, files, options.entrypoint);
    } catch (err) {
      throw new InfrastructureError(`codeRunner: could not write the artifact to ${dir}: ${errorText(err)}`, { cause: err });
    }
    throwIfAborted(ctx, options);
    const argv = commandFor(options, dir);
    let outcome: GroupRunOutcome;
    try {
      outcome = await runProcessGroup({
        argv,
        cwd: dir,
        env: childEnv(dir, ctx.secrets),
        stdin: `${JSON.stringify(task)}\n`,
        timeoutMs: options.timeoutMs,
        maxOutputBytes: options.maxOutputBytes,
        signal: ctx.signal,
        sandbox,
      });
    } catch (err) {
      throw spawnFailure(err, argv, dir, ctx);
    }
    return interpret(outcome, options, ctx, sandbox.usage(), sandbox.memoryLimitMb);
  } finally {
    await sandbox.destroy();
  }
}

const MIB = 1024 * 1024;

function interpret(outcome: GroupRunOutcome, options: CompiledCodeRunnerOptions, ctx: RolloutContext, usage: SandboxUsage, limitMb: number | undefined): CodeRunOutput {
  const name = JSON.stringify(options.entrypoint);
  if (outcome.ended === 'aborted') throw abortError(ctx, options);
  if (usage.oomKills > 0 && outcome.ended === 'exited') {
    const peak = usage.peakBytes === null ? 'peak unknown' : `peak ${Math.round(usage.peakBytes / MIB)} MiB`;
    throw new ModelError(
      'MemoryLimit',
      `artifact ${name} went over its memory limit of ${limitMb ?? ctx.memoryMb} MiB (sandbox.memoryMb; ${peak} over its whole process tree): ` +
        `the kernel killed ${usage.oomKills} of its processes. ${stderrTail(outcome, ctx)}`,
    );
  }
  if (outcome.ended === 'timeout') {
    throw new ModelError(
      'RunTimeout',
      `artifact ${name} ran past codeRunner's timeoutMs of ${options.timeoutMs} ms; its process group was killed. ${stderrTail(outcome, ctx)}`,
    );
  }
  if (outcome.exitCode !== 0) {
    const how = outcome.exitCode === null ? `was killed by signal ${outcome.exitSignal ?? 'unknown'}` : `exited with code ${outcome.exitCode}`;
    throw new ModelError('NonZeroExit', `artifact ${name} ${how} after ${outcome.durationMs} ms. ${stderrTail(outcome, ctx)}`);
  }
  const stdout = outcome.stdout.keptText(ctx.secrets);
  const stderr = outcome.stderr.keptText(ctx.secrets);
  return {
    stdout: stdout.text,
    stderr: stderr.text,
    exitCode: 0,
    durationMs: outcome.durationMs,
    stdoutTruncated: stdout.truncated,
    stderrTruncated: stderr.truncated,
    stdoutDroppedBytes: stdout.droppedBytes,
    stderrDroppedBytes: stderr.droppedBytes,
    peakRssBytes: usage.peakBytes,
  };
}

function stderrTail(outcome: GroupRunOutcome, ctx: RolloutContext): string {
  // Redact before cutting, so a secret that straddles the cut is replaced whole.
  const redacted = redactSecrets(outcome.stderr.tailText(), ctx.secrets);
  const tail = redacted.length > TAIL_BYTES ? redacted.slice(redacted.length - TAIL_BYTES) : redacted;
  if (tail.trim().length === 0) return 'Its stderr was empty.';
  const cut = outcome.stderr.totalBytes > TAIL_BYTES ? ` (last ${TAIL_BYTES} characters of ${outcome.stderr.totalBytes} bytes)` : '';
  return `stderr${cut}:\n${tail}`;
}

function throwIfAborted(ctx: RolloutContext, options: CompiledCodeRunnerOptions): void {
  if (ctx.signal.aborted) throw abortError(ctx, options);
}

function abortError(ctx: RolloutContext, options: CompiledCodeRunnerOptions): Error {
  const reason = redactSecrets(String(ctx.signal.reason), ctx.secrets);
  const err = new Error(`codeRunner stopped artifact ${JSON.stringify(options.entrypoint)}: ctx.signal aborted (${reason})`, {
    cause: ctx.signal.reason,
  });
  err.name = 'AbortError';
  return err;
}

function spawnFailure(err: unknown, argv: readonly string[], dir: string, ctx: RolloutContext): Error {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
  const program = argv[0] ?? '';
  const detail = redactSecrets(errorText(err), ctx.secrets);
  if (code === 'ELAUNCHER') {
    // The attempt had started: its launch server died under it (see sandbox/launch-server.ts).
    return new InfrastructureError(`codeRunner: lost the attempt running ${JSON.stringify(program)} (ELAUNCHER): ${detail}`, { cause: err });
  }
  const inArtifact = program.includes('/') && path.resolve(dir, program).startsWith(`${dir}${path.sep}`);
  if (inArtifact && !RESOURCE_ERRORS.has(code)) {
    return new ModelError(
      'SpawnFailed',
      `artifact ${JSON.stringify(path.relative(dir, path.resolve(dir, program)))} could not be executed (${code}): ${detail}; ` +
        'a script needs a "#!" line naming an interpreter installed on the worker',
      { cause: err },
    );
  }
  return new InfrastructureError(`codeRunner: could not start ${JSON.stringify(program)} (${code}) on this worker: ${detail}`, { cause: err });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
