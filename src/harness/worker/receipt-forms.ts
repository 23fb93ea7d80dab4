import type { CostReceipt, PaidCallDetail } from '../../spec/index.js';
import type { CostChannel, CostReceiptInput, CostUsage, HarnessCostReceipt } from './harness-shapes.js';

/**
 * The three forms one paid call's receipt takes across the seam, and the conversions between
 * them: the Dispatch's `receipt(value)` (the harness' `CostReceiptInput`) becomes a rollout-queue
 * `CostReceipt` (stored per lease, `usd` + `units` + `paidCall`), which the coordinator replays
 * through the harness meter's `runPaidCall` as the same `CostReceiptInput`, and the gateway
 * answers as the harness' `CostReceipt` (`receipts`). Type-only imports: the HTTP client loads
 * this module without zod.
 */

/** What a paid call was, before its receipt: the harness ledger's pending call. */
export interface PaidCallStart {
  readonly callId: string;
  readonly channel: CostChannel;
  readonly actor: string;
  readonly phase?: string;
  /** The model the call named up front (`input.model`), for a failure without a receipt. */
  readonly model?: string;
  readonly tags?: Readonly<Record<string, string>>;
  /** Epoch ms. */
  readonly timestamp: number;
}

const TOKEN_FIELDS = ['inputTokens', 'outputTokens', 'reasoningTokens', 'cachedTokens', 'cacheWriteTokens'] as const;
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
const isAmount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/**
 * What is wrong with a `receipt(value)` result, as the harness ledger checks it (token counts
 * whole and ≥ 0, `reasoningTokens` ≤ `outputTokens`, a model, at most one of `actualCostUsd`,
 * `estimatedCostUsd`, `customTokenPricing`, no amount beside `costUnknown: true`), or undefined.
 */
export function receiptInputProblem(observed: unknown): string | undefined {
  if (observed === null || typeof observed !== 'object') return `expected an object { model, inputTokens, outputTokens, actualCostUsd? }, got ${observed === null ? 'null' : typeof observed}`;
  const input = observed as Record<string, unknown>;
  if (typeof input.model !== 'string' || input.model.length === 0 || input.model.length > 256) return 'model must be a string of 1 to 256 characters';
  for (const field of TOKEN_FIELDS) {
    if ((input[field] !== undefined || field === 'inputTokens' || field === 'outputTokens') && !isCount(input[field])) return `${field} must be a whole number >= 0`;
  }
  if (isCount(input.reasoningTokens) && input.reasoningTokens > (input.outputTokens as number)) return 'reasoningTokens must not exceed outputTokens';
  const amounts = (['actualCostUsd', 'estimatedCostUsd', 'customTokenPricing'] as const).filter((field) => input[field] !== undefined);
  if (amounts.length > 1) return `give only one of actualCostUsd, estimatedCostUsd and customTokenPricing, got ${amounts.join(' and ')}`;
  for (const field of ['actualCostUsd', 'estimatedCostUsd'] as const) if (input[field] !== undefined && !isAmount(input[field])) return `${field} must be a finite number >= 0`;
  const pricing = input.customTokenPricing as Record<string, unknown> | undefined;
  if (pricing !== undefined) {
    if (pricing === null || typeof pricing !== 'object') return 'customTokenPricing must be an object of per-million rates';
    for (const rate of ['inputUsdPerMillion', 'outputUsdPerMillion']) if (!isAmount(pricing[rate])) return `customTokenPricing.${rate} must be a finite number >= 0`;
    for (const rate of ['cachedInputUsdPerMillion', 'cacheWriteUsdPerMillion']) if (pricing[rate] !== undefined && !isAmount(pricing[rate])) return `customTokenPricing.${rate} must be a finite number >= 0`;
  }
  if (input.costUnknown === true && amounts.some((field) => field !== 'customTokenPricing')) return 'costUnknown: true cannot go with an amount';
  return undefined;
}

/** US dollars of `usage` at custom per-million rates (cached and cache-write tokens at their rates, else the input rate), as the harness ledger computes it. */
function priced(usage: CostUsage, pricing: NonNullable<CostReceiptInput['customTokenPricing']>): number {
  const input = pricing.inputUsdPerMillion;
  return (usage.inputTokens * input + (usage.cachedTokens ?? 0) * (pricing.cachedInputUsdPerMillion ?? input)
    + (usage.cacheWriteTokens ?? 0) * (pricing.cacheWriteUsdPerMillion ?? input) + usage.outputTokens * pricing.outputUsdPerMillion) / 1_000_000;
}

