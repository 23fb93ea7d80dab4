import type { DispatchIdentity } from '../../spec/index.js';
import type { DispatchSpanHandle, HarnessArtifactWriter, HarnessCostMeter, HarnessTraceWriter, PaidCallResult, RunPaidCallInput } from './harness-shapes.js';

/**
 * The evaluation harness' Dispatch contract, as rollout-queue implements it on both sides of
 * the queue: `Dispatch = (scenario, ctx) => Promise<artifact>`. On the coordinator
 * `queueDispatch` is such a function (each call one lease) and takes the harness' ctx as its
 * `runCampaign` builds it; on the worker `dispatchRunner({ dispatch: Ref })` calls the user's
 * Dispatch with a {@link WorkerDispatchContext} built there, in the harness' shapes.
 * Built-in layer: imports only `spec`.
 */

/** A cost receipt in rollout-queue's older form (`ctx.cost.record`): `callId` names the call and makes a replay idempotent. */
export interface DispatchCostReceipt {
  /** Unique per paid call within one cell of one run attempt, 1–256 characters. */
  readonly callId: string;
  /** Cost in US dollars, ≥ 0. */
  readonly usd: number;
  readonly label?: string;
  /** Counted units, e.g. `{ "inputTokens": 1200 }`. */
  readonly units?: Readonly<Record<string, number>>;
}

/** What a paid call of the older `(callId, call)` form reports besides its value. */
export interface PaidCallCost {
  readonly usd: number;
  readonly label?: string;
  readonly units?: Readonly<Record<string, number>>;
}

/**
 * The cost meter a caller of `queueDispatch` passes in `ctx.cost`: the harness' meter, whose
 * only method is `runPaidCall(input)` (receipts of remote work are replayed through it, once per
 * `callId` of each cell), or rollout-queue's older `record(receipt)` ledger. With both,
 * `runPaidCall` is used.
 */
export interface DispatchCost {
  runPaidCall?: HarnessCostMeter['runPaidCall'];
  record?(receipt: DispatchCostReceipt): unknown;
}

/**
 * Tracing a caller of `queueDispatch` passes in `ctx.trace`: the harness' writer
 * (`span(name, attributes) → handle`), or rollout-queue's older callback form
 * (`span(name, fn, attributes)`, told apart by taking three parameters).
 */
export interface DispatchTrace {
  span: HarnessTraceWriter['span'] | (<T>(name: string, fn: () => T | Promise<T>, attributes?: Readonly<Record<string, string | number | boolean>>) => Promise<T>);
  flush?(): Promise<void>;
}

/** Where a caller of `queueDispatch` takes the files a Dispatch wrote: the harness' writer (`write` resolves to the full path). */
export interface DispatchArtifacts {
  write(path: string, content: string | Uint8Array): unknown;
  writeJson?(path: string, value: unknown): unknown;
}

/**
 * The ctx a caller passes to `queueDispatch` (the harness' `DispatchContext` as `runCampaign`
 * builds it: `cellId`, `runAttemptId`, `rep`, `seed`, `signal`, `trace`, `artifacts`, `cost`,
 * `placement`; everything but the identity is optional here).
 */
export interface DispatchContext extends DispatchIdentity {
  /**
   * Where it should run. A string (the harness' placement key, from `cellPlacement`) is a queue
   * name; an object `{ queue?, ...labels }` picks the queue (default: queueDispatch's `queue`)
   * and passes its other string labels as `spec.placement`.
   */
  readonly placement?: DispatchPlacement;
  /** Aborting cancels the dispatch (never retried). */
  readonly signal?: AbortSignal;
  readonly cost?: DispatchCost;
  readonly trace?: DispatchTrace;
  readonly artifacts?: DispatchArtifacts;
  /** Set by the harness on a resumed cell; carried for its shape, unused. */
  readonly resumedFrom?: string;
}

/** A placement: a queue name, or `{ queue?, ...labels }`. */
export type DispatchPlacement = string | Readonly<Record<string, string>>;

/** The harness' seam, coordinator side: runs one scenario and resolves to its artifact (JSON data). */
export type Dispatch = (scenario: unknown, ctx: DispatchContext) => Promise<unknown>;

/**
 * The cost meter of a Dispatch on the worker. `runPaidCall(input)` is the harness meter's: it
 * runs `input.execute(signal, callId)`, prices the value with `input.receipt(value)` (or a
 * failure with `input.receiptFromError`), stores the receipt in the worker's Redis before it
 * resolves, and resolves to the harness' `PaidCallResult` (a failure is reported, not thrown).
 * The older `(callId, call)` form and `record(receipt)` still work.
 * @throws CallerError for an argument of neither form (a bug of the Dispatch, the same on every try).
 */
export interface WorkerDispatchCost extends HarnessCostMeter {
  runPaidCall<T>(input: RunPaidCallInput<T>): Promise<PaidCallResult<T>>;
  /** Older form: `call` resolves to `{ value, cost }`; an error carrying `cost: PaidCallCost` is recorded, then re-thrown. */
  runPaidCall<T>(callId: string, call: () => Promise<{ readonly value: T; readonly cost: PaidCallCost }>): Promise<T>;
  /** Records one receipt (the first per `callId` of the lease counts). */
  record(receipt: DispatchCostReceipt): Promise<void>;
}

/** Tracing of a Dispatch on the worker: the harness' `span(name, attributes) → handle`, or the older callback form. */
export interface WorkerDispatchTrace extends HarnessTraceWriter {
  span<T>(name: string, fn: () => T | Promise<T>, attributes?: Readonly<Record<string, unknown>>): Promise<T>;
  span(name: string, attributes?: Readonly<Record<string, unknown>>): DispatchSpanHandle;
  flush(): Promise<void>;
}

/**
 * What a Dispatch receives on the worker: the harness' ctx (`cellId`, `runAttemptId`, `rep`,
 * `seed`, `generation?`, `cycleId?`, `signal`, `trace`, `artifacts`, `cost`, `placement`) plus
 * `secrets` and `placementLabels`.
 */
export interface WorkerDispatchContext extends DispatchIdentity {
  /** The placement key the caller sent (a string, as the harness' `ctx.placement`); undefined without one. */
  readonly placement: string | undefined;
  /** The lease's placement labels (`spec.placement`: an object placement's labels). */
  readonly placementLabels: Readonly<Record<string, string>>;
  /** Aborts on cancel, on the lease's `runMs`, on worker shutdown or lock loss. */
  readonly signal: AbortSignal;
  /** Values of the lease's `sandbox.env` names, read from the worker's environment (also set in `process.env` while the Dispatch runs). Never log them. */
  readonly secrets: Readonly<Record<string, string>>;
  readonly cost: WorkerDispatchCost;
  readonly trace: WorkerDispatchTrace;
  /**
   * Files beside the artifact. `write` stores a file under a directory of this attempt on the
   * worker and resolves to its full path there (valid until the Dispatch returns; the directory
   * is removed then); its content travels back with the Result (capped by `maxArtifactBytes`)
   * and reaches the caller's `ctx.artifacts.write`.
   */
  readonly artifacts: HarnessArtifactWriter;
}

/** A Dispatch as the workers run it: `(scenario, ctx) => Promise<artifact>` (JSON data). */
export type WorkerDispatch = (scenario: unknown, ctx: WorkerDispatchContext) => Promise<unknown>;
