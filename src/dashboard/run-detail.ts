import type { Redis } from 'ioredis';
import { bullJobKey, queueKeys, readRunCost, readRunRecord, type QueueKeys, type RunRecord } from '../lease/index.js';
import type { CostSummary, ResultKind } from '../spec/index.js';
import { publicText } from './public-text.js';

/** Leases whose jobs are read for one run's page; a bigger run's page covers its first ones (and says so). */
export const MAX_LEASES_READ = 20_000;
/** Leases read per pipeline. */
const BATCH = 500;
/** Bars of the throughput chart. */
const THROUGHPUT_BUCKETS = 30;
/** Shortest time bucket of the throughput chart, ms. */
const MIN_BUCKET_MS = 100;
/** Bars of the reward histogram. */
const REWARD_BINS = 10;

/** One finished lease as the page counts it. */
interface Finished {
  readonly kind: ResultKind;
  readonly errorType: string | null;
  readonly reward: number | null;
  readonly worker: string | null;
  readonly finishedOn: number | null;
}

/** A quarantined lease with its forensics (exit code, signal, stderr tail), as `status` shows them. */
export interface QuarantinedLease {
  readonly leaseId: string;
  readonly reason: string;
  readonly exitCode: string;
  readonly signal: string;
  readonly stderrTail: string;
}

/** Everything one run's page shows. */
export interface RunDetail {
  readonly queue: string;
  readonly record: RunRecord;
  /** Leases of the run, and how many of them were read ({@link MAX_LEASES_READ}). */
  readonly leases: { readonly total: number; readonly read: number };
  /** Finished leases among those read (their job holds a Result, or BullMQ failed it, or the coordinator ended it). */
  readonly finished: number;
  readonly kinds: Readonly<Record<ResultKind, number>>;
  /** Per kind, its Results by error type, most frequent first. */
  readonly errorTypes: Readonly<Record<ResultKind, ReadonlyArray<readonly [string, number]>>>;
  /** Rewards of `ok` Results in {@link REWARD_BINS} equal bins from `min` to `max`. */
  readonly rewards: { readonly count: number; readonly mean: number | null; readonly min: number; readonly max: number; readonly bins: readonly number[] };
  /** Finished leases per time bucket (BullMQ `finishedOn`, ms) from the run's creation (or its first finish) on. */
  readonly throughput: { readonly startMs: number; readonly bucketMs: number; readonly counts: readonly number[] };
  /** Results per worker name, most first. */
  readonly workers: ReadonlyArray<readonly [string, number]>;
  readonly quarantined: readonly QuarantinedLease[];
  readonly cost: CostSummary;
}

const KINDS: readonly ResultKind[] = ['ok', 'model', 'infrastructure', 'caller'];
const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function parse(text: string | null | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A Result (a job's return value or a coordinator verdict) as the page counts it; undefined when it is none. */
function fromResult(value: unknown, finishedOn: number | null): Finished | undefined {
  if (!isRecord(value) || typeof value.kind !== 'string' || !(KINDS as readonly string[]).includes(value.kind)) return undefined;
  const error = isRecord(value.error) && typeof value.error.type === 'string' ? value.error.type : null;
  const finishedAt = typeof value.finishedAt === 'string' ? Date.parse(value.finishedAt) : Number.NaN;
  return {
    kind: value.kind as ResultKind,
    errorType: value.kind === 'ok' ? null : error,
    reward: typeof value.reward === 'number' && Number.isFinite(value.reward) ? value.reward : null,
    worker: typeof value.worker === 'string' ? value.worker : null,
    finishedOn: finishedOn ?? (Number.isFinite(finishedAt) ? finishedAt : null),
  };
}

/**
 * The placement queues a lease of `queue` may sit in besides `queue` itself (the names the
 * producers announced in `keys.placements()`), so their jobs are found too.
 */
async function candidateQueues(redis: Redis, keys: QueueKeys): Promise<string[]> {
  return [keys.queue, ...(await redis.hkeys(keys.placements())).filter((name) => name !== keys.queue)];
}

/**
 * Reads the finished leases among `leaseIds`: a job's `returnvalue` (its Result); a job BullMQ
 * failed (no Result: `infrastructure`, `WorkerLost` when its stall limit ended it, else
 * `WorkerError`, as the producer reads it); else a verdict the coordinator wrote (NoWorker,
 * DeadlineExceeded). Unfinished leases are left out.
 */
async function readFinished(redis: Redis, prefix: string, keys: QueueKeys, runId: string, leaseIds: readonly string[]): Promise<Finished[]> {
  const queues = await candidateQueues(redis, keys);
  const verdicts = await redis.hgetall(keys.runVerdicts(runId));
  const finished: Finished[] = [];
  for (let i = 0; i < leaseIds.length; i += BATCH) {
    const batch = leaseIds.slice(i, i + BATCH);
    const pipe = redis.pipeline();
    for (const leaseId of batch) for (const queue of queues) pipe.hmget(bullJobKey(prefix, queue, leaseId), 'returnvalue', 'finishedOn', 'failedReason', 'pb');
    const rows = ((await pipe.exec()) ?? []).map(([, reply]) => (reply ?? []) as (string | null)[]);
    batch.forEach((leaseId, j) => {
      const own = rows.slice(j * queues.length, (j + 1) * queues.length).find((fields) => fields.some((value) => value !== null));
      const [returnvalue, finishedOn, failedReason, processedBy] = own ?? [];
      const at = finishedOn ? Number(finishedOn) : null;
      const result = fromResult(parse(returnvalue), at) ?? fromResult(parse(verdicts[leaseId]), null);
      if (result) finished.push(result);
      else if (failedReason) finished.push({ kind: 'infrastructure', errorType: /stalled/.test(failedReason) ? 'WorkerLost' : 'WorkerError', reward: null, worker: processedBy ?? null, finishedOn: at });
    });
  }
  return finished;
}

function countBy<T>(items: readonly T[], key: (item: T) => string | null): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const item of items) {
    const name = key(item);
    if (name !== null) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts.entries()].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
}

