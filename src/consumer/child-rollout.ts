import { resolveRefJson, type Allowlist } from '../ref/index.js';
import type { CostReceipt, RolloutContext, RolloutLogger, RunFn, RewardFn, WorkDirHandoff } from '../spec/index.js';
import { checkCostReceipt } from '../spec/cost-receipt-check.js';
import { redactSecrets, redactSecretsDeep, type SecretValues } from '../spec/redact-secrets.js';
import { findRewardDetailsIssue, rewardParts } from '../spec/reward-details.js';
import { heapNearLimit, rolloutResidentBytes } from './child-rss.js';
import { callMarked, describeError, mustRecycle, rolloutScope, type RolloutScope } from './child-guard.js';
import { jsonTextOver, storedOutput, toJsonData } from './child-output.js';
import type { ChildMessage, DoneMessage, RolloutDefinition, RunMessage } from './child-protocol.js';
import { classifyError } from './classify.js';
import { RolloutAbort, RolloutAborted } from './rollout-abort.js';
import { STAGE_BOARD_FD, writeRewardStage } from './stage-board.js';
import { StageTimer } from './stage-timer.js';
import { taskForRun, type RunView } from './task-for-run.js';

/**
 * One rollout in a child that runs many at once: resolve the definition's Refs (once per
 * definition), run, check the output, reward, classify. Everything a rollout owns is its own
 * here: its abort (`ctx.signal`), its time limits, its secrets, its stage-board slot, its scope
 * (child-guard.ts). Nothing in it touches another rollout of the child.
 */

/** A definition the child holds (definition-lru.ts), with what was made of it once. */
export interface DefinitionEntry {
  readonly definition: RolloutDefinition;
  readonly secrets: Readonly<Record<string, string>>;
  /** The resolved run and reward functions, once resolved (a failed resolution is not kept). */
  run?: RunFn;
  reward?: RewardFn;
}

/** Makes the child's entry of a definition: the shared values frozen, as every rollout of it gets them. */
export function definitionEntry(definition: RolloutDefinition): DefinitionEntry {
  Object.freeze(definition.placement);
  Object.freeze(definition.timeouts);
  // Shared by every rollout of the definition in this child: one run function cannot change another's artifact.
  if (typeof definition.rendered === 'object' && 'files' in definition.rendered) Object.freeze(Object.freeze(definition.rendered).files);
  return { definition, secrets: Object.freeze({ ...definition.secrets }) };
}

/** What a rollout needs from its child. */
export interface ChildContext {
  readonly allow: Allowlist;
  /** The worker's `maxOutputBytes`. */
  readonly maxOutputBytes: number;
  send(message: ChildMessage): void;
  /** Numbers a cost receipt and resolves once the worker stored it. */
  costStored(): { seq: number; stored: Promise<void> };
}

type Stage = 'resolve' | 'run' | 'reward';

/** Idle timers, re-armed by the next rollout (see StageTimer: a timer made per rollout costs more). */
const idleTimers: StageTimer[] = [];

/** Arms a pooled timer outside every rollout's scope (a Timeout keeps the scope it was made in for its life). */
function armTimer(ms: number, onFire: () => void): StageTimer {
  const timer = idleTimers.pop() ?? new StageTimer();
  rolloutScope.exit(() => timer.arm(ms, onFire));
  return timer;
}

function releaseTimer(timer: StageTimer | undefined): void {
  if (!timer) return;
  timer.disarm();
  idleTimers.push(timer);
}

