/**
 * Entry point of a rollout child process, forked by the worker's child pool. It resolves
 * Refs against its own installed code (under the allowlist), runs `run` then `reward`,
 * classifies the outcome and reports it over IPC. It never talks to Redis, so a crash here
 * loses no state: the worker's main process sees the exit and re-dispatches the lease.
 */
import { Allowlist, resolveRefJson } from '../ref/index.js';
import { destroyLiveSandboxes, destroyLiveSandboxesSync, killSubtree, liveSandboxCount, useContainment, watchSpawns } from '../sandbox/index.js';
import type { CostReceipt, RolloutContext, RolloutLogger, RunFn, RewardFn } from '../spec/index.js';
import { checkCostReceipt } from '../spec/cost-receipt-check.js';
import { findJsonDataIssue, type JsonDataIssue } from '../spec/json-data.js';
import { redactSecrets, redactSecretsDeep, type SecretValues } from '../spec/redact-secrets.js';
import { rolloutResidentBytes } from './child-rss.js';
import { classifyError } from './classify.js';
import { RolloutAbort, RolloutAborted } from './rollout-abort.js';
import { StageTimer } from './stage-timer.js';
import { taskForRun, type RunView } from './task-for-run.js';
import type { ChildMessage, DoneMessage, ParentMessage, RunMessage } from './child-protocol.js';
import { STAGE_BOARD_FD, writeRewardStage } from './stage-board.js';

// Before any rollout code is loaded: its spawns are then seen without a syscall (spawn-watch.ts).
watchSpawns();

/** The worker's allowlist, compiled once (the worker compiled it at its start, so it compiles here too). */
let allow = Allowlist.compile([]);
/** The worker's `maxOutputBytes` (set by init). */
let maxOutputBytes = Number.POSITIVE_INFINITY;
let current: RolloutAbort | undefined;
let costSeq = 0;
/** Rollouts received, numbered as the worker numbers them on the stage board. */
let rolloutSeq = 0;
/**
 * A write to the stage board failed (rollout code closed fd 4): the worker can no longer time
 * a blocked reward by its own limit, so this child is recycled after the rollout.
 */
let boardLost = false;
/** The running rollout's limits: `timeouts.runMs` from its start, `timeouts.rewardMs` from its reward's. */
const runLimit = new StageTimer();
const rewardLimit = new StageTimer();
/** Receipts sent and not yet reported stored by the worker, by seq. */
const costWaiters = new Map<number, () => void>();

function send(message: ChildMessage): void {
  process.send?.(message);
}