function rewardHistogram(rewards: readonly number[]): RunDetail['rewards'] {
  if (rewards.length === 0) return { count: 0, mean: null, min: 0, max: 1, bins: new Array<number>(REWARD_BINS).fill(0) };
  // The default rewardRange [0, 1] when every reward is in it, so runs compare at a glance.
  const min = Math.min(0, ...rewards);
  const max = Math.max(1, ...rewards);
  const bins = new Array<number>(REWARD_BINS).fill(0);
  for (const reward of rewards) {
    const bin = Math.min(REWARD_BINS - 1, Math.floor(((reward - min) / (max - min)) * REWARD_BINS));
    bins[bin] = (bins[bin] ?? 0) + 1;
  }
  return { count: rewards.length, mean: rewards.reduce((a, b) => a + b, 0) / rewards.length, min, max, bins };
}

function throughputOf(record: RunRecord, finished: readonly Finished[], nowMs: number): RunDetail['throughput'] {
  const times = finished.map((item) => item.finishedOn).filter((at): at is number => at !== null);
  const created = record.createdAt ? Date.parse(record.createdAt) : Number.NaN;
  const startMs = Number.isFinite(created) ? Math.min(created, ...times) : times.length > 0 ? Math.min(...times) : nowMs;
  const endMs = record.endedAt ? Math.max(Date.parse(record.endedAt), ...times) : nowMs;
  const bucketMs = Math.max(MIN_BUCKET_MS, Math.ceil((endMs - startMs + 1) / THROUGHPUT_BUCKETS));
  const counts = new Array<number>(THROUGHPUT_BUCKETS).fill(0);
  for (const at of times) {
    const bucket = Math.min(THROUGHPUT_BUCKETS - 1, Math.max(0, Math.floor((at - startMs) / bucketMs)));
    counts[bucket] = (counts[bucket] ?? 0) + 1;
  }
  return { startMs, bucketMs, counts };
}

function quarantinedOf(record: RunRecord): QuarantinedLease[] {
  return Object.entries(record.quarantined).map(([leaseId, value]) => {
    const item = isRecord(value) ? value : {};
    const text = (field: string): string => (item[field] === undefined || item[field] === null ? '-' : String(item[field]));
    // stderr is the artifact's own, already scrubbed of secrets by the worker; shown as public text (no paths, no addresses).
    return { leaseId, reason: publicText(text('reason')), exitCode: text('exitCode'), signal: text('signal'), stderrTail: publicText(typeof item.stderrTail === 'string' ? item.stderrTail.split('\n').filter(Boolean).slice(-1)[0] ?? '' : '') };
  });
}

/**
 * Reads one run's page: its record, and what its finished leases' Results say (counts by kind
 * and error type, the reward histogram, throughput over time, per-worker counts), its
 * quarantined leases with their forensics, and its cost receipts. Read-only; at most
 * {@link MAX_LEASES_READ} leases' jobs are read.
 * @returns undefined when the queue has no such run (never created, purged, or past its retention).
 */
export async function readRunDetail(redis: Redis, prefix: string, queue: string, runId: string, nowMs: number = Date.now()): Promise<RunDetail | undefined> {
  const keys = queueKeys(prefix, queue);
  const record = await readRunRecord(redis, keys, runId);
  if (!record) return undefined;
  const total = await redis.zcard(keys.runLeases(runId));
  const leaseIds = await redis.zrange(keys.runLeases(runId), 0, MAX_LEASES_READ - 1);
  const finished = await readFinished(redis, prefix, keys, runId, leaseIds);
  const kinds = { ok: 0, model: 0, infrastructure: 0, caller: 0 };
  for (const item of finished) kinds[item.kind] += 1;
  const errorTypes = Object.fromEntries(KINDS.map((kind) => [kind, countBy(finished.filter((item) => item.kind === kind), (item) => item.errorType ?? (kind === 'ok' ? null : '(no type)'))])) as unknown as RunDetail['errorTypes'];
  const rewards = finished.filter((item) => item.kind === 'ok' && item.reward !== null).map((item) => item.reward as number);
  return {
    queue, record, leases: { total, read: leaseIds.length }, finished: finished.length, kinds, errorTypes,
    rewards: rewardHistogram(rewards),
    throughput: throughputOf(record, finished, nowMs),
    workers: countBy(finished, (item) => item.worker),
    quarantined: quarantinedOf(record),
    cost: await readRunCost(redis, keys, runId),
  };
}
