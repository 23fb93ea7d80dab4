import type { Redis } from 'ioredis';
import { incrementRunCounter, RUN_FIELDS, type QueueKeys, type RunStatus } from '../lease/index.js';
import { redisScript } from '../platform/redis-script.js';
import { CostReceiptSchema, type CostReceipt } from '../spec/index.js';

/** Why a lease's last attempt ended without a result (kept for `status` and the final Result). */
export interface ExitInfo {
  /** `ChildCrashed`, `Hang`, `ChildStartFailed`, `MissingSecret`, `VersionSkew`, `WorkerLost`. */
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
const NOTE_START = redisScript('rqNoteStart', `
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
local alone = redis.call('HGET', KEYS[1], 'alone') or ''
if alone == '' and tonumber(redis.call('HGET', KEYS[1], 'sharedLosses') or '0') >= tonumber(ARGV[5]) then alone = '1' end
return {tonumber(redis.call('HGET', KEYS[1], 'redispatched') or '0'), redis.call('HGET', KEYS[2], '${RUN_FIELDS.status}') or '', queued, redis.call('HGET', KEYS[1], 'overLimit') or '', alone}
`, 3);

/**
 * Re-dispatches of a lease caused by other rollouts of a shared child (see {@link LeaseLedger.noteSharedLoss})
 * after which it runs alone anyway: a lease never loses more than this many attempts to its neighbours.
 */
export const SHARED_LOSSES_BEFORE_ALONE = 2;

// One re-dispatch caused on this worker, capped at the limit like NOTE_START.
const NOTE_REDISPATCH = redisScript('rqNoteRedispatch', `
local current = tonumber(redis.call('HGET', KEYS[1], 'redispatched') or '0')
local limit = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lastExit', ARGV[1])
if current >= limit then
  redis.call('HSET', KEYS[1], 'overLimit', '1')
  return current
end
redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.redispatched}', 1)
return redis.call('HINCRBY', KEYS[1], 'redispatched', 1)
`, 2);

// Everything finishing an attempt reads and writes, in one call: the lease hash (re-dispatches,
// cost receipts), the Redis clock, whether the coordinator already ended the lease (a verdict in
// KEYS[3]: then this answer is a late duplicate, counted here), and the once-per-lease count of
// a Result on truncated output (ARGV[2] = '1').
// KEYS: lease, run, runVerdicts. ARGV: leaseId, truncated.
const FINISH = redisScript('rqNoteFinish', `
local verdict = redis.call('HEXISTS', KEYS[3], ARGV[1])
if verdict == 1 then redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.duplicatesDropped}', 1) end
if ARGV[2] == '1' and redis.call('HSETNX', KEYS[1], 'truncated', '1') == 1 then
  redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.truncated}', 1)
end
local t = redis.call('TIME')
return {redis.call('HGETALL', KEYS[1]), t[1], t[2], verdict}
`, 3);

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
  async noteStart(leaseId: string, runId: string, stalledCounter: number): Promise<{ redispatched: number; overLimit: boolean; runStatus: RunStatus | undefined; queuedMs: number | null; alone: boolean }> {
    const lost: ExitInfo = { reason: 'WorkerLost', exitCode: null, signal: null, stderrTail: 'the worker holding this lease stopped renewing its lock (killed, frozen or cut off from Redis)' };
    const [count, status, queued, over, alone] = (await NOTE_START.run(
      this.redis, [this.keys.lease(leaseId), this.keys.run(runId), this.keys.runEnqueuedAt(runId)], [stalledCounter, JSON.stringify(lost), this.maxRedispatches, leaseId, SHARED_LOSSES_BEFORE_ALONE],
    )) as [number, string, number, string, string];
    return {
      redispatched: Number(count),
      overLimit: over === '1',
      alone: alone === '1',
      runStatus: (status || undefined) as RunStatus | undefined,
      queuedMs: Number(queued) >= 0 ? Number(queued) : null,
    };
  }

  /**
   * What finishing an attempt needs, in one round trip: the lease's re-dispatches and cost
   * receipts, the Redis clock now (ms; `finishedAt` is taken from it, not from this host), and
   * whether the coordinator already ended the lease (`keys.runVerdicts`: NoWorker,
   * DeadlineExceeded), which makes this answer a late duplicate (counted on the run in the
   * same call). With `truncated`, the Result is counted as computed on truncated output (once
   * per lease).
   */
  async noteFinish(leaseId: string, runId: string, truncated: boolean): Promise<{ redispatched: number; costs: CostReceipt[]; nowMs: number; verdict: boolean }> {
    const [flat, seconds, micros, verdict] = (await FINISH.run(
      this.redis, [this.keys.lease(leaseId), this.keys.run(runId), this.keys.runVerdicts(runId)], [leaseId, truncated ? '1' : '0'],
    )) as [string[], string, string, number];
    const hash: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i] as string] = flat[i + 1] as string;
    const costs = Object.entries(hash)
      .filter(([field]) => field.startsWith('cost:'))
      .map(([, json]) => CostReceiptSchema.parse(JSON.parse(json)));
    const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return { redispatched: Number(hash.redispatched ?? 0), costs, nowMs, verdict: Number(verdict) === 1 };
  }

  /** Counts one re-dispatch caused on this worker (crash, hang, start failure, missing secret, lost lock), never past the limit. */
  async noteRedispatch(leaseId: string, runId: string, exit: ExitInfo): Promise<number> {
    return Number(await NOTE_REDISPATCH.run(this.redis, [this.keys.lease(leaseId), this.keys.run(runId)], [JSON.stringify(exit), this.maxRedispatches]));
  }

  /**
   * Counts one attempt of the lease lost in a shared child to a crash it did not cause alone (a
   * neighbour's, or one nobody can pin on a single rollout), which is no re-dispatch: neither
   * `redispatched` nor the run's counter moves. With `alone` (the crash may have been its own),
   * and after {@link SHARED_LOSSES_BEFORE_ALONE} such losses in any case, the lease's later attempts
   * run in a child of their own (`noteStart` says `alone`), where only its own crashes can end them.
   */
  async noteSharedLoss(leaseId: string, alone: boolean): Promise<void> {
    const pipeline = this.redis.pipeline().hincrby(this.keys.lease(leaseId), 'sharedLosses', 1);
    if (alone) pipeline.hset(this.keys.lease(leaseId), 'alone', '1');
    await pipeline.exec();
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

  /** Counts one late answer BullMQ refused (lock lost, job gone) on the run. */
  async countDuplicate(runId: string): Promise<void> {
    await incrementRunCounter(this.redis, this.keys, runId, 'duplicatesDropped');
  }
}
