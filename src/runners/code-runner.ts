import { InfrastructureError, ModelError } from '../spec/errors.js';
import type { Rendered, RolloutContext, Task } from '../spec/index.js';
import { redactSecrets } from './child-env.js';
import { checkOutputFits, commandFor, compileCodeRunnerOptions, type CodeRunnerOptions, type CompiledCodeRunnerOptions } from './code-runner-options.js';
import { TAIL_BYTES, type GroupRunOutcome } from './process-group.js';
import { runContained, type ContainedRun, type ContainmentReport } from './run-contained.js';
import { artifactFiles, attemptName, BAD_RENDERED_FILE } from './work-dir.js';
import { copyWorkDir } from './work-dir-copy.js';

/** What a successful code run returns as the rollout's output (JSON data). */
export interface CodeRunOutput {
  /**
   * Stdout as UTF-8, as the program wrote it: secret values are left in, so the reward (run by
   * the worker, trusted) scores the real output (fresh-user report: `SHORT=4` and a printed 42
   * were scored as "[secret SHORT]2", reward 0). The worker replaces them by `[secret NAME]` in
   * everything it stores or logs (the Result's output, errors, rewardDetails). When it went past
   * `maxOutputBytes`: its first half of that budget, a `truncationMarker` line
   * (`[... N bytes dropped (maxOutputBytes) ...]`) and its last half, never cut inside a secret value.
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
  /**
   * CFS periods (100 ms each) in which the artifact used its whole CPU quota (`sandbox.cpus`) and
   * was held back; null where the worker has no CPU quota.
   */
  readonly cpuThrottledPeriods: number | null;
  /**
   * The containment the artifact ran under: the worker's level and the boundaries it leaves open
   * (`containmentGaps`; empty at `sealed`), so a results file says what each rollout could reach.
   */
  readonly containment: ContainmentReport;
}

/** The run function made by {@link codeRunner}. */
export type CodeRunFn = (rendered: Rendered, task: Task, ctx: RolloutContext) => Promise<CodeRunOutput>;

