import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { CostReceiptSchema, DispatchRequestSchema, ResultSchema, type CostReceipt, type DispatchRequest, type Result } from '../spec/index.js';
import type { DispatchContext, DispatchPlacement } from '../dispatch/index.js';
import { DispatchError } from './dispatch-errors.js';

/** The request a call stands for, checked like a gateway body. @throws DispatchError (caller) naming the field. */
export function checkedRequest(scenario: unknown, ctx: DispatchContext): DispatchRequest {
  const raw = {
    scenario: scenario === undefined ? null : scenario,
    cellId: ctx?.cellId,
    runAttemptId: ctx?.runAttemptId,
    rep: ctx?.rep ?? 0,
    seed: ctx?.seed ?? 0,
    ...(ctx?.generation !== undefined ? { generation: ctx.generation } : {}),
    ...(ctx?.cycleId !== undefined ? { cycleId: ctx.cycleId } : {}),
    ...(ctx?.placement !== undefined ? { placement: ctx.placement } : {}),
  };
  const parsed = DispatchRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') || '(ctx)';
    throw new DispatchError('caller', { type: 'InvalidDispatch', message: `dispatch ${field === 'scenario' ? '' : 'ctx.'}${field}: ${issue?.message ?? 'invalid'}; give ctx.cellId and ctx.runAttemptId as non-empty strings and the scenario as JSON data` });
  }
  return parsed.data;
}

/** The queue and `spec.placement` labels of a placement. */
export function placementOf(placement: DispatchPlacement | undefined, fallback: string): { queue: string; labels: Record<string, string> } {
  if (placement === undefined) return { queue: fallback, labels: {} };
  if (typeof placement === 'string') return { queue: placement, labels: {} };
  const { queue, ...labels } = placement;
  return { queue: queue ?? fallback, labels };
}

/** The kept answer of a delivered dispatch, or undefined. */
export async function readAnswer(redis: Redis, key: string): Promise<Result | undefined> {
  const json = await redis.get(key);
  if (json === null) return undefined;
  const parsed = ResultSchema.safeParse(JSON.parse(json));
  return parsed.success ? parsed.data : undefined;
}

/** Receipts the worker stored for a lease so far (`cost:<id>` fields of its ledger hash). */
export async function readReceipts(redis: Redis, keys: QueueKeys, leaseId: string): Promise<CostReceipt[]> {
  const hash = await redis.hgetall(keys.lease(leaseId));
  return Object.entries(hash)
    .filter(([field]) => field.startsWith('cost:'))
    .flatMap(([, json]) => {
      const parsed = CostReceiptSchema.safeParse(JSON.parse(json));
      return parsed.success ? [parsed.data] : [];
    });
}