/** The receipt of a paid call with no usable `receipt(...)`: unknown usage and cost (the harness' `unknownReceipt`). */
export const unknownReceiptInput = (model: string): CostReceiptInput => ({ model, inputTokens: 0, outputTokens: 0, costUnknown: true, usageUnknown: true });

/**
 * A checked `CostReceiptInput` as rollout-queue's receipt: `usd` is the amount it gave (custom
 * pricing applied), else 0 with `paidCall.costUnknown` (the coordinator's ledger prices tokens by model);
 * `units` holds the token counts; `label` the model. `error` marks a call that failed after paying.
 */
export function receiptFromInput(start: PaidCallStart, observed: CostReceiptInput, error?: string): CostReceipt {
  const units: Record<string, number> = {};
  for (const field of TOKEN_FIELDS) if (observed[field] !== undefined) units[field] = observed[field] as number;
  const known = observed.actualCostUsd ?? observed.estimatedCostUsd ?? (observed.customTokenPricing ? priced(observed, observed.customTokenPricing) : undefined);
  const paidCall: PaidCallDetail = {
    channel: start.channel,
    actor: start.actor,
    ...(start.phase !== undefined ? { phase: start.phase } : {}),
    model: observed.model,
    timestamp: start.timestamp,
    costUnknown: observed.costUnknown === true || known === undefined,
    ...(observed.usageUnknown !== undefined ? { usageUnknown: observed.usageUnknown } : {}),
    ...(observed.actualCostUsd !== undefined ? { actualCostUsd: observed.actualCostUsd } : {}),
    ...(observed.estimatedCostUsd !== undefined ? { estimatedCostUsd: observed.estimatedCostUsd } : {}),
    ...(observed.customTokenPricing !== undefined ? { customTokenPricing: { ...observed.customTokenPricing } } : {}),
    ...(error !== undefined ? { error: error.slice(0, 1024) } : {}),
    ...(start.tags !== undefined ? { tags: { ...start.tags } } : {}),
  };
  return { id: start.callId, usd: observed.costUnknown === true ? 0 : (known ?? 0), label: observed.model, units, paidCall };
}

/**
 * The `CostReceiptInput` a receipt was made from, for a replay through the harness meter's
 * `runPaidCall`: the Dispatch's own input for a receipt of `runPaidCall(input)`; for an older
 * receipt (`record`, `runPaidCall(callId, fn)`) its `usd` as `actualCostUsd`, `label` as model.
 */
export function receiptInputOf(receipt: CostReceipt): { start: Omit<PaidCallStart, 'timestamp'>; observed: CostReceiptInput } {
  const units = receipt.units ?? {};
  const usage = { inputTokens: units.inputTokens ?? 0, outputTokens: units.outputTokens ?? 0, ...Object.fromEntries(TOKEN_FIELDS.slice(2).filter((f) => units[f] !== undefined).map((f) => [f, units[f]])) } as CostUsage;
  const detail = receipt.paidCall;
  if (!detail) {
    const model = receipt.label ?? 'unknown';
    return { start: { callId: receipt.id, channel: 'agent', actor: receipt.label ?? 'dispatch', model }, observed: { model, ...usage, actualCostUsd: receipt.usd } };
  }
  const amount = detail.actualCostUsd !== undefined ? { actualCostUsd: detail.actualCostUsd }
    : detail.estimatedCostUsd !== undefined ? { estimatedCostUsd: detail.estimatedCostUsd }
      : detail.customTokenPricing !== undefined ? { customTokenPricing: detail.customTokenPricing }
        : detail.usageUnknown === true ? { costUnknown: true } : {};
  return {
    start: { callId: receipt.id, channel: detail.channel, actor: detail.actor, ...(detail.phase !== undefined ? { phase: detail.phase } : {}), model: detail.model, ...(detail.tags ? { tags: detail.tags } : {}) },
    observed: { model: detail.model, ...usage, ...amount, ...(detail.usageUnknown !== undefined ? { usageUnknown: detail.usageUnknown } : {}) },
  };
}

