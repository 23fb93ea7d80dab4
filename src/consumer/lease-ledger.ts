import type { Redis } from 'ioredis';
import { RUN_FIELDS, type QueueKeys, type RunStatus } from '../lease/index.js';
import { CostReceiptSchema, type CostReceipt } from '../spec/index.js';

/** Why a lease's last attempt ended without a result (kept for `status` and the final Result). */
export interface ExitInfo {
  /** `ChildCrashed`, `Hang`, `ChildStartFailed`, `MissingSecret`, `WorkerLost`. */
  readonly reason: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderrTail: string;
}

// Converts stalls BullMQ recorded (job field `stc`) but nobody counted yet into
// re-dispatches, atomically, so two workers starting the same lease cannot count one stall twice.
// The count never passes the limit (ARGV[3]): a loss past it is not a re-dispatch but the end
// of the lease, flagged in `overLimit` so the starting worker quarantines it; the run counter
// gets exactly what the lease got, so `status` and the Result agree.
const NOTE_START = `
local seen = tonumber(redis.call('HGET', KEYS[1], 'stallsSeen') or '0')
local stc = tonumber(ARGV[1])
local limit = tonumber(ARGV[3])
if stc > seen then
  redis.call('HSET', KEYS[1], 'stallsSeen', stc)
  local current = tonumber(redis.call('HGET', KEYS[1], 'redispatched') or '0')
  local add = math.min(stc - seen, math.max(limit - current, 0))
  if current + (stc - seen) > limit then redis.call('HSET', KEYS[1], 'overLimit', '1') end
  if add > 0 then
    redis.call('HINCRBY', KEYS[1], 'redispatched', add)
    redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.redispatched}', add)
  end
  redis.call('HSET', KEYS[1], 'lastExit', ARGV[2])
end
local queued = -1
local clock = redis.call('HGET', KEYS[3], ARGV[4])
if clock then
  local t = redis.call('TIME')
  queued = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - cjson.decode(clock)[1]
  if queued < 0 then queued = 0 end
end
return {tonumber(redis.call('HGET', KEYS[1], 'redispatched') or '0'), redis.call('HGET', KEYS[2], '${RUN_FIELDS.status}') or '', queued, redis.call('HGET', KEYS[1], 'overLimit') or ''}
`;

// One re-dispatch caused on this worker, capped at the limit like NOTE_START.
const NOTE_REDISPATCH = `
local current = tonumber(redis.call('HGET', KEYS[1], 'redispatched') or '0')
local limit = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lastExit', ARGV[1])
if current >= limit then
  redis.call('HSET', KEYS[1], 'overLimit', '1')
  return current
end
redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.redispatched}', 1)
return redis.call('HINCRBY', KEYS[1], 'redispatched', 1)
`;

// Counts a Result on truncated output once per lease, whichever attempt or duplicate reports it.
const COUNT_TRUNCATED = `
if redis.call('HSETNX', KEYS[1], 'truncated', '1') == 1 then
  redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.truncated}', 1)
end
return 1
`;

/**
 * The worker's per-lease bookkeeping in Redis (`keys.lease(leaseId)` HASH): re-dispatch
 * count, stalls already counted, the last exit, and cost receipts. Every count also lands
 * on the run record, so `status` and the coordinator see it whichever process dies.
 */