function logger(secrets: SecretValues): RolloutLogger {
  // Rollout code may log a secret it was given: redact before the line leaves this process.
  const emit = (level: 'debug' | 'info' | 'warn' | 'error') => (obj: object | string, msg?: string) =>
    send(
      typeof obj === 'string'
        ? { type: 'log', level, obj: {}, msg: redactSecrets(obj, secrets) }
        : { type: 'log', level, obj: redactSecretsDeep(toJsonData(obj), secrets) as Record<string, unknown>, ...(msg ? { msg: redactSecrets(msg, secrets) } : {}) },
    );
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

type Stage = 'resolve' | 'run' | 'reward';

/** The `model` error of a stage that ran past its limit (the worker's outside kill says the same). */
function timeoutError(spec: RunMessage['spec'], stage: Stage, limit: 'runMs' | 'rewardMs'): { type: string; message: string } {
  const { runMs, rewardMs } = spec.timeouts;
  if (stage !== 'reward') return { type: 'RunTimeout', message: `${stage} did not finish within timeouts.runMs = ${runMs} ms` };
  return {
    type: 'RewardTimeout',
    message: limit === 'rewardMs'
      ? `reward ${spec.reward.$ref} did not finish within timeouts.rewardMs = ${rewardMs} ms`
      : `reward ${spec.reward.$ref} did not finish within what was left of timeouts.runMs = ${runMs} ms (run and reward share it)`,
  };
}

/** The last Ref resolved for one role (run or reward): its JSON text and its function. */
interface LastRef {
  text: string | undefined;
  fn: unknown;
}
const lastRun: LastRef = { text: undefined, fn: undefined };
const lastReward: LastRef = { text: undefined, fn: undefined };

/**
 * The function of `ref`, as `resolveRefJson` gives it for its JSON text (the worker sent exactly
 * that Ref). A run's rollouts almost always carry the same two Refs: the text equal to the last
 * one resolved for the role gets its function back without the resolver's cache (its keys are
 * new strings to hash on every rollout) or an await. Only a resolved function is remembered.
 */
function resolved(ref: unknown, last: LastRef): unknown {
  const text = JSON.stringify(ref);
  if (text === last.text) return last.fn;
  return resolveRefJson(text, { allow }).then((fn) => {
    last.text = text;
    last.fn = fn;
    return fn;
  });
}

/**
 * What a stage returned, settled: a promise (or thenable) is raced against the rollout's abort
 * (`RolloutAbort.race`); a plain value is the stage's value as it is (nothing could abort the
 * stage while it ran synchronously), unless the rollout was aborted before it began.
 */
function settled(abort: RolloutAbort, value: unknown): unknown {
  if (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function') {
    return abort.race(Promise.resolve(value));
  }
  if (abort.reason) throw abort.reason;
  return value;
}

async function runOne(message: RunMessage, seq: number): Promise<DoneMessage> {
  const { spec } = message;
  const abort = new RolloutAbort();
  current = abort;
  const startedAt = Date.now();
  runLimit.arm(spec.timeouts.runMs, () => abort.abort(new RolloutAborted('run-timeout')));
  // The message was parsed from the IPC channel for this rollout alone: its objects are frozen in
  // place rather than copied.
  let log: RolloutLogger | undefined;
  // Set once both Refs are resolved (taskForRun): the task the run sees, without the gold.
  let runView: RunView | undefined;
  const ctx: RolloutContext = {
    leaseId: spec.leaseId,
    runId: spec.runId,
    runAttemptId: spec.runAttemptId,
    taskId: message.taskId,
    attempt: message.attempt,
    get signal() {
      return abort.signal;
    },
    secrets: Object.freeze(message.secrets),
    placement: Object.freeze(spec.placement),
    traceparent: spec.traceparent,
    timeouts: Object.freeze(spec.timeouts),
    memoryMb: spec.sandbox.memoryMb,
    get goldKeys() {
      return runView?.goldKeys ?? [];
    },
    // Made when rollout code first logs: most rollouts never do.
    get log() {
      return (log ??= logger(message.secrets));
    },
    recordCost(receipt: CostReceipt): Promise<void> {
      const seq = ++costSeq;
      const stored = new Promise<void>((resolve) => costWaiters.set(seq, resolve));
      send({ type: 'cost', receipt: checkCostReceipt(receipt), seq });
      return stored;
    },
  };
  const done = (partial: Omit<DoneMessage, 'type' | 'rssBytes' | 'recycle'>, recycle = false): DoneMessage => ({
    type: 'done',
    ...partial,
    recycle: recycle || boardLost,
    rssBytes: rolloutResidentBytes(),
  });
  let stage: Stage = 'resolve';
  let output: unknown;
  try {
    try {
      // The spec came over the JSON IPC channel: its JSON text is exactly the Ref the worker
      // sent, and a text resolved before skips the checks (see resolveRefJson).
      const run = (await resolved(spec.run, lastRun)) as RunFn;
      const reward = (await resolved(spec.reward, lastReward)) as RewardFn;
      // The gold stays with the reward: the run gets the task without the keys it scores against.
      runView = taskForRun(spec, reward);
      stage = 'run';
      // Called here, not from a `.then` callback: a synchronous throw lands in the catch below all
      // the same, and with the stage started from `Promise.resolve().then(...)` the child's heap
      // grew by ~2 MB at every young-generation collection (survivors promoted, freed only by full
      // GCs; measured on Node 20), which cost every rollout CPU.
      const returned = await settled(abort, run(spec.rendered, runView.task, ctx));
      const stored = storedOutput(returned);
      if ('issue' in stored) {
        // Nothing to score: what would be stored is not what the run returned (fresh-user
        // report: a BigInt or a cycle was stored as "[object Object]" with reward 1).
        const { path, message } = stored.issue;
        return done({ kind: 'model', output: null, reward: null, error: { type: 'OutputNotJson', message: `the run returned output that is not JSON data, at ${path}: ${message}; return strings, finite numbers, booleans, null, arrays and plain objects` } });
      }
      if (jsonTextOver(stored.value, maxOutputBytes)) {
        // Before the reward: a huge output was blamed on it (its JSON text was being written
        // when timeouts.rewardMs ran out), and a Result is stored in Redis and held by the coordinator.
        return done({ kind: 'model', output: null, reward: null, error: { type: 'OutputTooLarge', message: `the run returned output whose JSON text is over the worker's maxOutputBytes = ${maxOutputBytes} bytes; return a summary and keep large data elsewhere (a file, object storage), or raise maxOutputBytes (worker --max-output-bytes)` } });
      }
      // The reward scores what is stored.
      output = stored.value;
      stage = 'reward';
      // On the board before the reward starts: a reward that blocks this event loop can only
      // be stopped (and named) from outside, by the worker reading it.
      const rewardAt = Date.now();
      try {
        writeRewardStage(STAGE_BOARD_FD, seq, rewardAt);
      } catch {
        boardLost = true;
      }
      const leftMs = startedAt + spec.timeouts.runMs - rewardAt;
      if (spec.timeouts.rewardMs < leftMs) rewardLimit.arm(spec.timeouts.rewardMs, () => abort.abort(new RolloutAborted('reward-timeout')));
      const value = await settled(abort, reward(spec.task, output, ctx));
      const [lo, hi] = spec.rewardRange;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < lo || value > hi) {
        return done({
          kind: 'caller',
          output,
          reward: null,
          error: {
            type: 'RewardOutOfRange',
            message: `reward ${spec.reward.$ref} returned ${typeof value === 'number' ? String(value) : typeof value}; it must be a finite number in rewardRange [${lo}, ${hi}]; fix the reward or widen the spec's rewardRange`,
          },
        });
      }
      return done({ kind: 'ok', output, reward: value, error: null });
    } catch (err) {
      const kept = stage === 'reward' ? output : null;
      if (abort.reason) {
        const { reason } = abort.reason;
        if (reason === 'run-timeout' || reason === 'reward-timeout') {
          return done({ kind: 'model', output: kept, reward: null, error: timeoutError(spec, stage, reason === 'reward-timeout' ? 'rewardMs' : 'runMs') }, true);
        }
        if (reason === 'cancelled') {
          return done({ kind: 'caller', output: null, reward: null, error: { type: 'Cancelled', message: 'the run was cancelled while this rollout was running' } }, true);
        }
        return done({ kind: 'infrastructure', output: null, reward: null, error: { type: 'Aborted', message: `rollout aborted by the worker: ${reason}` } }, true);
      }
      const classified = classifyError(err);
      if (stage === 'reward' && classified.kind === 'model') {
        // Executor contract: a reward that throws on this output is evidence about the output
        // (model), not a broken caller contract; only CallerError/RefError, out-of-range
        // rewards and bad specs stop a run. Transient failures (infrastructure) are re-dispatched.
        return done({ kind: 'model', output: kept, reward: null, error: { type: `RewardThrew:${classified.error.type}`, message: `reward ${spec.reward.$ref} threw: ${classified.error.message}` } });
      }
      return done({ kind: classified.kind, output: kept, reward: null, error: { ...classified.error, message: stage === 'resolve' ? classified.error.message : `${stage}: ${classified.error.message}` } });
    }
  } finally {
    runLimit.disarm();
    rewardLimit.disarm();
    current = undefined;
  }
}

