import { summaryRow } from './message-parts.js';

/** Most characters of a stop's reason in the summary row: one line of a terminal or two; the whole text is on stderr. */
const MAX_STOP_REASON_CHARS = 240;

/** `text` on one line (whitespace runs as one space), cut to `max` characters with "…". */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Rows of the summary printed at the end of a run. */
export const SUMMARY_MSG = {
  summaryTitle: (runId: string, delivered: number, total: number | null, state: string) =>
    `Run ${runId}: ${delivered}${total === null ? '' : ` of ${total}`} result(s), ${state}`,
  /**
   * Which lease stopped the run and why (`reason`: the caller Result's `Type: message`, already
   * redacted as every Result error is; or the stop's own message when no lease is known, e.g. a
   * run stopped before this session), on one bounded line: docs/cli.md promises it on stdout.
   */
  summaryStop: (leaseId: string | null, reason: string) =>
    summaryRow('stopped by', oneLine(leaseId === null ? reason : `lease ${leaseId}: ${reason}`, MAX_STOP_REASON_CHARS)),
  summaryKind: (kind: string, count: number, extra: string) => summaryRow(kind, `${String(count).padStart(6)}${extra ? `   ${extra}` : ''}`),
  summaryRewards: (mean: string, spread: string) => `mean reward ${mean} over ok${spread ? ` (${spread})` : ''}`,
  /** `okMean` null: no Result is ok. A Result that is not ok counts 0 in the mean over all (summary.ts meanRewardOverAll). */
  summaryMeanReward: (allMean: string, total: number, okMean: string | null, ok: number) =>
    summaryRow('mean reward', `${allMean} over all ${total} (a Result that is not ok counts as 0)${okMean === null ? '; no ok Result' : `, ${okMean} over the ${ok} ok`}`),
  summaryRunMs: (p50: string, p95: string) => summaryRow('run time', `p50 ${p50}, p95 ${p95}`),
  summaryWorkers: (spread: string) => summaryRow('results per worker', spread),
  summaryCounter: (label: string, value: number | string) => summaryRow(label, String(value).padStart(6)),
  summaryCost: (cost: string) => summaryRow('cost', cost),
  costCeilingReached: (totalUsd: number, ceilingUsd: number) =>
    `cost ceiling reached: $${totalUsd.toFixed(4)} of $${ceilingUsd} (--cost-ceiling-usd / costCeilingUsd); no new leases are dispatched, waiting ones are removed, running ones finish`,
  summaryTruncated: (count: number, ok: number) =>
    summaryRow('truncated output', `${String(count).padStart(6)}${count > 0 ? `   ${ok} reward(s) computed on output cut at maxOutputBytes (head and tail kept)` : ''}`),
  summaryCached: (count: number) => summaryRow('from the eval cache', `${String(count).padStart(6)}   Result(s) of an earlier identical evaluation, not run again (their worker and run time are that run's)`),
  summaryFile: (file: string) => summaryRow('results file', file),
} as const;
