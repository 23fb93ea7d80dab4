import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { metaOfJobData } from './result-meta.js';

/** Where one lease's BullMQ job stands, as far as delivering its Result is concerned. */
export type JobOutcome =
  | { readonly state: 'unfinished' }
  /** The job hash is gone (removed by hand, by a stop/cancel, or by removeOn* on a misconfigured worker). */
  | { readonly state: 'missing' }
  /** Completed: `returnvalue` is the parsed JSON the worker returned (a Result, by contract). */
  | { readonly state: 'completed'; readonly returnvalue: unknown }
  | {
      readonly state: 'failed';
      readonly failedReason: string;
      readonly attemptsStarted: number;
      readonly stalledCounter: number;
      /** `redispatched` of `keys.lease(leaseId)`, counted by the worker. */
      readonly leaseRedispatched: number;
      readonly timestamp: number | null;
      readonly processedOn: number | null;
      readonly finishedOn: number | null;
      readonly processedBy: string | null;
      /** `task.id` of the stored spec, when it has one. */
      readonly taskId: string | null;
      /** `meta` of the stored spec, when it has one. */
      readonly meta?: unknown;
    };

/** BullMQ's own key builder (a `Queue` has it): `toKey(jobId)` is the job hash, `toKey('completed')` the set. */
export interface BullKeys {
  toKey(type: string): string;
  /** Key `type` in the queue of `leaseId` (`PlacementQueues`: a lease may sit in a placement queue); `type` defaults to the job hash. */
  leaseKey?(leaseId: string, type?: string): string;
  /** Learns the queue of leases this process did not enqueue (before {@link leaseKey}). */
  resolve?(leaseIds: readonly string[]): Promise<void>;
}

/** BullMQ key `type` (default: the job hash) of `leaseId`'s queue. */
export function leaseBullKey(bull: BullKeys, leaseId: string, type: string = leaseId): string {
  return bull.leaseKey ? bull.leaseKey(leaseId, type) : bull.toKey(type);
}

/**
 * A completed job's `returnvalue` longer than this (bytes) is read only when the caller says so
 * (`readLarge`): its QueueEvents `completed` event carries the same text and is usually on its
 * way, and reading it twice at once took a coordinator from ~470 to ~640 MiB RSS for one 60 MiB
 * output (issue 33).
 */
export const LARGE_RETURN_BYTES = 1024 * 1024;

/** Leases read per MULTI; big enough to amortise the round trip, small enough not to block Redis. */
export const OUTCOME_BATCH = 500;

// Job hash fields as BullMQ stores them (src/classes/job.ts asJSON, and the moveToFinished script).
// `returnvalue` is read apart (its length first): see LARGE_RETURN_BYTES.
const JOB_FIELDS = ['timestamp', 'failedReason', 'ats', 'stc', 'processedOn', 'finishedOn', 'pb'] as const;
/** Commands per lease in the MULTI: the fields, the returnvalue's length, `completed` and `failed` membership. */
const ROWS = 4;

const num = (value: string | null | undefined): number | null => {
  if (value === null || value === undefined || value === '') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
};