export class LeaseLedger {
  /** @param maxRedispatches the worker's limit; no count passes it. */
  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
    private readonly maxRedispatches: number,
  ) {}

  /**
   * Records the start of an attempt in one round trip: stalls BullMQ saw since the last
   * start (`stalledCounter`, BullMQ job field `stc`) become re-dispatches.
   * @returns the lease's re-dispatch count so far (never past the limit), whether the lease
   *   was lost more often than the limit allows (then it must end, quarantined), and the run's
   *   status (undefined when the run has no record, e.g. a job added by another client).
   */
  async noteStart(leaseId: string, runId: string, stalledCounter: number): Promise<{ redispatched: number; overLimit: boolean; runStatus: RunStatus | undefined; queuedMs: number | null }> {
    const lost: ExitInfo = { reason: 'WorkerLost', exitCode: null, signal: null, stderrTail: 'the worker holding this lease stopped renewing its lock (killed, frozen or cut off from Redis)' };
    const [count, status, queued, over] = (await this.redis.eval(
      NOTE_START, 3, this.keys.lease(leaseId), this.keys.run(runId), this.keys.runEnqueuedAt(runId), stalledCounter, JSON.stringify(lost), this.maxRedispatches, leaseId,
    )) as [number, string, number, string];
    return {
      redispatched: Number(count),
      overLimit: over === '1',
      runStatus: (status || undefined) as RunStatus | undefined,
      queuedMs: Number(queued) >= 0 ? Number(queued) : null,
    };
  }

  /**
   * What finishing an attempt needs, in one round trip: the lease's re-dispatches and cost
   * receipts, the Redis clock now (ms; `finishedAt` is taken from it, not from this host), and
   * whether the coordinator already ended the lease (`keys.runVerdicts`: NoWorker,
   * DeadlineExceeded), which makes this answer a late duplicate.
   */
  async readForFinish(leaseId: string, runId: string): Promise<{ redispatched: number; costs: CostReceipt[]; nowMs: number; verdict: boolean }> {
    const [[, hash], [, time], [, verdict]] = (await this.redis
      .multi()
      .hgetall(this.keys.lease(leaseId))
      .time()
      .hexists(this.keys.runVerdicts(runId), leaseId)
      .exec()) as [[unknown, Record<string, string>], [unknown, [string, string]], [unknown, number]];
    const costs = Object.entries(hash ?? {})
      .filter(([field]) => field.startsWith('cost:'))
      .map(([, json]) => CostReceiptSchema.parse(JSON.parse(json)));
    const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    return { redispatched: Number(hash?.redispatched ?? 0), costs, nowMs, verdict: verdict === 1 };
  }

  /** Counts one re-dispatch caused on this worker (crash, hang, start failure, missing secret, lost lock), never past the limit. */
  async noteRedispatch(leaseId: string, runId: string, exit: ExitInfo): Promise<number> {
    return Number(await this.redis.eval(NOTE_REDISPATCH, 2, this.keys.lease(leaseId), this.keys.run(runId), JSON.stringify(exit), this.maxRedispatches));
  }

  /** Everything known about a lease, in one read: re-dispatch count, last exit, cost receipts (by id, over all attempts). */
  async read(leaseId: string): Promise<{ redispatched: number; lastExit: ExitInfo | null; costs: CostReceipt[] }> {
    const hash = await this.redis.hgetall(this.keys.lease(leaseId));
    const costs = Object.entries(hash)
      .filter(([field]) => field.startsWith('cost:'))
      .map(([, json]) => CostReceiptSchema.parse(JSON.parse(json)));
    return { redispatched: Number(hash.redispatched ?? 0), lastExit: hash.lastExit ? (JSON.parse(hash.lastExit) as ExitInfo) : null, costs };
  }

  /** Lists a lease as quarantined on its run (shown by `status`). */
  async quarantine(runId: string, leaseId: string, exit: ExitInfo): Promise<void> {
    await this.redis.hset(this.keys.runQuarantined(runId), leaseId, JSON.stringify(exit));
  }

  /** Stores receipts by id (first write wins), so each reaches the coordinator once. */
  async recordCosts(leaseId: string, receipts: readonly CostReceipt[]): Promise<void> {
    if (receipts.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const receipt of receipts) pipeline.hsetnx(this.keys.lease(leaseId), `cost:${receipt.id}`, JSON.stringify(receipt));
    await pipeline.exec();
  }

  /** Counts the lease's Result as computed on truncated output on its run (once per lease; `status` shows it). */
  async countTruncated(leaseId: string, runId: string): Promise<void> {
    await this.redis.eval(COUNT_TRUNCATED, 2, this.keys.lease(leaseId), this.keys.run(runId));
  }

  /** Counts one late answer BullMQ refused (lock lost, job gone) on the run. */
  async countDuplicate(runId: string): Promise<void> {
    await this.redis.hincrby(this.keys.run(runId), RUN_FIELDS.duplicatesDropped, 1);
  }
}
