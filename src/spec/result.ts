import { z } from 'zod';
import { PaidCallDetailSchema } from './paid-call-detail.js';

/**
 * How a rollout ended. Report, never raise (see docs/design.md "Result kinds"):
 * - `ok`: run returned and reward is a finite number inside `rewardRange`;
 * - `model`: the thing under test failed (threw, exited non-zero, own time limit, bad output),
 *   or the reward threw or overran on its output (`RewardThrew:<type>`, `RewardTimeout`);
 * - `infrastructure`: a transient of the plane or of a dependency, after its re-dispatches
 *   (worker lost, hang limit, missing secret, Redis trouble, a judge that refused or 5xx'd
 *   on every try); keep going;
 * - `caller`: a broken caller contract (bad Ref, bad spec, CallerError/RefError, reward out
 *   of range); stop the run.
 */
export const ResultKindSchema = z.enum(['ok', 'model', 'infrastructure', 'caller']);
export type ResultKind = z.infer<typeof ResultKindSchema>;

/** An error as data: `type` is a stable string (never matched with instanceof across the wire). */
export const ErrorInfoSchema = z
  .object({
    type: z.string().min(1).max(128),
    message: z.string().max(8192),
  })
  .strict()
  .meta({ id: 'ErrorInfo' });
export type ErrorInfo = z.infer<typeof ErrorInfoSchema>;

/**
 * A cost receipt for paid work done by a rollout (a model call, a GPU minute). `id` is
 * unique per receipt so the coordinator's ledger can replay receipts exactly once.
 */
export const CostReceiptSchema = z
  .object({
    id: z.string().min(1).max(256),
    usd: z.number().min(0).describe('Cost in US dollars.'),
    label: z.string().max(256).optional(),
    units: z.record(z.string(), z.number()).optional().describe('e.g. {"inputTokens": 1200}'),
    paidCall: PaidCallDetailSchema.optional().describe("What the harness' runPaidCall(input) said about the call (channel, actor, model, ...); set by a Dispatch's ctx.cost.runPaidCall."),
  })
  .strict()
  .meta({ id: 'CostReceipt' });
export type CostReceipt = z.infer<typeof CostReceiptSchema>;

/** The one outcome of one lease, delivered exactly once to the coordinator. */
export const ResultSchema = z
  .object({
    leaseId: z.string(),
    runId: z.string(),
    taskId: z.string(),
    kind: ResultKindSchema,
    output: z.unknown().describe('What run() returned (JSON), or null.'),
    reward: z.number().nullable().describe('Finite reward when kind is ok, else null.'),
    error: ErrorInfoSchema.nullable(),
    attempts: z.number().int().min(0).describe('Times a worker started this lease.'),
    redispatched: z.number().int().min(0).describe('Times this lease was re-dispatched (stall, crash, hang).'),
    worker: z.string().nullable().describe('Name of the worker that produced the result.'),
    queuedMs: z
      .number()
      .min(0)
      .nullable()
      .describe('From enqueue to the start of the last attempt, ms, both ends by the Redis clock (TIME); null when the coordinator ended the lease or another client enqueued it.'),
    runMs: z
      .number()
      .min(0)
      .nullable()
      .describe("Duration of the last attempt, ms, by the worker's monotonic clock (an NTP step cannot bend it); null when no attempt finished."),
    finishedAt: z
      .string()
      .describe('ISO 8601 time the result was produced, by the Redis clock (TIME): at the worker\'s finish, or when the coordinator ended the lease; only a draft the producer refused uses the coordinator\'s clock.'),
    cost: z.array(CostReceiptSchema).default([]),
    cached: z
      .boolean()
      .optional()
      .describe('true when an evaluation was answered from the evaluation cache (same rendered, task, run and reward as an earlier ok evaluation): no worker ran it, no cost. Absent otherwise.'),
    goldVisibleToRun: z
      .boolean()
      .optional()
      .describe(
        "Whether the run could see the task's gold. false: the worker removed every gold key (the reward's declared keys and the spec's goldKeys) from the task the run received; true: the spec set goldVisibleToRun and the run received the whole task. Absent on a Result no worker wrote (a refused draft, a lease the coordinator ended) and from workers older than this field.",
      ),
    meta: z
      .unknown()
      .optional()
      .describe("The draft's own meta, untouched (the caller's tag of the candidate); absent when the draft had none, or for a JobMissing Result delivered by a coordinator that did not enqueue the lease."),
    rewardDetails: z
      .unknown()
      .optional()
      .describe('What the reward kept with its score (it returned { reward, details }; a command reward printed {"reward": r, "details": ...}): JSON data, at most 8192 bytes. Only on an ok Result whose reward gave details; absent otherwise.'),
  })
  .strict()
  // What each kind carries (docs/design.md "Result kinds"), so the Result type can be a union on
  // `kind`. A refinement, not a union schema: the published JSON Schema stays as it was.
  .superRefine((result, ctx) => {
    const issue = kindIssue(result.kind, result.reward, result.error);
    if (issue) ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.message });
  })
  .meta({ id: 'Result' });

