import type { CostReceipt } from './result.js';
import type { GoldKeysDeclaration } from './gold-keys.js';
import type { Rendered, SandboxSpec, Task } from './rollout-spec.js';
import type { RewardWithDetails } from './reward-details.js';

/** Structured logger handed to rollout code (a pino child logger on the worker). */
export interface RolloutLogger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  debug(obj: object | string, msg?: string): void;
}

/**
 * What `run` and `reward` receive as `ctx`, on the worker, in the rollout's child process.
 */
export interface RolloutContext {
  readonly leaseId: string;
  readonly runId: string;
  readonly runAttemptId: string;
  /** `task.id` as a string, or the lease's task key. */
  readonly taskId: string;
  /** 1 for the first start of this lease, +1 for each later start (re-dispatch or hand-back). */
  readonly attempt: number;
  /**
   * Aborts on cancellation, on `timeouts.runMs` (or `timeouts.rewardMs` while the reward runs),
   * on worker shutdown or lock loss; `signal.reason` says which. Code that ignores it and
   * blocks the event loop is killed from outside just past the limit.
   */
  readonly signal: AbortSignal;
  /** Values of the spec's `sandbox.env` names, read from the worker's own environment. Never log these. */
  readonly secrets: Readonly<Record<string, string>>;
  /** The spec's placement labels. */
  readonly placement: Readonly<Record<string, string>>;
  /** W3C `traceparent` of the worker's span of this attempt when tracing is on (parent of spans the rollout makes), else undefined. */
  readonly traceparent?: string | undefined;
  /** The spec's time limits in ms. */
  readonly timeouts: { readonly runMs: number; readonly rewardMs: number; readonly hangMs: number };
  /** Heap limit of this child process in MiB (the spec's `sandbox.memoryMb`). */
  readonly memoryMb: number;
  /**
   * The spec's `sandbox` (its `network`, `cpus` and `diskMb` bound the programs a run spawns
   * through `runContained`, codeRunner's included). Optional: a context made outside a worker may leave it out.
   */
  readonly sandbox?: Readonly<SandboxSpec> | undefined;
  readonly log: RolloutLogger;
  /**
   * The task keys the worker removed from the task `run` received, as the reward's gold (the
   * reward's declared keys and the spec's `goldKeys`); `[]` when the spec set
   * `goldVisibleToRun` or no key was declared. A run that hands a part of its task on to other
   * code removes these keys from that part too (`dispatchRunner` does so from the scenario it
   * gives its Dispatch). The reward receives the whole task whatever this says.
   */
  readonly goldKeys: readonly string[];
  /**
   * Records a receipt for paid work; it reaches the coordinator with the Result, also when the
   * rollout then fails. The returned promise resolves once the worker has stored it in Redis
   * (per lease, first write per `id` wins), so a receipt awaited before a crash of the child or
   * a SIGKILL of the worker is still reported by the lease's final Result (when Redis refuses
   * the write it resolves anyway, and the receipt is written again when the attempt ends).
   * Callers that do not need that guarantee may ignore the promise. Throws a TypeError, before
   * anything is sent, for a receipt that is not a {@link CostReceipt} (as `CostReceiptSchema` checks it).
   */
  recordCost(receipt: CostReceipt): Promise<void>;
  /**
   * Set (an empty object) when the reward asked to see the run's work dir (a reward function with
   * `seesWorkDir: true`, as `rollout-queue/rewards:command` with `seeWorkDir`): a run that runs a
   * program in a work dir (codeRunner) puts a copy of the files the program left there in
   * `files` (relative path → bytes) before the dir is removed. Undefined otherwise.
   */
  readonly workDirHandoff?: WorkDirHandoff | undefined;
}

/** The run's work dir handed to the reward (see {@link RolloutContext.workDirHandoff}). */
export interface WorkDirHandoff {
  /** The files the run's program left in its work dir; unset when the run made none (not a program, or it failed first). */
  files?: ReadonlyMap<string, Uint8Array>;
}

/** A run function: `run(rendered, task, ctx) → output` (JSON data), sync or async. */
export type RunFn = (rendered: Rendered, task: Task, ctx: RolloutContext) => unknown;

/**
 * A reward function: `reward(task, output, ctx) → number` (finite, inside the spec's rewardRange),
 * or `{ reward, details }` ({@link RewardWithDetails}) to keep small JSON details with the score
 * on the Result (`rewardDetails`). It may declare the task keys it scores against as `goldKeys`
 * ({@link GoldKeysDeclaration}): the worker then keeps them from the run.
 */
export type RewardFn = ((task: Task, output: unknown, ctx: RolloutContext) => number | RewardWithDetails | Promise<number | RewardWithDetails>) & GoldKeysDeclaration;