/** Deepest nesting of a run's output (deeper than a config or task may be: a parse tree, say). */
const MAX_OUTPUT_DEPTH = 512;

/**
 * A run's output as it is stored (in Redis, the results file) and scored: plain JSON data as it
 * is (the IPC channel serializes it once anyway, and a copy made here held a codeRunner's kept
 * stdout and stderr twice more on the child's heap, which `sandbox.memoryMb` bounds); `undefined`
 * as null; a value whose JSON form `JSON.stringify` writes faithfully (a Date, an `undefined`
 * field) as that form. Anything JSON would lose or refuse (a BigInt, a cycle, a function, NaN, a
 * Map or another class instance) is an issue naming its path.
 */
function storedOutput(output: unknown): { readonly value: unknown } | { readonly issue: JsonDataIssue } {
  if (output === undefined) return { value: null };
  // One walk for plain data (nearly every output); a second only for the rest.
  if (findJsonDataIssue(output, 'output', { scalarArraysOnly: false, jsonForm: false, maxDepth: MAX_OUTPUT_DEPTH }) === undefined) return { value: output };
  const issue = findJsonDataIssue(output, 'output', { scalarArraysOnly: false, jsonForm: true, maxDepth: MAX_OUTPUT_DEPTH });
  let text: string;
  try {
    text = JSON.stringify(output);
  } catch (error) {
    // A cycle runs the walk to its depth limit, a path 512 steps long: V8's message names where
    // it closes instead ("property 'self' closes the circle").
    if (issue && !issue.message.startsWith('nesting deeper')) return { issue };
    const why = error instanceof Error ? error.message.replace(/\s*\n\s*/g, ' ') : String(error);
    return { issue: { path: 'output', message: `JSON cannot write it (${why})` } };
  }
  return issue ? { issue } : { value: JSON.parse(text) as unknown };
}

