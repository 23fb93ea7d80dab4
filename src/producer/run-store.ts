import type { Redis } from 'ioredis';
import type { RedisClock } from '../platform/redis-clock.js';
import { redisDb } from '../platform/redis-connection.js';
import type { LeaseTake } from './coordinator-lease.js';
import { incrementRunCounter, RUN_FIELDS, type QueueKeys, type RunStatus } from '../lease/index.js';
import type { Result } from '../spec/index.js';
import { ACKNOWLEDGE, CHECK_AND_STAMP, checkArgs, checkedBatch, flagsOf, headOf, intOrNull, LEASE_FLAGS, OPEN_RUN, RECORD_LEASES, SET_STATUS, STAMP_ENQUEUED } from './run-store-scripts.js';
import { NO_RECORD, type BatchCheck, type CheckedBatch, type LeaseFlags, type LeaseToRecord, type OpenedRun, type QuarantineRecord, type RunCreation, type RunHead } from './run-store-shapes.js';

// The store's shapes and its NO_RECORD reply live in run-store-shapes.ts; re-exported for its importers.
export { NO_RECORD, type BatchCheck, type CheckedBatch, type LeaseFlags, type LeaseToRecord, type OpenedRun, type QuarantineRecord, type RunCreation, type RunHead } from './run-store-shapes.js';

/** Longest wait, ms, for a replica to confirm an acknowledgement (Redis `WAIT 1 <ms>`; see RunStore's `replicated`). */
export const REPLICA_WAIT_MS = 500;

/**
 * The producer's reads and writes of its own run bookkeeping (`keys.run`, `runLeases`,
 * `runDelivered`, `runQuarantined`, `runs`, the cancel channel). Every multi-step change is one
 * Lua script or MULTI, so a coordinator killed at any point leaves a consistent record.
 */
export class RunStore {
  /** The Redis clock, once {@link useClock} gave it; until then this host's. */
  private clock: Pick<RedisClock, 'nowMs'> | undefined;

