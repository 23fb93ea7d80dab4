import { z } from 'zod';

/**
 * How a rollout ended. Report, never raise (see DESIGN.md "Result kinds"):
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
export type Result = z.infer<typeof ResultSchema>;

/** The fields of a Result written to a results JSONL file, in order. */
export const RESULT_LINE_FIELDS = [
  'leaseId', 'runId', 'taskId', 'kind', 'reward', 'output', 'error',
  'attempts', 'redispatched', 'worker', 'queuedMs', 'runMs', 'finishedAt', 'cost', 'cached',
] as const satisfies readonly (keyof Result)[];