/**
 * What is wrong with a Result's `reward` and `error` for its `kind`, or undefined: an `ok`
 * Result has a number reward and no error; the other kinds a null reward and an error.
 */
function kindIssue(kind: ResultKind, reward: number | null, error: ErrorInfo | null): { path: 'reward' | 'error'; message: string } | undefined {
  if (kind === 'ok') {
    if (reward === null) return { path: 'reward', message: 'an ok Result has a number reward, not null' };
    if (error !== null) return { path: 'error', message: 'an ok Result has no error (null)' };
    return undefined;
  }
  if (reward !== null) return { path: 'reward', message: `a ${kind} Result has a null reward` };
  if (error === null) return { path: 'error', message: `a ${kind} Result names its error ({ type, message }), not null` };
  return undefined;
}

const RESULT_KINDS: ReadonlySet<unknown> = new Set(ResultKindSchema.options);

/** A whole number zod's `.int().min(0)` accepts. */
const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

/** A number zod's `.min(0).nullable()` accepts. */
const isSpan = (value: unknown): boolean => value === null || (typeof value === 'number' && Number.isFinite(value) && value >= 0);

/**
 * Parses a Result (a job's return value, a stored verdict) as `ResultSchema.safeParse` does.
 * The shape every worker writes (all fields present, no receipts, an error of its two fields
 * or none) is checked by hand, at a fraction of zod's cost (the coordinator reads one per
 * lease); anything else goes to zod, issues included.
 */
export function parseResult(value: unknown): z.ZodSafeParseResult<Result> {
  const plain = resultAsWritten(value);
  // The schema's refinement checks what each kind carries, so its output is a Result of the union.
  return plain ? ({ success: true, data: plain } as z.ZodSafeParseResult<Result>) : (ResultSchema.safeParse(value) as z.ZodSafeParseResult<Result>);
}

