import type { CostReceipt } from './result.js';

/** Totals of a set of cost receipts (a run, a results file). */
export interface CostSummary {
  /** Receipts counted (each `id` once). */
  readonly receipts: number;
  /** Sum of `usd`, US dollars; `null` when no receipt was recorded (unknown, never 0). */
  readonly totalUsd: number | null;
  /** Sums of each `units` key over all receipts (`{ inputTokens: 1200, outputTokens: 300 }`). */
  readonly units: Readonly<Record<string, number>>;
  /** Per `label` (the model, by convention; `(unlabelled)` without one): receipts, USD, units. */
  readonly byLabel: Readonly<Record<string, { readonly receipts: number; readonly usd: number; readonly units: Readonly<Record<string, number>> }>>;
}

/**
 * Adds up receipts, counting each receipt `id` (the call id) once, however often it appears
 * (a lease re-dispatched after its worker died carries the receipts of every attempt).
 */
export class CostTally {
  private readonly seen = new Set<string>();
  private usd = 0;
  private readonly units: Record<string, number> = {};
  private readonly byLabel: Record<string, { receipts: number; usd: number; units: Record<string, number> }> = {};

  /**
   * Counts receipts not seen before: by `id` within `scope` (the lease id: call ids need only be
   * unique within their lease).
   */
  add(receipts: readonly CostReceipt[] | null | undefined, scope = ''): void {
    for (const receipt of receipts ?? []) {
      const key = `${scope}\u0000${receipt.id}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      this.usd += receipt.usd;
      const label = (this.byLabel[receipt.label ?? '(unlabelled)'] ??= { receipts: 0, usd: 0, units: {} });
      label.receipts += 1;
      label.usd += receipt.usd;
      for (const [unit, n] of Object.entries(receipt.units ?? {})) {
        this.units[unit] = (this.units[unit] ?? 0) + n;
        label.units[unit] = (label.units[unit] ?? 0) + n;
      }
    }
  }

  /** Sum of `usd` so far (0 before any receipt; {@link summary} says `null` then). */
  get totalUsd(): number {
    return this.usd;
  }

  /** The totals so far. */
  summary(): CostSummary {
    return { receipts: this.seen.size, totalUsd: this.seen.size === 0 ? null : this.usd, units: { ...this.units }, byLabel: structuredClone(this.byLabel) };
  }
}