function logger(send: ChildContext['send'], secrets: SecretValues): RolloutLogger {
  // Rollout code may log a secret it was given: redact before the line leaves this process.
  const emit = (level: 'debug' | 'info' | 'warn' | 'error') => (obj: object | string, msg?: string) =>
    send(
      typeof obj === 'string'
        ? { type: 'log', level, obj: {}, msg: redactSecrets(obj, secrets) }
        : { type: 'log', level, obj: redactSecretsDeep(toJsonData(obj), secrets) as Record<string, unknown>, ...(msg ? { msg: redactSecrets(msg, secrets) } : {}) },
    );
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** The `model` error of a stage that ran past its limit (the worker's outside kill says the same). */
function timeoutError(definition: RolloutDefinition, stage: Stage, limit: 'runMs' | 'rewardMs'): { type: string; message: string } {
  const { runMs, rewardMs } = definition.timeouts;
  if (stage !== 'reward') return { type: 'RunTimeout', message: `${stage} did not finish within timeouts.runMs = ${runMs} ms` };
  return {
    type: 'RewardTimeout',
    message: limit === 'rewardMs'
      ? `reward ${definition.reward.$ref} did not finish within timeouts.rewardMs = ${rewardMs} ms`
      : `reward ${definition.reward.$ref} did not finish within what was left of timeouts.runMs = ${runMs} ms (run and reward share it)`,
  };
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

/** The entry's function for a role, resolving it on first use (the definition's Ref text is exactly what the worker sent). */
function resolvedFn(entry: DefinitionEntry, role: 'run' | 'reward', allow: Allowlist): unknown {
  const known = entry[role];
  if (known) return known;
  return resolveRefJson(JSON.stringify(entry.definition[role]), { allow }).then((fn) => {
    entry[role] = fn as RunFn & RewardFn;
    return fn;
  });
}

/** A rollout started in the child: its `done` (never rejects) and what aborts it from outside. */
export interface RunningRollout {
  readonly done: Promise<DoneMessage>;
  /** Aborts it with `reason` (the worker's cancel message): `ctx.signal` aborts, the stage awaiting it rejects. */
  abort(reason: string): void;
}

/**
 * Starts one rollout in its own scope. Its `done` never rejects: a failure of the child's own code
 * is classified like rollout code's (and the child recycled).
 */
export function runRollout(entry: DefinitionEntry, message: RunMessage, child: ChildContext): RunningRollout {
  const abort = new RolloutAbort();
  let crashStack: string | undefined;
  const scope: RolloutScope = {
    seq: message.seq,
    finished: false,
    crash(error) {
      crashStack ??= describeError(error);
      abort.abort(new RolloutAborted('crashed'));
    },
  };
  const done = rolloutScope.run(scope, async (): Promise<DoneMessage> => {
    try {
      return await runOne(entry, message, child, abort, () => crashStack);
    } catch (err) {
      const classified = classifyError(err);
      return { type: 'done', seq: message.seq, kind: classified.kind, output: null, reward: null, error: classified.error, abandoned: true, recycle: true, rssBytes: rolloutResidentBytes() };
    } finally {
      scope.finished = true;
    }
  });
  return { done, abort: (reason) => abort.abort(new RolloutAborted(reason)) };
}

async function runOne(entry: DefinitionEntry, message: RunMessage, child: ChildContext, abort: RolloutAbort, crashStack: () => string | undefined): Promise<DoneMessage> {
  const { definition } = entry;
  const { seq } = message;
  const startedAt = Date.now();
  let rewardLimit: StageTimer | undefined;
  const runLimit = armTimer(definition.timeouts.runMs, () => abort.abort(new RolloutAborted('run-timeout')));
  let log: RolloutLogger | undefined;
  // Set once both Refs are resolved (taskForRun): the task the run sees, without the gold.
  let runView: RunView | undefined;
  // Set once the reward is resolved, when it asked to see the run's work dir.
  let workDirHandoff: WorkDirHandoff | undefined;
  const ctx: RolloutContext = {
    leaseId: message.leaseId,
    runId: message.runId,
    runAttemptId: message.runAttemptId,
    taskId: message.taskId,
    attempt: message.attempt,
    get signal() {
      return abort.signal;
    },
    secrets: entry.secrets,
    placement: definition.placement,
    traceparent: message.traceparent,
    timeouts: definition.timeouts,
    memoryMb: definition.sandbox.memoryMb,
    sandbox: definition.sandbox,
    get goldKeys() {
      return runView?.goldKeys ?? [];
    },
    get workDirHandoff() {
      return workDirHandoff;
    },
    // Made when rollout code first logs: most rollouts never do.
    get log() {
      return (log ??= logger(child.send, entry.secrets));
    },
    recordCost(receipt: CostReceipt): Promise<void> {
      const checked = checkCostReceipt(receipt);
      const { seq: costSeq, stored } = child.costStored();
      child.send({ type: 'cost', rollout: seq, receipt: checked, seq: costSeq });
      return stored;
    },
  };
  const done = (partial: Omit<DoneMessage, 'type' | 'seq' | 'rssBytes' | 'abandoned' | 'recycle'>, abandoned = false): DoneMessage => {
    const rssBytes = rolloutResidentBytes();
    return { type: 'done', seq, ...partial, abandoned, recycle: mustRecycle() || heapNearLimit(definition.sandbox.memoryMb), rssBytes };
  };
  let stage: Stage = 'resolve';
  let output: unknown;
  const { task } = message;
  try {
    const run = (await settled(abort, resolvedFn(entry, 'run', child.allow))) as RunFn;
    const reward = (await settled(abort, resolvedFn(entry, 'reward', child.allow))) as RewardFn;
    // The gold stays with the reward: the run gets the task without the keys it scores against.
    runView = taskForRun({ task, reward: definition.reward, goldKeys: definition.goldKeys, goldVisibleToRun: definition.goldVisibleToRun }, reward);
    if ((reward as { seesWorkDir?: unknown }).seesWorkDir === true) workDirHandoff = {};
    const runTask = runView.task;
    stage = 'run';
    // Called here, not from a `.then` callback: a synchronous throw lands in the catch below all
    // the same, and with the stage started from `Promise.resolve().then(...)` the child's heap
    // grew by ~2 MB at every young-generation collection (survivors promoted, freed only by full
    // GCs; measured on Node 20), which cost every rollout CPU.
    const returned = await settled(abort, callMarked(seq, () => run(definition.rendered, runTask, ctx)));
    const stored = storedOutput(returned);
    if ('issue' in stored) {
      // Nothing to score: what would be stored is not what the run returned (fresh-user
      // report: a BigInt or a cycle was stored as "[object Object]" with reward 1).
      const { path, message: why } = stored.issue;
      return done({ kind: 'model', output: null, reward: null, error: { type: 'OutputNotJson', message: `the run returned output that is not JSON data, at ${path}: ${why}; return strings, finite numbers, booleans, null, arrays and plain objects` } });
    }
    if (jsonTextOver(stored.value, child.maxOutputBytes)) {
      // Before the reward: a huge output was blamed on it (its JSON text was being written
      // when timeouts.rewardMs ran out), and a Result is stored in Redis and held by the coordinator.
      return done({ kind: 'model', output: null, reward: null, error: { type: 'OutputTooLarge', message: `the run returned output whose JSON text is over the worker's maxOutputBytes = ${child.maxOutputBytes} bytes; return a summary and keep large data elsewhere (a file, object storage), or raise maxOutputBytes (worker --max-output-bytes)` } });
    }
    // The reward scores what is stored.
    output = stored.value;
    stage = 'reward';
    // On the board before the reward starts: a reward that blocks this event loop can only
    // be stopped (and named) from outside, by the worker reading it.
    const rewardAt = Date.now();
    try {
      writeRewardStage(STAGE_BOARD_FD, message.slot, seq, rewardAt);
    } catch {
      // Rollout code closed the board: child-guard notices at its next write and recycles the child.
    }
    const leftMs = startedAt + definition.timeouts.runMs - rewardAt;
    if (definition.timeouts.rewardMs < leftMs) rewardLimit = armTimer(definition.timeouts.rewardMs, () => abort.abort(new RolloutAborted('reward-timeout')));
    const scored = rewardParts(await settled(abort, callMarked(seq, () => reward(task, output, ctx))));
    const value = scored.reward;
    const [lo, hi] = definition.rewardRange;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < lo || value > hi) {
      return done({
        kind: 'caller',
        output,
        reward: null,
        error: {
          type: 'RewardOutOfRange',
          message: `reward ${definition.reward.$ref} returned ${typeof value === 'number' ? String(value) : typeof value}; it must be a finite number in rewardRange [${lo}, ${hi}]; fix the reward or widen the spec's rewardRange`,
        },
      });
    }
    if (scored.details === undefined) return done({ kind: 'ok', output, reward: value, error: null });
    const detailsIssue = findRewardDetailsIssue(scored.details);
    if (detailsIssue) {
      // The reward is the caller's code: details that cannot be stored are its broken contract.
      return done({ kind: 'caller', output, reward: null, error: { type: 'RewardDetailsInvalid', message: `reward ${definition.reward.$ref} returned details that cannot be kept, at ${detailsIssue.path}: ${detailsIssue.message}` } });
    }
    return done({ kind: 'ok', output, reward: value, rewardDetails: scored.details, error: null });
  } catch (err) {
    const kept = stage === 'reward' ? output : null;
    if (abort.reason) {
      const { reason } = abort.reason;
      if (reason === 'crashed') {
        return { ...done({ kind: 'infrastructure', output: null, reward: null, error: { type: 'ChildCrashed', message: `${stage}: rollout code threw where nothing caught it` } }, true), recycle: true, crash: crashStack() ?? '' };
      }
      if (reason === 'run-timeout' || reason === 'reward-timeout') {
        return done({ kind: 'model', output: kept, reward: null, error: timeoutError(definition, stage, reason === 'reward-timeout' ? 'rewardMs' : 'runMs') }, true);
      }
      if (reason === 'cancelled') {
        return done({ kind: 'caller', output: null, reward: null, error: { type: 'Cancelled', message: 'the run was cancelled while this rollout was running' } }, true);
      }
      return done({ kind: 'infrastructure', output: null, reward: null, error: { type: 'Aborted', message: `rollout aborted by the worker: ${reason}` } }, true);
    }
    const classified = classifyError(err);
    if (stage === 'reward' && classified.kind === 'model' && classified.error.type === 'RewardTimeout') {
      // A reward that enforces its own limit (the command reward's timeoutMs) says so as the
      // worker's own limits do, not as "RewardThrew:RewardTimeout".
      return done({ kind: 'model', output: kept, reward: null, error: { type: 'RewardTimeout', message: `reward ${definition.reward.$ref}: ${classified.error.message}` } });
    }
    if (stage === 'reward' && classified.kind === 'model') {
      // Executor contract: a reward that throws on this output is evidence about the output
      // (model), not a broken caller contract; only CallerError/RefError, out-of-range
      // rewards and bad specs stop a run. Transient failures (infrastructure) are re-dispatched.
      return done({ kind: 'model', output: kept, reward: null, error: { type: `RewardThrew:${classified.error.type}`, message: `reward ${definition.reward.$ref} threw: ${classified.error.message}` } });
    }
    return done({ kind: classified.kind, output: kept, reward: null, error: { ...classified.error, message: stage === 'resolve' ? classified.error.message : `${stage}: ${classified.error.message}` } });
  } finally {
    releaseTimer(runLimit);
    releaseTimer(rewardLimit);
  }
}