/** zod's output for a Result of the common shape (see {@link parseResult}), else undefined. */
function resultAsWritten(value: unknown): Result | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  const r = value as Record<string, unknown>;
  const keys = Object.keys(r);
  const { cached, goldVisibleToRun } = r;
  const hasMeta = 'meta' in r;
  const hasDetails = 'rewardDetails' in r;
  if (keys.length !== 14 + (cached === undefined ? 0 : 1) + (goldVisibleToRun === undefined ? 0 : 1) + (hasMeta ? 1 : 0) + (hasDetails ? 1 : 0)) return undefined;
  if ((cached !== undefined && typeof cached !== 'boolean') || (goldVisibleToRun !== undefined && typeof goldVisibleToRun !== 'boolean')) return undefined;
  const { leaseId, runId, taskId, kind, reward, error, attempts, redispatched, worker, queuedMs, runMs, finishedAt, cost } = r;
  if (typeof leaseId !== 'string' || typeof runId !== 'string' || typeof taskId !== 'string' || typeof finishedAt !== 'string') return undefined;
  if (!RESULT_KINDS.has(kind) || !('output' in r) || !isCount(attempts) || !isCount(redispatched) || !isSpan(queuedMs) || !isSpan(runMs)) return undefined;
  if ((reward !== null && (typeof reward !== 'number' || !Number.isFinite(reward))) || (worker !== null && typeof worker !== 'string')) return undefined;
  if (!Array.isArray(cost) || cost.length !== 0) return undefined;
  let errorInfo: ErrorInfo | null = null;
  if (error !== null) {
    if (error === undefined || typeof error !== 'object' || Array.isArray(error) || Object.getPrototypeOf(error) !== Object.prototype || Object.keys(error).length !== 2) return undefined;
    const { type, message } = error as Record<string, unknown>;
    if (typeof type !== 'string' || type.length < 1 || type.length > 128 || typeof message !== 'string' || message.length > 8192) return undefined;
    errorInfo = { type, message };
  }
  // Not what its kind carries: zod names the issue.
  if (kindIssue(kind as ResultKind, reward as number | null, errorInfo)) return undefined;
  // Key order as zod's output (the shape's order): the fast path gives the same object.
  const ending = kind === 'ok'
    ? { kind: 'ok' as const, output: r.output, reward: reward as number, error: null }
    : { kind: kind as FailedKind, output: r.output, reward: null, error: errorInfo as ErrorInfo };
  const result: Result = {
    leaseId, runId, taskId, ...ending,
    attempts: attempts as number, redispatched: redispatched as number, worker: worker as string | null,
    queuedMs: queuedMs as number | null, runMs: runMs as number | null, finishedAt, cost: [],
  };
  if (cached !== undefined) result.cached = cached as boolean;
  if (goldVisibleToRun !== undefined) result.goldVisibleToRun = goldVisibleToRun as boolean;
  if (hasMeta) result.meta = r.meta;
  if (hasDetails) result.rewardDetails = r.rewardDetails;
  return result;
}

/**
 * The fields every Result has, whatever its kind (the output type of {@link ResultSchema}
 * less `kind`, `reward` and `error`, written out so their docs reach editors through the
 * published `.d.ts`; a compile-time check below keeps them and the schema identical).
 */
export interface ResultFields {
  /** Lease id = BullMQ job id, `<runId>.<taskKey>`. */
  leaseId: string;
  /** Run the lease belongs to. */
  runId: string;
  /** `task.id` of the spec (else the lease's task key). */
  taskId: string;
  /** What `run()` returned (JSON data), or null. A `model` Result may carry the output it failed on. */
  output: unknown;
  /** Times a worker started this lease (1 when nothing went wrong). */
  attempts: number;
  /** Times this lease was re-dispatched (stall, child crash, hang); at most 2 by default. */
  redispatched: number;
  /** Name of the worker that produced the Result (`<host>-<pid>` by default), or null. */
  worker: string | null;
  /** From enqueue to the start of the last attempt, ms; null when unknown. */
  queuedMs: number | null;
  /** Duration of the last attempt, ms; null when it never ran (a caller Result). */
  runMs: number | null;
  /** ISO 8601 time the Result was produced. */
  finishedAt: string;
  /** Cost receipts of paid work the rollout did, each once, also when it failed after paying. */
  cost: CostReceipt[];
  /** true when an evaluation was answered from the evaluation cache (no worker ran it, no cost); absent otherwise. */
  cached?: boolean | undefined;
  /**
   * Whether the run could see the task's gold: `false` when the worker removed every gold key
   * (the reward's declared keys and the spec's `goldKeys`) from the task the run received, `true`
   * when the spec set `goldVisibleToRun`. Absent on a Result no worker wrote (a refused draft, a
   * lease the coordinator ended) and from workers older than this field.
   */
  goldVisibleToRun?: boolean | undefined;
  /**
   * The draft's `meta`, untouched: the caller's tag of the candidate behind this Result (match
   * Results to candidates by it, never by parsing `leaseId`). Absent when the draft had none, and
   * on a `JobMissing` Result delivered by a coordinator that did not enqueue the lease (the job
   * that held it is gone).
   */
  meta?: unknown;
  /**
   * What the reward kept with its score: it returned `{ reward, details }` (a command reward
   * printed `{"reward": r, "details": ...}`). JSON data, at most `MAX_REWARD_DETAILS_BYTES`
   * (8192) bytes. Only on an `ok` Result whose reward gave details; absent otherwise.
   */
  rewardDetails?: unknown;
}

/** The kinds of a Result that did not end `ok`: each carries an error and no reward. */
export type FailedKind = Exclude<ResultKind, 'ok'>;