/** A receipt in the harness' `CostReceipt` shape (the `receipts` of `POST /dispatch`); `fallbackMs` dates a receipt without a timestamp. */
export function harnessReceiptOf(receipt: CostReceipt, fallbackMs: number): HarnessCostReceipt {
  const { start, observed } = receiptInputOf(receipt);
  const detail = receipt.paidCall;
  const pricing = observed.customTokenPricing;
  return {
    status: 'settled',
    callId: receipt.id,
    channel: start.channel,
    phase: start.phase ?? 'dispatch',
    actor: start.actor,
    model: observed.model,
    inputTokens: observed.inputTokens,
    outputTokens: observed.outputTokens,
    ...(observed.reasoningTokens !== undefined ? { reasoningTokens: observed.reasoningTokens } : {}),
    ...(observed.cachedTokens !== undefined ? { cachedTokens: observed.cachedTokens } : {}),
    ...(observed.cacheWriteTokens !== undefined ? { cacheWriteTokens: observed.cacheWriteTokens } : {}),
    costUsd: receipt.usd,
    costUnknown: detail?.costUnknown ?? false,
    ...(observed.usageUnknown !== undefined ? { usageUnknown: observed.usageUnknown } : {}),
    ...(pricing ? { pricing: { inputUsdPerThousand: pricing.inputUsdPerMillion / 1000, ...(pricing.cachedInputUsdPerMillion !== undefined ? { cachedInputUsdPerThousand: pricing.cachedInputUsdPerMillion / 1000 } : {}), ...(pricing.cacheWriteUsdPerMillion !== undefined ? { cacheWriteUsdPerThousand: pricing.cacheWriteUsdPerMillion / 1000 } : {}), outputUsdPerThousand: pricing.outputUsdPerMillion / 1000 } } : {}),
    ...(observed.actualCostUsd !== undefined ? { actualCostUsd: observed.actualCostUsd } : {}),
    ...(observed.estimatedCostUsd !== undefined ? { estimatedCostUsd: observed.estimatedCostUsd } : {}),
    ...(detail?.error !== undefined ? { error: detail.error } : {}),
    ...(start.tags !== undefined ? { tags: start.tags } : {}),
    timestamp: detail?.timestamp ?? fallbackMs,
  };
}

/**
 * The `CostReceiptInput` of a receipt in the harness' shape (as `POST /dispatch` answers it),
 * for the HTTP client's replay: its amount as given (`pricing` back to per-million rates); a
 * receipt the plane could not price (`costUnknown`, no amount) goes without one, so the
 * coordinator's ledger prices its tokens by model.
 */
export function receiptInputFromHarness(receipt: HarnessCostReceipt): CostReceiptInput {
  const usage: CostUsage = {
    inputTokens: receipt.inputTokens, outputTokens: receipt.outputTokens,
    ...(receipt.reasoningTokens !== undefined ? { reasoningTokens: receipt.reasoningTokens } : {}),
    ...(receipt.cachedTokens !== undefined ? { cachedTokens: receipt.cachedTokens } : {}),
    ...(receipt.cacheWriteTokens !== undefined ? { cacheWriteTokens: receipt.cacheWriteTokens } : {}),
  };
  const p = receipt.pricing;
  const amount = receipt.actualCostUsd !== undefined ? { actualCostUsd: receipt.actualCostUsd }
    : receipt.estimatedCostUsd !== undefined ? { estimatedCostUsd: receipt.estimatedCostUsd }
      : p ? { customTokenPricing: { inputUsdPerMillion: p.inputUsdPerThousand * 1000, ...(p.cachedInputUsdPerThousand !== undefined ? { cachedInputUsdPerMillion: p.cachedInputUsdPerThousand * 1000 } : {}), ...(p.cacheWriteUsdPerThousand !== undefined ? { cacheWriteUsdPerMillion: p.cacheWriteUsdPerThousand * 1000 } : {}), outputUsdPerMillion: p.outputUsdPerThousand * 1000 } }
        : !receipt.costUnknown ? { actualCostUsd: receipt.costUsd }
          : receipt.usageUnknown === true ? { costUnknown: true } : {};
  return { model: receipt.model, ...usage, ...amount, ...(receipt.usageUnknown !== undefined ? { usageUnknown: receipt.usageUnknown } : {}) };
}
