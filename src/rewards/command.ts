import { CallerError, ModelError } from '../spec/errors.js';
import { withGoldKeys } from '../spec/gold-keys.js';
import { redactSecrets } from '../spec/redact-secrets.js';
import type { RewardWithDetails } from '../spec/reward-details.js';
import type { RolloutContext } from '../spec/context.js';
import type { Task } from '../spec/rollout-spec.js';
import { runContained, type ContainedRun } from '../runners/run-contained.js';
import { TAIL_BYTES } from '../runners/process-group.js';
import { attemptName } from '../runners/work-dir.js';
import { compileCommandRewardOptions, WORK_DIR_COPY, type CommandRewardOptions, type CompiledCommandRewardOptions } from './command-options.js';
import { readJudgeReply } from './command-reply.js';

/** Bytes of the judge's stdout kept: a number or a small JSON object (details are at most 8 KiB). */
const JUDGE_STDOUT_BYTES = 65_536;
const MIB = 1024 * 1024;
const NAME = 'rollout-queue/rewards:command';

/** The reward function made by {@link command}: async, reads the task, the output and `ctx`. */
export type CommandRewardFn = ((task: Task, output: unknown, ctx: RolloutContext) => Promise<number | RewardWithDetails>) & { readonly goldKeys: readonly string[]; readonly seesWorkDir?: true };

/**
 * Factory of `rollout-queue/rewards:command`: a reward computed by a program of yours, in any
 * language, contained like codeRunner's artifact (docs/runners-and-rewards.md "The command reward").
 *
 * Each call:
 * 1. makes the judge its own sandbox (`runContained`, the same hostile-tenant containment as
 *    codeRunner's program at the worker's level: its own loopback only unless the spec's
 *    `sandbox.network` is `host` on a worker that allows it, a private /proc, the system
 *    read-only, a fresh directory of its own, a cgroup), named `<lease>.<runAttempt>.a<n>.reward`,
 *    and writes `files` there. The run's program is gone by then (its sandbox was destroyed
 *    when it exited), and never saw these files;
 * 2. runs `command` there with `{"task": <the whole task, gold included>, "output": <the run's
 *    output>}` as JSON on stdin, a clean environment (PATH with the worker's interpreters first,
 *    so a judge imports the worker's installed Python packages; the spec's secrets), memory
 *    `memoryMb` (default the spec's `sandbox.memoryMb`) and its own `timeoutMs`;
 * 3. reads stdout: a number, or `{"reward": r, "details": {...}}` (details kept on the Result as
 *    `rewardDetails`, at most 8192 bytes).
 *
 * With `seeWorkDir`, the judge's directory also holds, under `artifact/`, a copy of the files the
 * run's program left in its work dir (codeRunner copies them, at most 1000 files and 16 MiB,
 * before its sandbox goes; past that the run ends `model` / `WorkDirTooLarge`).
 *
 * Outcomes (Result kinds through the worker's reward rules): the judge exits non-zero or is
 * killed → `model`, `RewardThrew:NonZeroExit` (its stderr tail quoted); past `timeoutMs` →
 * `model`, `RewardTimeout`; over its memory → `model`, `RewardThrew:MemoryLimit`; prints no
 * number, or one outside the spec's `rewardRange` → `caller`, `RewardOutOfRange`; `memoryMb`
 * above the spec's `sandbox.memoryMb` → `caller`; the program or its interpreter missing on
 * the worker → `infrastructure` (re-dispatched). Secret values are replaced by `[secret NAME]`
 * in every message.
 *
 * The task keys in `goldKeys` (default `["answer"]`) are removed from what the run receives.
 *
 * @throws CallerError at factory time for a bad option, naming the field and the fix.
 */
export function command(options: CommandRewardOptions): CommandRewardFn {
  const compiled = compileCommandRewardOptions(options);
  // Declared, so the worker keeps the judge's gold from the run (docs/gold.md).
  const fn = withGoldKeys((task: Task, output: unknown, ctx: RolloutContext) => judge(compiled, task, output, ctx), compiled.goldKeys);
  // Read by the worker: with it, the run hands over a copy of its work dir (ctx.workDirHandoff).
  if (compiled.seeWorkDir) Object.defineProperty(fn, 'seesWorkDir', { value: true, enumerable: true });
  return fn;
}