/**
 * True when the JSON text of `value` (plain JSON data) is longer than `limit`, counted without
 * writing it: string lengths (UTF-16 code units, at most the UTF-8 bytes) plus quotes, keys and
 * separators. Stops as soon as it is over.
 */
function jsonTextOver(value: unknown, limit: number): boolean {
  if (!Number.isFinite(limit)) return false;
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') total += item.length + 2;
    else if (Array.isArray(item)) {
      total += item.length + 1;
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, field] of Object.entries(item)) {
        total += key.length + 4;
        stack.push(field);
      }
      total += 2;
    } else total += 5;
    if (total > limit) return true;
  }
  return false;
}

/**
 * A log object as JSON data: plain data as it is, anything else (a Date, a class instance, a
 * cycle) as its JSON form, or its string. Logs are best effort, never refused.
 */
function toJsonData(output: unknown): unknown {
  if (output === undefined) return null;
  if (findJsonDataIssue(output, 'output', { scalarArraysOnly: false }) === undefined) return output;
  try {
    return JSON.parse(JSON.stringify(output)) as unknown;
  } catch {
    return String(output);
  }
}

/**
 * Runs one rollout and answers the worker with its `done` once nothing the rollout started
 * outlives it, whatever its code did: sandboxes still alive (an aborted codeRunner whose own
 * cleanup has not run yet) are destroyed and waited for (so their launchers are reaped here,
 * never orphaned to the worker), and what the run code spawned itself is killed by a walk of
 * this process' own subtree.
 */
async function answerRun(message: RunMessage, seq: number): Promise<void> {
  let done: DoneMessage;
  try {
    done = await runOne(message, seq);
  } catch (err) {
    const classified = classifyError(err);
    done = { type: 'done', kind: classified.kind, output: null, reward: null, error: classified.error, recycle: true, rssBytes: rolloutResidentBytes() };
  }
  // Without a live sandbox (almost every rollout) nothing here awaits.
  if (liveSandboxCount() > 0) await destroyLiveSandboxes();
  killSubtree('self', { includeRoot: false });
  send(done);
}

process.on('message', (raw: ParentMessage) => {
  switch (raw.type) {
    case 'init':
      allow = Allowlist.compile(raw.allow);
      maxOutputBytes = raw.maxOutputBytes;
      useContainment(raw.containment);
      try {
        writeRewardStage(STAGE_BOARD_FD, 0, 0); // seq 0 is no rollout's: a check that the board is there
      } catch (error) {
        process.stderr.write(`rollout child: no stage board at fd ${STAGE_BOARD_FD} (it is started by RolloutChild): ${String(error)}\n`);
        process.exit(1);
      }
      send({ type: 'ready' });
      break;
    case 'run':
      void answerRun(raw, ++rolloutSeq);
      break;
    case 'cancel':
      current?.abort(new RolloutAborted(raw.reason));
      break;
    case 'cost-stored':
      costWaiters.get(raw.seq)?.();
      costWaiters.delete(raw.seq);
      break;
  }
});

// The worker closing our IPC channel means it is gone: take every attempt's processes, cgroups
// and work dirs with us rather than linger as an orphan (a child started with PR_SET_PDEATHSIG
// is SIGKILLed by the kernel first; then the sandboxes' own death signals and the next
// worker's sweep of dead attempts cover the rest).
process.on('disconnect', () => {
  destroyLiveSandboxesSync();
  killSubtree('self', { includeRoot: false });
  process.exit(0);
});
