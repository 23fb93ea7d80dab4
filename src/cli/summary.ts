import type { CostSummary, ResultKind } from '../spec/index.js';
import { MSG } from './messages.js';
import { percentile, type RunTally } from './run-tally.js';

/** How a run's collection ended, as the summary says it. */
export type RunEnd = 'completed' | 'stopped on a caller result' | 'interrupted' | 'cancelled' | 'incomplete' | 'failed';

/** What the summary shows. */
export interface SummaryInput {
  readonly runId: string;
  /** Specs of the run, when known. */
  readonly total: number | null;
  readonly end: RunEnd;
  readonly tally: RunTally;
  /** Counters from the run record in Redis; undefined when it could not be read. */
  readonly counters: { readonly redispatched: number; readonly duplicatesDropped: number } | undefined;
  /** Absolute path of the results file. */
  readonly file: string;
}

const KINDS: readonly ResultKind[] = ['ok', 'model', 'infrastructure', 'caller'];

/** Milliseconds as `850 ms` or `12.3 s`. */
export function formatMs(ms: number | undefined): string {
  if (ms === undefined) return '-';
  return ms < 10_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function rewardSpread(rewards: readonly number[]): string {
  const counts = new Map<number, number>();
  for (const reward of rewards) counts.set(reward, (counts.get(reward) ?? 0) + 1);
  if (counts.size > 5) return `min ${Math.min(...rewards)}, max ${Math.max(...rewards)}`;
  return [...counts.entries()]
    .sort(([a], [b]) => b - a)
    .map(([reward, count]) => `reward ${reward}: ${count}`)
    .join(', ');
}

/**
 * The end-of-run summary: counts by kind (with the mean reward over `ok` and how rewards are
 * spread), p50/p95 run time, results per worker, re-dispatches, duplicates dropped, how many
 * Results (and rewards) were computed on truncated output, how many came from the evaluation
 * cache (when any did), and the
 * results file. Covers every line of the results file, so a re-attached run summarises the
 * whole run, not only what this process received.
 */
export function formatSummary(input: SummaryInput): string {
  const { tally } = input;
  const lines = [MSG.summaryTitle(input.runId, tally.total, input.total, input.end)];
  for (const kind of KINDS) {
    const rewards = tally.okRewards;
    const extra = kind === 'ok' && rewards.length > 0
      ? MSG.summaryRewards((rewards.reduce((a, b) => a + b, 0) / rewards.length).toFixed(3), rewardSpread(rewards))
      : '';
    lines.push(MSG.summaryKind(kind, tally.kinds[kind], extra));
  }
  lines.push(MSG.summaryRunMs(formatMs(percentile(tally.runMs, 50)), formatMs(percentile(tally.runMs, 95))));
  const workers = [...tally.workers.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, count]) => `${name}: ${count}`);
  lines.push(MSG.summaryWorkers(workers.length > 0 ? workers.join(', ') : '-'));
  lines.push(MSG.summaryCounter('redispatched', input.counters?.redispatched ?? tally.redispatched));
  lines.push(MSG.summaryCounter('duplicates dropped', input.counters?.duplicatesDropped ?? 'n/a'));
  lines.push(MSG.summaryCost(formatCost(tally.cost.summary())));
  lines.push(MSG.summaryTruncated(tally.truncated, tally.truncatedOk));
  // Only where a run used the cache (--class evaluation): its per-worker counts name the worker of the cached run.
  if (tally.cached > 0) lines.push(MSG.summaryCached(tally.cached));
  // Only where a run opted in: its rewards may have been scored on echoed gold.
  if (tally.goldVisible > 0) lines.push(MSG.summaryGoldVisible(tally.goldVisible));
  lines.push(MSG.summaryFile(input.file));
  return lines.join('\n');
}

/**
 * A cost summary in one line: `$0.0300 (3 receipts); inputTokens 1200, outputTokens 300; per model:
 * gpt-x $0.0200 (2), judge $0.0100 (1)`, or `unknown (no receipts)`: unknown cost is never $0.
 */
export function formatCost(cost: CostSummary): string {
  if (cost.totalUsd === null) return 'unknown (no receipts)';
  const units = Object.entries(cost.units).map(([unit, n]) => `${unit} ${n}`).join(', ');
  const labels = Object.entries(cost.byLabel).sort(([a], [b]) => a.localeCompare(b)).map(([label, v]) => `${label} $${v.usd.toFixed(4)} (${v.receipts})`).join(', ');
  return `$${cost.totalUsd.toFixed(4)} (${cost.receipts} receipt${cost.receipts === 1 ? '' : 's'})${units ? `; ${units}` : ''}${labels ? `; per model: ${labels}` : ''}`;
}