/**
 * Factory of the built-in code runner (`rollout-queue/runners:codeRunner`).
 *
 * The returned `run(rendered, task, ctx)` runs the artifact through `runContained`, a hostile
 * tenant (docs/security.md):
 * 1. makes the attempt's sandbox (`src/sandbox`): a fresh private directory
 *    `<os.tmpdir()>/rollout-queue/<leaseId>.<runAttemptId>.a<attempt>-p<pid>s<start>n<pidns>-<random>`
 *    (at the `sealed` level a tmpfs of `sandbox.diskMb`, seen by the program as `/work`, beside
 *    its own `/tmp` and `/dev/shm`) and, where the host allows, a cgroup limiting memory to
 *    `ctx.memoryMb` (the spec's `sandbox.memoryMb`) over the artifact's whole tree, its processes
 *    and its CPU (`sandbox.cpus`); writes the artifact there;
 * 2. runs the entrypoint there in the sandbox (the tenant view: its own loopback only unless
 *    `sandbox.network` is `host` on a worker that allows it, a private /proc, the system
 *    read-only, an unprivileged uid; its own PID namespace where the host allows, else its own
 *    process group), with the task as JSON on stdin and a clean environment (`childEnv`):
 *    `PATH`, `HOME`, `TMPDIR`, `LANG=C.UTF-8`, plus `ctx.secrets`. Nothing else of the worker's environment is passed;
 * 3. kills everything in the sandbox on `timeoutMs` or when `ctx.signal` aborts (SIGTERM,
 *    then SIGKILL after 200 ms), and whatever is left when the entrypoint exits;
 * 4. destroys the sandbox (processes, cgroup, directory), whatever the outcome.
 *
 * Outcomes: exit 0 → resolves {@link CodeRunOutput}. Over the memory limit (the kernel's
 * OOM killer killed a process of the tree; cgroup levels) → `ModelError('MemoryLimit')`
 * naming the limit and the peak. A non-zero exit or a signal with its tmpfs full →
 * `ModelError('DiskLimit')` naming `sandbox.diskMb`. Other non-zero exit or a signal →
 * `ModelError('NonZeroExit')`; own time limit → `ModelError('RunTimeout')`; a `#!` line or
 * file format the OS cannot run → `ModelError('SpawnFailed')`; all three quote the last
 * 2 KiB of stderr. `ctx.signal` abort → an error named `AbortError` whose message holds
 * `String(ctx.signal.reason)` (and `cause` is the reason). Interpreter missing on this worker, the machine out of processes,
 * memory or file descriptors, the attempt's launch server lost mid-run (`ELAUNCHER`), or
 * bubblewrap unable to set up the tenant view → `InfrastructureError`. `sandbox.network: "host"`
 * on a worker started without `--allow-network` → `CallerError` (`NetworkNotAllowed`). A bad file
 * inside `rendered.files` (a path that is empty, absolute or escapes with `..`, two paths for one
 * file, a content not text, the entrypoint missing: the model wrote it) → `ModelError('BadRenderedFile')`,
 * nothing run. A `rendered` that is not a string or `{ files }`, or a `maxOutputBytes` the rollout
 * child cannot report within `sandbox.memoryMb` (see `memoryMbForOutput`) → `CallerError`. Secret values
 * are replaced by `[secret NAME]` in every message; the returned stdout/stderr keep them (the
 * reward scores the real output) and the worker redacts them in the Result it stores.
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
    // rendered.files is the model's (a string rendered always holds the entrypoint): its fault, not the run's.
    throw new ModelError(
      BAD_RENDERED_FILE,
      `codeRunner: rendered.files has no entrypoint ${JSON.stringify(options.entrypoint)} (its files: ${listed || 'none'}); ` +
        'the artifact was not run: the rendered files must hold it, or config.entrypoint names another file',
    );
  }
  const handoff = ctx.workDirHandoff;
  const limits = { memoryMb: ctx.memoryMb, cpus: ctx.sandbox?.cpus, diskMb: ctx.sandbox?.diskMb, network: ctx.sandbox?.network };
  const run = await runContained({
    label: 'codeRunner',
    name: attemptName(ctx),
    files,
    executable: options.entrypoint,
    argv: (workDir) => commandFor(options, workDir),
    stdin: `${JSON.stringify(task)}\n`,
    secrets: ctx.secrets,
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    signal: ctx.signal,
    limits,
    // The reward asked to see what the program left (seeWorkDir): copied before the dir goes,
    // when the program succeeded (else no reward runs).
    beforeDestroy: handoff ? (dir, outcome) => void (outcome.ended === 'exited' && outcome.exitCode === 0 && (handoff.files = copyWorkDir(dir))) : undefined,
  });
  return interpret(run, options, ctx);
}

const MIB = 1024 * 1024;

function interpret(run: ContainedRun, options: CompiledCodeRunnerOptions, ctx: RolloutContext): CodeRunOutput {
  const { outcome, usage, applied } = run;
  const name = JSON.stringify(options.entrypoint);
  if (outcome.ended === 'aborted') throw abortError(ctx, options);
  if (usage.oomKills > 0 && outcome.ended === 'exited') {
    const peak = usage.peakBytes === null ? 'peak unknown' : `peak ${Math.round(usage.peakBytes / MIB)} MiB`;
    throw new ModelError(
      'MemoryLimit',
      `artifact ${name} went over its memory limit of ${applied.memoryMb ?? ctx.memoryMb} MiB (sandbox.memoryMb; ${peak} over its whole process tree): ` +
        `the kernel killed ${usage.oomKills} of its processes. ${stderrTail(outcome, ctx)}`,
    );
  }
  if (outcome.ended === 'timeout') {
    throw new ModelError(
      'RunTimeout',
      `artifact ${name} ran past codeRunner's timeoutMs of ${options.timeoutMs} ms; its process group was killed. ${stderrTail(outcome, ctx)}`,
    );
  }
  if (outcome.exitCode !== 0 && usage.diskFull) {
    throw new ModelError(
      'DiskLimit',
      `artifact ${name} failed with its disk full: its work dir, /tmp and /dev/shm hold at most sandbox.diskMb = ${applied.diskMb ?? '?'} MiB together ` +
        `(${Math.round((usage.diskUsedBytes ?? 0) / MIB)} MiB in use when it ended). ${stderrTail(outcome, ctx)}`,
    );
  }
  if (outcome.exitCode !== 0) {
    const how = outcome.exitCode === null ? `was killed by signal ${outcome.exitSignal ?? 'unknown'}` : `exited with code ${outcome.exitCode}`;
    throw new ModelError('NonZeroExit', `artifact ${name} ${how} after ${outcome.durationMs} ms. ${stderrTail(outcome, ctx)}`);
  }
  // Raw for the reward: the worker redacts the Result it stores (rollout-processor), not the reward's input.
  const stdout = outcome.stdout.keptText(ctx.secrets, { redact: false });
  const stderr = outcome.stderr.keptText(ctx.secrets, { redact: false });
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
    cpuThrottledPeriods: usage.cpuThrottledPeriods,
    containment: run.containment,
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