  /**
   * @param replicated acknowledgements wait (WAIT 1) until a replica has them: under Sentinel a
   *   failover promotes a replica, and an acknowledgement it had not received yet was lost with
   *   the old primary (a Sentinel test saw `delivered` 39 of 40 after a failover right after a
   *   Result was taken). At most {@link REPLICA_WAIT_MS} per batch; a replica that is down only
   *   delays it that long.
   */
  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
    private readonly replicated = false,
  ) {}

  /**
   * Takes the times this store writes (`createdAt`, `restoredAt`, and `nowIso` for Results the
   * producer writes) from the Redis clock: `purge --older-than` compares a run's `createdAt` with
   * Redis TIME, so a coordinator host with a skewed clock made runs look older or younger.
   */
  useClock(clock: Pick<RedisClock, 'nowMs'>): void {
    this.clock = clock;
  }

  /** Now, ISO 8601, on the Redis clock once {@link useClock} gave it (else this host's). */
  nowIso(): string {
    return new Date(this.clock ? this.clock.nowMs() : Date.now()).toISOString();
  }

  /**
   * The run's status and counts, and the size of its delivered set (one pipelined round trip),
   * or undefined when no such run exists on this queue.
   */
  async readHead(runId: string): Promise<RunHead | undefined> {
    const f = RUN_FIELDS;
    const replies = (await this.redis
      .pipeline()
      .hmget(this.keys.run(runId), f.status, f.stopReason, f.runAttemptId, f.specCount, f.enqueued)
      .scard(this.keys.runDelivered(runId))
      .exec()) ?? [];
    for (const [err] of replies) if (err) throw err;
    const head = headOf((replies[0]?.[1] as (string | null)[] | undefined) ?? []);
    return head ? { ...head, delivered: Number(replies[1]?.[1] ?? 0) } : undefined;
  }

  /**
   * A {@link LeaseTake} for the run's coordinator lease that also reads the run head, and with
   * `create` makes the record as {@link ensureRun} does (unless the run was stopped or
   * cancelled; a completed run becomes running again), all in the one script call that takes the
   * lease: a session's start costs one round trip, not three. When the run is new, the same call
   * also does {@link checkAndStamp} of `opening` (a new run's first batch), saving its round trip.
   * @param create the record for new drafts: their runAttemptId and count (undefined: unknown); omit to only read.
   * @param opening with `create`: the first batch of drafts, prepared as a new run's.
   */
  opener(runId: string, create?: RunCreation, opening?: BatchCheck): LeaseTake<OpenedRun> {
    const f = RUN_FIELDS;
    return async (token, ttlMs) => {
      const keys = [this.keys.runCoordinator(runId), this.keys.run(runId), this.keys.runs(), this.keys.runLeases(runId), this.keys.runDelivered(runId), this.keys.runEnqueuedAt(runId)];
      const reply = (await OPEN_RUN.run(this.redis, keys, [
        token, ttlMs, create ? '1' : '0', runId, this.nowIso(), create?.runAttemptId ?? '', create?.specCount ?? '',
        f.status, f.stopReason, f.runAttemptId, f.specCount, f.enqueued, f.createdAt, f.sourceFingerprint, create?.sourceFingerprint ?? '',
        ...(create && opening ? checkArgs(opening) : []),
      ])) as [0, string | null] | [1, (string | null)[], number, (string | null)?, string?, [string, ...number[]]?];
      if (reply[0] === 0) return { taken: false, holder: reply[1] };
      const [, values, reopened, runAttemptId, specCount, checked] = reply;
      const head = headOf(values);
      if (!create || runAttemptId === undefined) return { taken: true, value: { head } };
      return {
        taken: true,
        value: {
          head,
          created: {
            runAttemptId: runAttemptId ?? create.runAttemptId, specCount: intOrNull(specCount), reopened: reopened === 1,
            ...(opening && checked ? { checked: checkedBatch(opening.leaseIds, checked) } : {}),
          },
        },
      };
    };
  }

  /**
   * Creates the run record with HSETNX semantics (an existing run keeps its fields) and lists
   * the run in `keys.runs()`. Returns the stored `runAttemptId` (the existing one on resume).
   */
  async ensureRun(runId: string, { runAttemptId, specCount, sourceFingerprint }: RunCreation): Promise<string> {
    const f = RUN_FIELDS;
    const stored = await this.writeRecord(runId, { [f.status]: 'running', [f.runAttemptId]: runAttemptId, [f.specCount]: specCount?.toString(), [f.sourceFingerprint]: sourceFingerprint });
    return stored ?? runAttemptId;
  }

  /**
   * Makes a run's record again after Redis lost it mid-run (see {@link NO_RECORD}), with what
   * its coordinator knows, as {@link ensureRun} makes one (a record made meanwhile keeps its
   * own fields), plus `restoredAt` (ISO 8601) saying the counts start there.
   */
  async restoreRun(runId: string, run: RunCreation & { readonly status: RunStatus; readonly stopReason?: string; readonly coordinatorNote?: string }): Promise<void> {
    const f = RUN_FIELDS;
    await this.writeRecord(runId, {
      [f.status]: run.status, [f.runAttemptId]: run.runAttemptId, [f.specCount]: run.specCount?.toString(), [f.sourceFingerprint]: run.sourceFingerprint,
      [f.stopReason]: run.stopReason, [f.coordinatorNote]: run.coordinatorNote, [f.restoredAt]: this.nowIso(),
    });
  }

  /**
   * One MULTI: HSETNX of `createdAt` (now) and of each field given (undefined ones skipped) on
   * the run's record, SADD of the run to `keys.runs()`.
   * @returns the record's `runAttemptId` afterwards (null when none).
   */
  private async writeRecord(runId: string, fields: Readonly<Record<string, string | undefined>>): Promise<string | null> {
    const key = this.keys.run(runId);
    const tx = this.redis.multi().hsetnx(key, RUN_FIELDS.createdAt, this.nowIso());
    for (const [field, value] of Object.entries(fields)) if (value !== undefined) tx.hsetnx(key, field, value);
    tx.sadd(this.keys.runs(), runId).hget(key, RUN_FIELDS.runAttemptId);
    const replies = (await tx.exec()) ?? [];
    const stored = replies[replies.length - 1]?.[1];
    return typeof stored === 'string' ? stored : null;
  }

  /**
   * Stores the note of the coordinator that now holds the run (`CoordinatorOptions.coordinatorNote`).
   * The record exists: the session's opening script made or found it.
   */
  async noteCoordinator(runId: string, note: string): Promise<void> {
    await this.redis.hset(this.keys.run(runId), RUN_FIELDS.coordinatorNote, note);
  }

  /** The note of the run's latest coordinator (`RUN_FIELDS.coordinatorNote`), or null. */
  async readNote(runId: string): Promise<string | null> {
    return this.redis.hget(this.keys.run(runId), RUN_FIELDS.coordinatorNote);
  }

  /** True when the run's end is recorded (`endedAt`, set with its retention by `applyRetention`). */
  async hasEnded(runId: string): Promise<boolean> {
    return (await this.redis.hexists(this.keys.run(runId), RUN_FIELDS.endedAt)) === 1;
  }

  /**
   * Lease ids enqueued for the run and not yet acknowledged, in submission order. Read in a
   * pipeline, not MULTI, so `status` and `resume` answer on a Redis at maxmemory (see
   * `readRunRecord`): a lease acknowledged between the two reads counts as acknowledged.
   */
  async undeliveredLeases(runId: string): Promise<string[]> {
    const replies = (await this.redis
      .pipeline()
      .zrange(this.keys.runLeases(runId), 0, -1)
      .smembers(this.keys.runDelivered(runId))
      .exec()) ?? [];
    const leases = (replies[0]?.[1] as string[] | undefined) ?? [];
    const delivered = new Set((replies[1]?.[1] as string[] | undefined) ?? []);
    return leases.filter((leaseId) => !delivered.has(leaseId));
  }

  /**
   * Distinct leases the run has answered or enqueued: `runLeases ∪ runDelivered` (a refused
   * draft is delivered without ever being enqueued). Compared with `specCount` by `attach`.
   * A pipeline, as {@link undeliveredLeases} (both sets only grow while the run lives).
   */
  async knownLeases(runId: string): Promise<number> {
    const replies = (await this.redis
      .pipeline()
      .zrange(this.keys.runLeases(runId), 0, -1)
      .smembers(this.keys.runDelivered(runId))
      .exec()) ?? [];
    const known = new Set((replies[0]?.[1] as string[] | undefined) ?? []);
    for (const leaseId of (replies[1]?.[1] as string[] | undefined) ?? []) known.add(leaseId);
    return known.size;
  }

  /** Enqueued/delivered flags of many leases in one round trip (a batch of drafts). */
  async leaseFlags(runId: string, leaseIds: readonly string[]): Promise<Map<string, LeaseFlags>> {
    const flags = new Map<string, LeaseFlags>();
    if (leaseIds.length === 0) return flags;
    const replies = (await LEASE_FLAGS.run(this.redis, [this.keys.runLeases(runId), this.keys.runDelivered(runId)], leaseIds)) as number[];
    leaseIds.forEach((leaseId, i) => flags.set(leaseId, flagsOf(replies[i] ?? 0)));
    return flags;
  }

  /**
   * {@link leaseFlags} and {@link stampEnqueued} of one batch in one script call: the flags of
   * every lease in `check.leaseIds`, and the enqueue clock of each lease in `check.stamp` that is
   * neither enqueued nor delivered (about to be added; a lease stamped before keeps its first time).
   */
  async checkAndStamp(runId: string, check: BatchCheck): Promise<CheckedBatch | typeof NO_RECORD> {
    const keys = [this.keys.runLeases(runId), this.keys.runDelivered(runId), this.keys.runEnqueuedAt(runId), this.keys.run(runId)];
    const reply = (await CHECK_AND_STAMP.run(this.redis, keys, checkArgs(check))) as [string, ...number[]] | -1;
    return reply === -1 ? NO_RECORD : checkedBatch(check.leaseIds, reply);
  }

  /**
   * Stamps the enqueue time (Redis clock) and coordinator-side deadlines of leases about to be
   * added, before their jobs exist, so a worker starting one at once can compute `queuedMs`.
   * @returns the time stamped, ms since the epoch by the Redis clock (a lease stamped by an
   *   earlier call keeps its first time in Redis), or {@link NO_RECORD}.
   */
  async stampEnqueued(runId: string, leases: readonly Omit<LeaseToRecord, 'index'>[]): Promise<number | typeof NO_RECORD> {
    const args = leases.flatMap(({ leaseId, scheduleToStartMs, scheduleToCloseMs }) => [leaseId, scheduleToStartMs ?? 0, scheduleToCloseMs ?? 0]);
    const now = Number(await STAMP_ENQUEUED.run(this.redis, [this.keys.runEnqueuedAt(runId), this.keys.run(runId)], args));
    return now === -1 ? NO_RECORD : now;
  }

  /**
   * Records enqueued leases (score = submission index) in one script call; a new one also gets
   * its clock entry unless {@link stampEnqueued} (or {@link checkAndStamp}) wrote it already
   * (which is kept).
   * @param stamped every lease's clock entry was written before its job was added: write none
   *   (one HSETNX less per lease).
   * @returns how many were new (only those count in `enqueued`), or {@link NO_RECORD}.
   */
  async recordLeases(runId: string, leases: readonly LeaseToRecord[], stamped = false): Promise<number | typeof NO_RECORD> {
    if (leases.length === 0) return 0;
    const args: (string | number)[] = [RUN_FIELDS.enqueued, stamped ? '1' : '0'];
    for (const { leaseId, index, scheduleToStartMs, scheduleToCloseMs } of leases) args.push(index, leaseId, scheduleToStartMs ?? 0, scheduleToCloseMs ?? 0);
    const added = (await RECORD_LEASES.run(this.redis, [this.keys.runLeases(runId), this.keys.run(runId), this.keys.runEnqueuedAt(runId)], args)) as number;
    return added === -1 ? NO_RECORD : added;
  }

  /**
   * Marks Results of one run delivered and counts each one's kind, once per lease, in one script
   * call, if `token` still holds the run's coordinator lease (checked in the same script): all
   * or none (otherwise nothing is written and `fenced` is returned). With `complete` (the run's
   * last Results), the same call then sets a `running` run's status to `completed`, as
   * {@link setStatus} would.
   * @returns per Result, in order, `new` or `again`, whether the status was changed, and the
   *   run's delivered set size after; or `fenced`; or {@link NO_RECORD}: nothing is written.
   */
  async acknowledgeMany(runId: string, results: readonly Pick<Result, 'leaseId' | 'kind'>[], token: string, complete = false): Promise<{ readonly kinds: ('new' | 'again')[]; readonly completed: boolean; readonly delivered: number } | 'fenced' | typeof NO_RECORD> {
    const pairs = results.flatMap((result) => [result.leaseId, RUN_FIELDS.kind(result.kind)]);
    const reply = await ACKNOWLEDGE.run(this.redis, [this.keys.runDelivered(runId), this.keys.run(runId), this.keys.runCoordinator(runId)], [token, complete ? RUN_FIELDS.status : '', ...pairs]);
    if (reply === -1) return 'fenced';
    if (reply === -2) return NO_RECORD;
    if (this.replicated) await this.redis.wait(1, REPLICA_WAIT_MS);
    const [completed, delivered, ...flags] = reply as number[];
    return { kinds: flags.map((flag) => (flag === 1 ? 'new' : 'again')), completed: completed === 1, delivered: delivered ?? 0 };
  }

  /** The leases among `leaseIds` that are in the run's delivered set (one round trip). */
  async deliveredAmong(runId: string, leaseIds: readonly string[]): Promise<Set<string>> {
    const delivered = new Set<string>();
    for (let i = 0; i < leaseIds.length; i += 1000) {
      const batch = leaseIds.slice(i, i + 1000);
      const flags = await this.leaseFlags(runId, batch);
      for (const leaseId of batch) if (flags.get(leaseId)?.delivered) delivered.add(leaseId);
    }
    return delivered;
  }

  /**
   * Sets the run's status (and stopReason) when the run exists and its current status is one of
   * `from`. Returns false when the run does not exist or was in another status.
   */
  async setStatus(runId: string, status: RunStatus, from: readonly RunStatus[], stopReason = ''): Promise<boolean> {
    const f = RUN_FIELDS;
    const changed = await SET_STATUS.run(this.redis, [this.keys.run(runId)], [f.status, status, f.stopReason, stopReason, ...from]);
    return changed === 1;
  }

  /** Sets the run's final spec count (known once a streamed draft list is exhausted). */
  async setSpecCount(runId: string, specCount: number): Promise<void> {
    await this.redis.hset(this.keys.run(runId), RUN_FIELDS.specCount, String(specCount));
  }

  /** Adds `count` to the run's `alreadyEnqueued` counter. */
  async countAlreadyEnqueued(runId: string, count = 1): Promise<void> {
    await incrementRunCounter(this.redis, this.keys, runId, 'alreadyEnqueued', count);
  }

  /** Lists a lease as quarantined unless the worker already did (its record is richer). */
  async quarantine(runId: string, leaseId: string, record: QuarantineRecord): Promise<void> {
    await this.redis.hsetnx(this.keys.runQuarantined(runId), leaseId, JSON.stringify(record));
  }

  /** Tells every worker to abort the run's active rollouts (contract: PUBLISH runId on the cancel channel). */
  async publishCancel(runId: string): Promise<number> {
    return this.redis.publish(this.keys.cancelChannel(redisDb(this.redis)), runId);
  }
}
