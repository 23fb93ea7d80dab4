import { findMetaIssue, type Result } from '../spec/index.js';

/**
 * `result` carrying the draft's `meta` (see `MetaSchema`), for a Result the producer writes
 * itself (a refused draft, a cached evaluation, a lease the plane gave up on): a worker's Result
 * carries it already. `meta` undefined leaves the Result without one (and removes one it had: a
 * cached evaluation's stored Result is another draft's).
 */
export function withMeta(result: Result, meta: unknown): Result {
  if (meta === undefined) {
    if (!('meta' in result)) return result;
    const { meta: _other, ...rest } = result;
    return rest;
  }
  return { ...result, meta };
}

/**
 * The `meta` of a job's data (its spec as JSON text, BullMQ's `data` field), or undefined when
 * the job has none, its data is unreadable, or the value is no valid meta (a foreign writer).
 */
export function metaOfJobData(json: string | null | undefined): unknown {
  if (!json) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
  const meta = data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as { meta?: unknown }).meta : undefined;
  return meta === undefined || findMetaIssue(meta) ? undefined : meta;
}
