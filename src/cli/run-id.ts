import { randomBytes } from 'node:crypto';

const pad = (n: number): string => String(n).padStart(2, '0');

/**
 * A fresh run id `run-<yyyymmdd-hhmmss>-<4 hex>` (UTC), e.g. `run-20261129-114500-a1b2`.
 * Valid as a run id (no `.` or `:`) and sortable by start time.
 */
export function generateRunId(now: Date = new Date()): string {
  const date = `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}`;
  const time = `${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}`;
  return `run-${date}-${time}-${randomBytes(2).toString('hex')}`;
}

/** Default results file of a run: `results-<runId>.jsonl` in the current directory. */
export function defaultOutFile(runId: string): string {
  return `results-${runId}.jsonl`;
}
