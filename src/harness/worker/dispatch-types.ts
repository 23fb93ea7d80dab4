import type { DispatchIdentity } from '../../spec/index.js';

/**
 * The evaluation harness' Dispatch contract, as rollout-queue implements it on both sides of
 * the queue: `Dispatch = (scenario, ctx) => Promise<artifact>`. On the coordinator
 * `queueDispatch` is such a function (each call one lease); on the worker
 * `dispatchRunner({ dispatch: Ref })` calls the user's Dispatch with a ctx built there.
 * Built-in layer: imports only `spec`.
 */

/** A cost receipt of one paid call, as the harness' ledgers keep them: `callId` names the call and makes a replay idempotent. */
export interface DispatchCostReceipt {
  /**
   * Unique per paid call within one Dispatch call (one cell of one run attempt), 1–256
   * characters; a receipt is counted once per `callId` of its cell (the same `callId` in two
   * cells names two calls).
   */
  readonly callId: string;
  /** Cost in US dollars, ≥ 0. */
  readonly usd: number;
  readonly label?: string;
  /** Counted units, e.g. `{ "inputTokens": 1200 }`. */
  readonly units?: Readonly<Record<string, number>>;
}

/** What a paid call reports besides its value. */
export interface PaidCallCost {
  readonly usd: number;
  readonly label?: string;
  readonly units?: Readonly<Record<string, number>>;
}

/**
 * The cost ledger of a Dispatch ctx. The coordinator's one only needs `record` (receipts of
 * remote work are replayed into it, once per `callId` of each cell); the worker's one also has
 * `runPaidCall`, which stores each receipt durably before it returns.
 */
export interface DispatchCost {
  /** Records one receipt (a repeated `callId` is ignored by rollout-queue's ledgers). */
  record(receipt: DispatchCostReceipt): void | Promise<void>;
  /**
   * Runs one paid call and records its receipt, also when the call throws after paying (give
   * `cost` then via the error's `cost` property, see below). Resolves to the call's value once
   * the receipt is stored on the worker's Redis, so it survives a crash right after.
   * `call` returns `{ value, cost }`; an error carrying `cost: PaidCallCost` is recorded, then re-thrown.
   */
  runPaidCall?<T>(callId: string, call: () => Promise<{ readonly value: T; readonly cost: PaidCallCost }>): Promise<T>;
}

/** One finished span of `ctx.trace.span`. */
export interface DispatchSpan {
  readonly name: string;
  /** Epoch ms of the start. */
  readonly startMs: number;
  readonly durationMs: number;
  /** `{type, message}` when the spanned work threw. */
  readonly error?: { readonly type: string; readonly message: string };
  readonly attributes?: Readonly<Record<string, string | number | boolean>>;
}

/** Tracing of a Dispatch ctx. */
export interface DispatchTrace {
  /** Runs `fn` inside a span named `name`; the span is recorded also when `fn` throws (and the error re-thrown). */
  span<T>(name: string, fn: () => T | Promise<T>, attributes?: Readonly<Record<string, string | number | boolean>>): Promise<T>;
}

/** Small files a dispatch leaves besides its artifact. */
export interface DispatchArtifacts {
  /**
   * Writes one file by relative path (`a/b.txt`; no absolute path, no `..`). On the worker the
   * file travels back with the Result (capped by `dispatchRunner`'s `maxArtifactBytes`) and is
   * written under the coordinator's run dir.
   */
  write(path: string, content: string): void | Promise<void>;
}

/** What a Dispatch receives besides the scenario (the harness' ctx). */
export interface DispatchContext extends DispatchIdentity {
  /**
   * Where it should run. A string is a queue name; an object `{ queue?, ...labels }` picks the
   * queue (default: queueDispatch's `queue`) and passes its other string labels as `spec.placement`.
   */
  readonly placement?: DispatchPlacement;
  /** Aborting cancels the dispatch (never retried). */
  readonly signal?: AbortSignal;
  readonly cost?: DispatchCost;
  readonly trace?: DispatchTrace;
  readonly artifacts?: DispatchArtifacts;
}

/** A placement: a queue name, or `{ queue?, ...labels }`. */
export type DispatchPlacement = string | Readonly<Record<string, string>>;

/** The harness' seam: runs one scenario and resolves to its artifact (JSON data). */
export type Dispatch = (scenario: unknown, ctx: DispatchContext) => Promise<unknown>;