function parseJson(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function taskIdOf(dataJson: string | null | undefined): string | null {
  const data = parseJson(dataJson) as { task?: { id?: unknown } } | null;
  const id = data && typeof data === 'object' ? data.task?.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : null;
}

type Row = [Error | null, unknown][];

/**
 * Reads the outcome of many leases' jobs in batches: one MULTI per {@link OUTCOME_BATCH}
 * leases (the job hash fields plus membership of BullMQ's `completed` and `failed` sets, read
 * atomically so a job finishing mid-read is never seen half done), all batches pipelined
 * together. Failed jobs need a second, small round trip (their spec's task id and meta, and the
 * worker's re-dispatch count). The Result of a completed job is its `returnvalue`; BullMQ keeps it in
 * the job hash because we never set removeOnComplete. It is read in a second round trip, after its
 * length: one over LARGE_RETURN_BYTES only where `readLarge(leaseId)` says so, else that lease
 * comes back `unfinished` (the caller reads it later if no event delivered it meanwhile).
 */
export async function readJobOutcomes(
  redis: Redis,
  bull: BullKeys,
  keys: QueueKeys,
  leaseIds: readonly string[],
  readLarge: (leaseId: string, bytes: number, finishedOnMs: number) => boolean = () => true,
): Promise<Map<string, JobOutcome>> {
  await bull.resolve?.(leaseIds);
  const batches: string[][] = [];
  for (let i = 0; i < leaseIds.length; i += OUTCOME_BATCH) batches.push(leaseIds.slice(i, i + OUTCOME_BATCH));
  const replies = await Promise.all(
    batches.map(async (batch) => {
      const tx = redis.multi();
      for (const leaseId of batch) {
        tx.hmget(leaseBullKey(bull, leaseId), ...JOB_FIELDS)
          .hstrlen(leaseBullKey(bull, leaseId), 'returnvalue')
          .zscore(leaseBullKey(bull, leaseId, 'completed'), leaseId)
          .zscore(leaseBullKey(bull, leaseId, 'failed'), leaseId);
      }
      return { batch, rows: ((await tx.exec()) ?? []) as Row };
    }),
  );

  const outcomes = new Map<string, JobOutcome>();
  const failed: { leaseId: string; fields: (string | null)[] }[] = [];
  const completed: string[] = [];
  for (const { batch, rows } of replies) {
    batch.forEach((leaseId, i) => {
      const [fieldsErr, fieldsReply] = rows[i * ROWS] ?? [null, null];
      if (fieldsErr) throw fieldsErr;
      const fields = (fieldsReply as (string | null)[] | null) ?? [];
      const returnBytes = Number(rows[i * ROWS + 1]?.[1] ?? 0);
      const inCompleted = rows[i * ROWS + 2]?.[1] !== null && rows[i * ROWS + 2]?.[1] !== undefined;
      const inFailed = rows[i * ROWS + 3]?.[1] !== null && rows[i * ROWS + 3]?.[1] !== undefined;
      if (fields.every((value) => value === null) && returnBytes === 0) outcomes.set(leaseId, { state: 'missing' });
      else if (inCompleted && (returnBytes <= LARGE_RETURN_BYTES || readLarge(leaseId, returnBytes, Number(fields[JOB_FIELDS.indexOf('finishedOn')] ?? Number.NaN)))) completed.push(leaseId);
      else if (inCompleted) outcomes.set(leaseId, { state: 'unfinished' });
      else if (inFailed) failed.push({ leaseId, fields });
      else outcomes.set(leaseId, { state: 'unfinished' });
    });
  }
  if (completed.length > 0) {
    // The job stays once completed (no removeOnComplete; retention starts only after delivery).
    const pipe = redis.pipeline();
    for (const leaseId of completed) pipe.hget(leaseBullKey(bull, leaseId), 'returnvalue');
    const values = ((await pipe.exec()) ?? []) as Row;
    completed.forEach((leaseId, i) => {
      const [err, text] = values[i] ?? [null, null];
      if (err) throw err;
      outcomes.set(leaseId, text === null ? { state: 'missing' } : { state: 'completed', returnvalue: parseJson(text as string) });
    });
  }
  if (failed.length === 0) return outcomes;

  const pipe = redis.pipeline();
  for (const { leaseId } of failed) pipe.hget(leaseBullKey(bull, leaseId), 'data').hget(keys.lease(leaseId), 'redispatched');
  const extra = ((await pipe.exec()) ?? []) as Row;
  failed.forEach(({ leaseId, fields }, i) => {
    const [, failedReason, ats, stc, processedOn, finishedOn, pb] = fields;
    const meta = metaOfJobData(extra[i * 2]?.[1] as string | null);
    outcomes.set(leaseId, {
      ...(meta !== undefined ? { meta } : {}),
      state: 'failed',
      failedReason: failedReason ?? '',
      attemptsStarted: num(ats) ?? 0,
      stalledCounter: num(stc) ?? 0,
      leaseRedispatched: num(extra[i * 2 + 1]?.[1] as string | null) ?? 0,
      timestamp: num(fields[0]),
      processedOn: num(processedOn),
      finishedOn: num(finishedOn),
      processedBy: pb ?? null,
      taskId: taskIdOf(extra[i * 2]?.[1] as string | null),
    });
  });
  return outcomes;
}
