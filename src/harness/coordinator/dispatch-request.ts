import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../../lease/index.js';
import { canonicalJson, CostReceiptSchema, DispatchRequestSchema, parseResult, type CostReceipt, type DispatchRequest, type Result } from '../../spec/index.js';
import type { DispatchContext, DispatchPlacement } from '../worker/index.js';
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

/**
 * The fingerprint of what a call asks for: sha256 (hex) of the JSON, keys sorted, of its
 * scenario, rep, seed, generation and cycleId. Two calls of one `(runAttemptId, cellId)` share
 * one lease only when their fingerprints are equal. The placement is left out: it says where
 * the work runs, not what it is (a retry may be routed elsewhere).
 */
export function requestFingerprint(request: DispatchRequest): string {
  const { scenario, rep, seed, generation, cycleId } = request;
  return createHash('sha256').update(canonicalJson({ scenario, rep, seed, generation: generation ?? null, cycleId: cycleId ?? null })).digest('hex');
}

/** The call error for a request that reuses the cell of another request (it would get that one's answer). */
export function conflictError(request: DispatchRequest): DispatchError {
  return new DispatchError('caller', {
    type: 'DispatchConflict',
    message: `cell ${JSON.stringify(request.cellId)} of run attempt ${JSON.stringify(request.runAttemptId)} was dispatched with another request ` +
      '(its scenario, rep, seed, generation or cycleId differ); a cellId names one request within a run attempt: give this request a cellId of its own, or a new runAttemptId',
  });
}

/** A delivered dispatch's answer as kept: the Result, the fingerprint of its request, and until when it is kept. */
export interface KeptAnswer {
  readonly result: Result;
  /** Undefined for an answer kept by an earlier version (a bare Result). */
  readonly fingerprint: string | undefined;
  /** Epoch ms (the keeper's clock) the answer expires at; undefined for an answer of an earlier version. */
  readonly keptUntilMs: number | undefined;
}

/** The text {@link readAnswer} reads back. */
export function answerText(result: Result, fingerprint: string | undefined, keptUntilMs: number): string {
  return JSON.stringify({ fingerprint, result, keptUntilMs });
}

/** The kept answer of a delivered dispatch, or undefined. */
export async function readAnswer(redis: Redis, key: string): Promise<KeptAnswer | undefined> {
  const json = await redis.get(key);
  if (json === null) return undefined;
  const raw = JSON.parse(json) as { fingerprint?: unknown; result?: unknown; keptUntilMs?: unknown };
  const current = 'result' in raw;
  const parsed = parseResult(current ? raw.result : raw);
  if (!parsed.success) return undefined;
  return {
    result: parsed.data,
    fingerprint: typeof raw.fingerprint === 'string' ? raw.fingerprint : undefined,
    keptUntilMs: current && typeof raw.keptUntilMs === 'number' ? raw.keptUntilMs : undefined,
  };
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
