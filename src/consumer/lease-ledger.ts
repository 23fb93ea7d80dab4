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
const NOTE_START = `
local seen = tonumber(redis.call('HGET', KEYS[1], 'stallsSeen') or '0')
local stc = tonumber(ARGV[1])
if stc > seen then
  redis.call('HSET', KEYS[1], 'stallsSeen', stc)
  redis.call('HINCRBY', KEYS[1], 'redispatched', stc - seen)
  redis.call('HINCRBY', KEYS[2], '${RUN_FIELDS.redispatched}', stc - seen)
  redis.call('HSET', KEYS[1], 'lastExit', ARGV[2])
end
return {tonumber(redis.call('HGET', KEYS[1], 'redispatched') or '0'), redis.call('HGET', KEYS[2], '${RUN_FIELDS.status}') or ''}
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
  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
  ) {}

  /**
   * Records the start of an attempt in one round trip: stalls BullMQ saw since the last
   * start (`stalledCounter`, BullMQ job field `stc`) become re-dispatches.
   * @returns the lease's re-dispatch count so far, and the run's status (undefined when the
   *   run has no record, e.g. a job added by another client).
   */
  async noteStart(leaseId: string, runId: string, stalledCounter: number): Promise<{ redispatched: number; runStatus: RunStatus | undefined }> {
    const lost: ExitInfo = { reason: 'WorkerLost', exitCode: null, signal: null, stderrTail: 'the worker holding this lease stopped renewing its lock (killed, frozen or cut off from Redis)' };
    const [count, status] = (await this.redis.eval(NOTE_START, 2, this.keys.lease(leaseId), this.keys.run(runId), stalledCounter, JSON.stringify(lost))) as [number, string];
    return { redispatched: Number(count), runStatus: (status || undefined) as RunStatus | undefined };
  }

  /** Counts one re-dispatch caused on this worker (crash, hang, start failure, missing secret). */
  async noteRedispatch(leaseId: string, runId: string, exit: ExitInfo): Promise<number> {
    const results = await this.redis
      .multi()
      .hincrby(this.keys.lease(leaseId), 'redispatched', 1)
      .hincrby(this.keys.run(runId), RUN_FIELDS.redispatched, 1)
      .hset(this.keys.lease(leaseId), 'lastExit', JSON.stringify(exit))
      .exec();
    return Number(results?.[0]?.[1] ?? 0);
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
