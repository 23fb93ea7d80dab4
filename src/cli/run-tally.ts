import { CostTally, RESULT_LINE_FIELDS, type Result, type ResultKind } from '../spec/index.js';

/** A Result as written to a results file: exactly {@link RESULT_LINE_FIELDS}, in that order. */
export type ResultLine = { [K in (typeof RESULT_LINE_FIELDS)[number]]: Result[K] };

/** The ordered line object of a Result (missing fields become null, extra fields are dropped). */
export function toResultLine(result: Result): ResultLine {
  const line: Record<string, unknown> = {};
  for (const field of RESULT_LINE_FIELDS) line[field] = result[field] ?? null;
  return line as ResultLine;
}

/** How {@link RunTally.errorTypes} names a Result that is not `ok` and carries no error type. */
export const NO_ERROR_TYPE = '(no type)';

/** Running totals of the results of one run, for the summary. One pass, no second read of the file. */
export class RunTally {
  /** Results by kind. */
  readonly kinds: Record<ResultKind, number> = { ok: 0, model: 0, infrastructure: 0, caller: 0 };
  /** Rewards of `ok` results. */
  readonly okRewards: number[] = [];
  /**
   * Results of each kind by `error.type` (`model` → `NonZeroExit` 7, `RunTimeout` 4): what the
   * summary breaks each kind down by. A Result of a kind other than `ok` without an error type
   * counts under `(no type)`.
   */
  readonly errorTypes: Record<ResultKind, Map<string, number>> = { ok: new Map(), model: new Map(), infrastructure: new Map(), caller: new Map() };
  /** `runMs` of every result that has one. */
  readonly runMs: number[] = [];
  /** Results per worker name (`(none)` when a result names no worker). */
  readonly workers = new Map<string, number>();
  /** Sum of the per-result `redispatched` counts. */
  redispatched = 0;
  /** Results whose output a runner truncated (`output.stdoutTruncated` / `output.stderrTruncated`). */
  truncated = 0;
  /** `ok` results among {@link truncated}: rewards computed on truncated output. */
  truncatedOk = 0;
  /** Results answered from the evaluation cache (`cached: true`), never run by a worker for this run. */
  cached = 0;
  /** Results whose run received the whole task, gold included (`goldVisibleToRun: true`). */
  goldVisible = 0;
  /** Results counted. */
  total = 0;
  /** Cost receipts of the results (each call id once). */
  readonly cost = new CostTally();

  /** Counts one result line. */
  add(line: Pick<ResultLine, 'kind' | 'reward' | 'runMs' | 'worker' | 'redispatched'> & { readonly error?: { readonly type?: unknown } | null; readonly output?: unknown; readonly cost?: ResultLine['cost'] | null; readonly cached?: boolean | null; readonly goldVisibleToRun?: boolean | null }): void {
    this.total += 1;
    if (line.cached === true) this.cached += 1;
    if (line.goldVisibleToRun === true) this.goldVisible += 1;
    if (Array.isArray(line.cost)) this.cost.add(line.cost, (line as { leaseId?: string }).leaseId);
    if (line.kind in this.kinds) {
      this.kinds[line.kind] += 1;
      if (line.kind !== 'ok') {
        const type = typeof line.error?.type === 'string' && line.error.type !== '' ? line.error.type : NO_ERROR_TYPE;
        const types = this.errorTypes[line.kind];
        types.set(type, (types.get(type) ?? 0) + 1);
      }
    }
    if (line.kind === 'ok' && typeof line.reward === 'number') this.okRewards.push(line.reward);
    if (typeof line.runMs === 'number') this.runMs.push(line.runMs);
    const worker = line.worker ?? '(none)';
    this.workers.set(worker, (this.workers.get(worker) ?? 0) + 1);
    if (typeof line.redispatched === 'number') this.redispatched += line.redispatched;
    const output = line.output as { stdoutTruncated?: unknown; stderrTruncated?: unknown } | null | undefined;
    if (output && typeof output === 'object' && (output.stdoutTruncated === true || output.stderrTruncated === true)) {
      this.truncated += 1;
      if (line.kind === 'ok') this.truncatedOk += 1;
    }
  }
}

/** Nearest-rank percentile (`p` in 0–100) of unsorted values; undefined when empty. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}
