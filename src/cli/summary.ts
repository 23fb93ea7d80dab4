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
  /** On a stop: the lease whose Result stopped the run (null when unknown) and why. */
  readonly stop?: { readonly leaseId: string | null; readonly reason: string };
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

/** Error types named per kind in the summary; the rest are counted as "N more". */
const MAX_ERROR_TYPES = 6;

/** `(NonZeroExit 7, RunTimeout 4)`: a kind's Results by error type, most frequent first; '' for none. */
export function errorTypeBreakdown(types: ReadonlyMap<string, number>): string {
  if (types.size === 0) return '';
  const sorted = [...types.entries()].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  const named = sorted.slice(0, MAX_ERROR_TYPES).map(([type, count]) => `${type} ${count}`);
  const rest = sorted.slice(MAX_ERROR_TYPES).reduce((sum, [, count]) => sum + count, 0);
  return `(${named.join(', ')}${rest > 0 ? `, ${rest} of ${sorted.length - MAX_ERROR_TYPES} other type(s)` : ''})`;
}

/**
 * The mean reward over every Result counted, where a Result that is not `ok` (it has no usable
 * reward: the rollout failed, or its reward was refused) counts as 0: what a run earned per
 * rollout, beside the mean over `ok` only, which a run that fails often flatters. Null when no
 * Result was counted.
 */
export function meanRewardOverAll(tally: Pick<RunTally, 'okRewards' | 'total'>): number | null {
  if (tally.total === 0) return null;
  return tally.okRewards.reduce((a, b) => a + b, 0) / tally.total;
}

/**
 * The end-of-run summary: counts by kind, each kind other than `ok` broken down by error type
 * (`model 11 (NonZeroExit 7, RunTimeout 4)`), the mean reward over `ok` with how rewards are
 * spread, the mean reward over all Results (not-ok counts 0; see {@link meanRewardOverAll}),
 * p50/p95 run time, results per worker, re-dispatches, duplicates dropped, how many Results (and
 * rewards) were computed on truncated output, how many came from the evaluation cache (when any
 * did), and the results file; on a stop, which lease stopped it and why. Covers every line of the results file, so a re-attached run
 * summarises the whole run, not only what this process received.
 */
export function formatSummary(input: SummaryInput): string {
  const { tally } = input;
  const lines = [MSG.summaryTitle(input.runId, tally.total, input.total, input.end)];
  // Right under the title: a script reading stdout learns why the run stopped without stderr.
  if (input.stop) lines.push(MSG.summaryStop(input.stop.leaseId, input.stop.reason));
  const rewards = tally.okRewards;
  const okMean = rewards.length > 0 ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null;
  for (const kind of KINDS) {
    const extra = kind === 'ok'
      ? okMean !== null ? MSG.summaryRewards(okMean.toFixed(3), rewardSpread(rewards)) : ''
      : errorTypeBreakdown(tally.errorTypes[kind]);
    lines.push(MSG.summaryKind(kind, tally.kinds[kind], extra));
  }
  const allMean = meanRewardOverAll(tally);
  if (allMean !== null) lines.push(MSG.summaryMeanReward(allMean.toFixed(3), tally.total, okMean === null ? null : okMean.toFixed(3), rewards.length));
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