/** The judge's files: the shipped ones, and with seeWorkDir the run's under `artifact/`. */
function judgeFiles(options: CompiledCommandRewardOptions, ctx: RolloutContext): ReadonlyMap<string, string | Uint8Array> {
  const runFiles = options.seeWorkDir ? ctx.workDirHandoff?.files : undefined;
  if (!runFiles) return options.files;
  const files = new Map<string, string | Uint8Array>(options.files);
  for (const [rel, bytes] of runFiles) files.set(`${WORK_DIR_COPY}/${rel}`, bytes);
  return files;
}

async function judge(options: CompiledCommandRewardOptions, task: Task, output: unknown, ctx: RolloutContext): Promise<number | RewardWithDetails> {
  if (ctx.signal.aborted) throw abortError(ctx);
  const memoryMb = options.memoryMb ?? ctx.memoryMb;
  if (memoryMb > ctx.memoryMb) {
    throw new CallerError(`command: config.memoryMb = ${memoryMb} MiB is above the rollout's sandbox.memoryMb = ${ctx.memoryMb} MiB; a reward runs inside its rollout's limits: lower config.memoryMb or raise sandbox.memoryMb`);
  }
  const run = await runContained({
    label: NAME,
    name: `${attemptName(ctx)}.reward`,
    files: judgeFiles(options, ctx),
    executable: options.programFile,
    argv: (workDir) => (options.programFile ? [`${workDir}/${options.programFile}`, ...options.command.slice(1)] : options.command),
    stdin: `${JSON.stringify({ task, output })}\n`,
    secrets: ctx.secrets,
    timeoutMs: options.timeoutMs,
    maxOutputBytes: JUDGE_STDOUT_BYTES,
    signal: ctx.signal,
    limits: { memoryMb, cpus: ctx.sandbox?.cpus, diskMb: ctx.sandbox?.diskMb, network: ctx.sandbox?.network },
  });
  return interpret(run, options, ctx, memoryMb);
}

function interpret(run: ContainedRun, options: CompiledCommandRewardOptions, ctx: RolloutContext, memoryMb: number): number | RewardWithDetails {
  const { outcome, usage, applied } = run;
  const program = JSON.stringify(options.command.join(' ').slice(0, 200));
  if (outcome.ended === 'aborted') throw abortError(ctx);
  if (outcome.ended === 'timeout') {
    throw new ModelError('RewardTimeout', `the judge ${program} ran past config.timeoutMs = ${options.timeoutMs} ms; its process tree was killed. ${stderrTail(run, ctx)}`);
  }
  if (usage.oomKills > 0) {
    const peak = usage.peakBytes === null ? 'peak unknown' : `peak ${Math.round(usage.peakBytes / MIB)} MiB`;
    throw new ModelError('MemoryLimit', `the judge ${program} went over its memory limit of ${applied.memoryMb ?? memoryMb} MiB (${peak}): the kernel killed ${usage.oomKills} of its processes. ${stderrTail(run, ctx)}`);
  }
  if (outcome.exitCode !== 0) {
    const how = outcome.exitCode === null ? `was killed by signal ${outcome.exitSignal ?? 'unknown'}` : `exited with code ${outcome.exitCode}`;
    throw new ModelError('NonZeroExit', `the judge ${program} ${how} after ${outcome.durationMs} ms. ${stderrTail(run, ctx)}`);
  }
  const stdout = outcome.stdout.keptText(ctx.secrets);
  if (stdout.truncated) {
    throw Object.assign(new CallerError(`the judge ${program} printed ${outcome.stdout.totalBytes} bytes on stdout, more than ${JUDGE_STDOUT_BYTES}; print only the reward (a number or {"reward": r, "details": {...}}) and write logs to stderr`), { type: 'RewardOutOfRange' });
  }
  return readJudgeReply(stdout.text);
}

function stderrTail(run: ContainedRun, ctx: RolloutContext): string {
  // Redact before cutting, so a secret that straddles the cut is replaced whole.
  const redacted = redactSecrets(run.outcome.stderr.tailText(), ctx.secrets);
  const tail = redacted.length > TAIL_BYTES ? redacted.slice(redacted.length - TAIL_BYTES) : redacted;
  return tail.trim().length === 0 ? 'Its stderr was empty.' : `stderr:\n${tail}`;
}

function abortError(ctx: RolloutContext): Error {
  const err = new Error(`${NAME} stopped the judge: ctx.signal aborted (${redactSecrets(String(ctx.signal.reason), ctx.secrets)})`, { cause: ctx.signal.reason });
  err.name = 'AbortError';
  return err;
}
