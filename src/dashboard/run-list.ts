import type { Redis } from 'ioredis';
import { queueKeys, readRunRecord, type RunRecord } from '../lease/index.js';

/** Runs listed at most (the newest first, running ones before). */
export const MAX_RUNS_LISTED = 200;

/** One row of the runs list: a run and where it stands. */
export interface RunRow {
  readonly queue: string;
  readonly record: RunRecord;
  /** Since the run was created, ms (by this process' clock against the record's ISO `createdAt`); null when unknown. */
  readonly ageMs: number | null;
  /** Results delivered per second between creation and the end (or now, while it runs); null when unknown. */
  readonly perSecond: number | null;
}

/** `delivered` over the seconds from `createdAt` to `endedAt` (or `nowMs`); null without a start or before a second passed. */
export function deliveryRate(record: Pick<RunRecord, 'createdAt' | 'endedAt' | 'delivered'>, nowMs: number): number | null {
  const start = record.createdAt ? Date.parse(record.createdAt) : Number.NaN;
  if (!Number.isFinite(start)) return null;
  const end = record.endedAt ? Date.parse(record.endedAt) : nowMs;
  const seconds = (end - start) / 1000;
  return seconds >= 1 ? record.delivered / seconds : null;
}

/**
 * The runs recorded on `queues` under `prefix` (each queue's `runs` set, one run record read per
 * run; runs past their retention have no record and are left out): running first, then newest
 * first, at most {@link MAX_RUNS_LISTED}. Read-only.
 */
export async function listRuns(redis: Redis, prefix: string, queues: readonly string[], nowMs: number = Date.now()): Promise<RunRow[]> {
  const rows: RunRow[] = [];
  for (const queue of queues) {
    const keys = queueKeys(prefix, queue);
    const ids = await redis.smembers(keys.runs());
    const records = await Promise.all(ids.map((runId) => readRunRecord(redis, keys, runId)));
    for (const record of records) {
      if (!record) continue;
      const created = record.createdAt ? Date.parse(record.createdAt) : Number.NaN;
      rows.push({ queue, record, ageMs: Number.isFinite(created) ? Math.max(0, nowMs - created) : null, perSecond: deliveryRate(record, nowMs) });
    }
  }
  rows.sort((a, b) => Number(b.record.status === 'running') - Number(a.record.status === 'running') || (b.record.createdAt ?? '').localeCompare(a.record.createdAt ?? ''));
  return rows.slice(0, MAX_RUNS_LISTED);
}
