import { CallerError } from './errors.js';
import type { CostReceipt } from './result.js';

/** Most characters of a receipt's `id` and `label` (as `CostReceiptSchema` says). */
const MAX_TEXT = 256;
const FIELDS: ReadonlySet<string> = new Set(['id', 'usd', 'label', 'units', 'paidCall']);
/** `PaidCallDetailSchema`'s fields and their checks, mirrored here without zod. */
const PAID_CALL_TEXT: Readonly<Record<string, readonly [min: number, max: number, required: boolean]>> = {
  channel: [1, 64, true], actor: [1, 256, true], phase: [1, 256, false], model: [1, 256, true], error: [0, 1024, false],
};
const PAID_CALL_AMOUNTS = ['actualCostUsd', 'estimatedCostUsd'] as const;
const PAID_CALL_FIELDS: ReadonlySet<string> = new Set([...Object.keys(PAID_CALL_TEXT), ...PAID_CALL_AMOUNTS, 'timestamp', 'costUnknown', 'usageUnknown', 'customTokenPricing', 'tags']);
const PRICING_FIELDS: Readonly<Record<string, boolean>> = { inputUsdPerMillion: true, cachedInputUsdPerMillion: false, cacheWriteUsdPerMillion: false, outputUsdPerMillion: true };

function isRecord(value: unknown): value is Record<PropertyKey, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

const isAmount = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** What is wrong with a receipt's `paidCall` (as `PaidCallDetailSchema` checks it), or undefined. */
function paidCallProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'paidCall must be a plain object';
  for (const key of Object.keys(value)) if (!PAID_CALL_FIELDS.has(key)) return `unknown field "paidCall.${key}"`;
  for (const [key, [min, max, required]] of Object.entries(PAID_CALL_TEXT)) {
    const text = value[key];
    if (text === undefined && !required) continue;
    if (typeof text !== 'string' || text.length < min || text.length > max) return `paidCall.${key} must be a string of ${min} to ${max} characters`;
  }
  const { timestamp, costUnknown, usageUnknown, customTokenPricing, tags } = value;
  if (typeof timestamp !== 'number' || !Number.isSafeInteger(timestamp) || timestamp < 0) return 'paidCall.timestamp must be a whole number of epoch ms';
  if (typeof costUnknown !== 'boolean') return 'paidCall.costUnknown must be a boolean';
  if (usageUnknown !== undefined && typeof usageUnknown !== 'boolean') return 'paidCall.usageUnknown must be a boolean';
  for (const key of PAID_CALL_AMOUNTS) if (value[key] !== undefined && !isAmount(value[key])) return `paidCall.${key} must be a finite number >= 0`;
  if (customTokenPricing !== undefined) {
    if (!isRecord(customTokenPricing)) return 'paidCall.customTokenPricing must be a plain object';
    for (const key of Object.keys(customTokenPricing)) if (!(key in PRICING_FIELDS)) return `unknown field "paidCall.customTokenPricing.${key}"`;
    for (const [key, required] of Object.entries(PRICING_FIELDS)) {
      const rate = customTokenPricing[key];
      if ((rate !== undefined || required) && !isAmount(rate)) return `paidCall.customTokenPricing.${key} must be a finite number >= 0`;
    }
  }
  if (tags !== undefined) {
    if (!isRecord(tags)) return 'paidCall.tags must be a plain object of strings';
    for (const key of Reflect.ownKeys(tags)) {
      const tag = tags[key];
      if (typeof key !== 'string' || key.length > 64 || typeof tag !== 'string' || tag.length > 256) return `paidCall.tags.${String(key)} must be a string of at most 256 characters under a key of at most 64`;
    }
  }
  return undefined;
}

function problemOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `expected an object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`;
  const receipt = value as Record<string, unknown>;
  for (const key of Object.keys(receipt)) if (!FIELDS.has(key)) return `unknown field "${key}"; a receipt has id, usd, label, units and paidCall`;
  const { id, usd, label, units, paidCall } = receipt;
  if (typeof id !== 'string' || id.length < 1 || id.length > MAX_TEXT) return `id must be a string of 1 to ${MAX_TEXT} characters`;
  if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) return 'usd must be a finite number >= 0';
  if (label !== undefined && (typeof label !== 'string' || label.length > MAX_TEXT)) return `label must be a string of at most ${MAX_TEXT} characters`;
  if (units !== undefined) {
    if (!isRecord(units)) return 'units must be a plain object of numbers';
    for (const key of Reflect.ownKeys(units)) {
      const unit = units[key];
      if (typeof key !== 'string' || typeof unit !== 'number' || !Number.isFinite(unit)) return `units.${String(key)} must be a finite number`;
    }
  }
  return paidCall === undefined ? undefined : paidCallProblem(paidCall);
}

/** A JSON copy of a checked `paidCall` (plain data only, so the copy is what the schema would give). */
const copyOf = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * `value` as a {@link CostReceipt}, accepting what `CostReceiptSchema.parse` accepts, without zod:
 * a rollout child checks every receipt synchronously (it is sent before `ctx.recordCost` returns,
 * so it survives a crash right after), and loading zod and the schemas would cost every child
 * ~100 ms of CPU at start and ~7 MB of heap that each of its garbage collections walks.
 * @returns a copy holding only the receipt's fields.
 * @throws CallerError naming the first problem: a malformed receipt is a bug of the code that
 *   records it (the run, the Dispatch), the same on every rollout, so its Result is `caller`
 *   (fresh-user report: as a TypeError it ended `model`, and the gateway kept that answer).
 */
export function checkCostReceipt(value: unknown): CostReceipt {
  const problem = problemOf(value);
  if (problem !== undefined) throw new CallerError(`invalid cost receipt: ${problem}`);
  const { id, usd, label, units, paidCall } = value as CostReceipt;
  return { id, usd, ...(label !== undefined ? { label } : {}), ...(units !== undefined ? { units: { ...units } } : {}), ...(paidCall !== undefined ? { paidCall: copyOf(paidCall) } : {}) };
}
