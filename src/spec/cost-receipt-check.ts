import { CallerError } from './errors.js';
import type { CostReceipt } from './result.js';

/** Most characters of a receipt's `id` and `label` (as `CostReceiptSchema` says). */
const MAX_TEXT = 256;
const FIELDS: ReadonlySet<string> = new Set(['id', 'usd', 'label', 'units']);

function isRecord(value: unknown): value is Record<PropertyKey, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function problemOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `expected an object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`;
  const receipt = value as Record<string, unknown>;
  for (const key of Object.keys(receipt)) if (!FIELDS.has(key)) return `unknown field "${key}"; a receipt has id, usd, label and units`;
  const { id, usd, label, units } = receipt;
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
  return undefined;
}

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
  const { id, usd, label, units } = value as CostReceipt;
  return { id, usd, ...(label !== undefined ? { label } : {}), ...(units !== undefined ? { units: { ...units } } : {}) };
}