/** A rollout that ended `ok`: run returned and the reward is a finite number. */
export interface OkResult extends ResultFields {
  /** `ok`: use the reward. */
  kind: 'ok';
  /** Finite reward inside the spec's `rewardRange` (default [0, 1]). */
  reward: number;
  /** Always null on an `ok` Result. */
  error: null;
}

/**
 * A rollout that did not end `ok` (`K`: `model`, `infrastructure` or `caller`; see
 * {@link ResultKind} for what each means and what a coordinator should do).
 */
export interface FailedResult<K extends FailedKind = FailedKind> extends ResultFields {
  /** How the rollout failed: the thing under test (`model`), the plane (`infrastructure`), or the caller's contract (`caller`). */
  kind: K;
  /** Always null: only an `ok` Result has a reward. */
  reward: null;
  /** `{ type, message }` of what went wrong; `type` is a stable string (e.g. `RunTimeout`, `NonZeroExit`, `RedispatchLimit`). */
  error: ErrorInfo;
}

/** The thing under test failed: run threw, exited non-zero, its own limits, bad output, or the reward threw or overran on it. */
export type ModelResult = FailedResult<'model'>;
/** A transient of the plane or a dependency, after its re-dispatches: keep going. */
export type InfrastructureResult = FailedResult<'infrastructure'>;
/** A broken caller contract (bad Ref, config or spec, reward out of range): stop the run by default. */
export type CallerResult = FailedResult<'caller'>;

/**
 * The one outcome of one lease, delivered exactly once to the coordinator: a union on `kind`,
 * so `if (result.kind === 'ok') result.reward` is a `number` and elsewhere `result.error` is an
 * {@link ErrorInfo}. On the wire it is {@link ResultSchema} (whose refinement checks what each
 * kind carries), unchanged.
 */
export type Result = OkResult | ModelResult | InfrastructureResult | CallerResult;

// Fails to compile when Result and ResultSchema drift apart: the union, its kinds merged, is the
// schema's output field by field.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type MergedResult = ResultFields & { kind: ResultKind; reward: number | null; error: ErrorInfo | null };
const resultMatchesSchema: Same<MergedResult, z.infer<typeof ResultSchema>> = true;
const everyKindIsWire: Same<Result extends z.infer<typeof ResultSchema> ? true : false, true> = true;
const everyKindCovered: Same<Result['kind'], ResultKind> = true;
void resultMatchesSchema;
void everyKindIsWire;
void everyKindCovered;

/** The part of a Result that depends on its kind, in the wire's key order: `kind`, `output`, `reward`, `error`. */
export type ResultEnding = Pick<OkResult, 'kind' | 'output' | 'reward' | 'error'> | Pick<FailedResult, 'kind' | 'output' | 'reward' | 'error'>;

/**
 * The kind-dependent part of a Result from loosely typed parts (a child's message, a test
 * double), so `{ ...fields, ...resultEnding(…) }` is a {@link Result}. What each kind carries
 * is kept: a failed kind's reward becomes null and a missing error `Unknown`; an `ok` without a
 * finite reward (a worker bug, never to pass as a score) becomes `infrastructure` `BadResult`.
 */
export function resultEnding(kind: ResultKind, output: unknown, reward: number | null, error: ErrorInfo | null): ResultEnding {
  if (kind === 'ok') {
    if (typeof reward === 'number' && Number.isFinite(reward)) return { kind, output, reward, error: null };
    return { kind: 'infrastructure', output, reward: null, error: { type: 'BadResult', message: `the rollout ended ok without a finite reward (got ${String(reward)}); this is a bug of the worker that wrote it` } };
  }
  return { kind, output, reward: null, error: error ?? { type: 'Unknown', message: `the rollout ended ${kind} without naming an error` } };
}

/** The fields of a Result written to a results JSONL file, in order. */
export const RESULT_LINE_FIELDS = [
  'leaseId', 'runId', 'taskId', 'kind', 'reward', 'output', 'error',
  'attempts', 'redispatched', 'worker', 'queuedMs', 'runMs', 'finishedAt', 'cost', 'cached', 'goldVisibleToRun', 'meta', 'rewardDetails',
] as const satisfies readonly (keyof Result)[];
