import { z } from 'zod';

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
  })
  .strict()
  .meta({ id: 'Result' });

/**
 * The one outcome of one lease, delivered exactly once to the coordinator (the output type of
 * {@link ResultSchema}, written out so its docs reach editors through the published `.d.ts`;
 * a compile-time check below keeps the two identical).
 */
export interface Result {
  /** Lease id = BullMQ job id, `<runId>.<taskKey>`. */
  leaseId: string;
  /** Run the lease belongs to. */
  runId: string;
  /** `task.id` of the spec (else the lease's task key). */
  taskId: string;
  /** How the rollout ended: `ok`, `model`, `infrastructure` or `caller` ({@link ResultKind}). */
  kind: ResultKind;
  /** What `run()` returned (JSON data), or null. */
  output: unknown;
  /** Finite reward when `kind` is `ok`, inside the spec's `rewardRange` (default [0, 1]); else null. */
  reward: number | null;
  /** `{ type, message }` of what went wrong, or null for `ok`. `type` is a stable string. */
  error: ErrorInfo | null;
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
}

// Fails to compile when Result and ResultSchema drift apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const resultMatchesSchema: Same<Result, z.infer<typeof ResultSchema>> = true;
void resultMatchesSchema;

/** The fields of a Result written to a results JSONL file, in order. */
export const RESULT_LINE_FIELDS = [
  'leaseId', 'runId', 'taskId', 'kind', 'reward', 'output', 'error',
  'attempts', 'redispatched', 'worker', 'queuedMs', 'runMs', 'finishedAt', 'cost', 'cached',
] as const satisfies readonly (keyof Result)[];
