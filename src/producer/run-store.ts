import type { Redis } from 'ioredis';
import type { RedisClock } from '../platform/redis-clock.js';
import { redisDb } from '../platform/redis-connection.js';
import { redisScript } from '../platform/redis-script.js';
import type { LeaseTake } from './coordinator-lease.js';
import { incrementRunCounter, RUN_FIELDS, runHasRecordLua, type QueueKeys, type RunStatus } from '../lease/index.js';
import type { Result } from '../spec/index.js';

/** What {@link RunStore.opener} found (and made) when it took the coordinator lease. */
export interface OpenedRun {
  /** The run record as it was before this call; undefined when no such run existed. */
  readonly head: RunHead | undefined;
  /** With `create` (and a run neither stopped nor cancelled): the record as it is now. */
  readonly created?: {
    /** The stored runAttemptId (an existing run keeps its own). */
    readonly runAttemptId: string;
    /** The stored specCount (an existing run keeps its own), null when unknown. */
    readonly specCount: number | null;
    /** The run was completed and is running again: undo its retention (`persistRun`). */
    readonly reopened: boolean;
    /** A new run (no record before) given an opening batch: that batch's check, as {@link RunStore.checkAndStamp} replies. */
    readonly checked?: CheckedBatch;
  };
}

/** The leases of one batch of drafts to check, and those of them to stamp (see {@link RunStore.checkAndStamp}). */
export interface BatchCheck {
  readonly leaseIds: readonly string[];
  readonly stamp: readonly Omit<LeaseToRecord, 'index'>[];
}

/** What {@link RunStore.checkAndStamp} found: each lease's flags, and the time stamped (ms since the epoch, Redis clock). */
export interface CheckedBatch {
  readonly flags: ReadonlyMap<string, LeaseFlags>;
  readonly stampedAt: number;
}

/** The parts of a run record the producer steers by. */
export interface RunHead {
  readonly status: RunStatus;
  readonly stopReason: string | null;
  readonly runAttemptId: string | null;
  readonly specCount: number | null;
  readonly enqueued: number;
  /**
   * Size of the run's delivered set, where the read included it ({@link RunStore.readHead}): it
   * only grows while the run lives, so a smaller one than seen before means Redis went back to
   * an older state (`RollbackWatch`).
   */
  readonly delivered?: number;
}

/** Quarantine record of a lease ended by the stall limit (same shape the worker writes). */
export interface QuarantineRecord {
  readonly reason: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderrTail: string;
}

/** Longest wait, ms, for a replica to confirm an acknowledgement (Redis `WAIT 1 <ms>`; see RunStore's `replicated`). */
export const REPLICA_WAIT_MS = 500;

/**
 * What a write of a run's bookkeeping returns, having written nothing, when the run has no record
 * (`runHasRecordLua`): Redis lost it mid-run (restarted without persistence, or flushed). Its
 * coordinator makes the record again ({@link RunStore.restoreRun}) and writes again: keys made
 * for a run without a record were never expired by any retention.
 */
export const NO_RECORD = 'no-record';

// ZADD NX each lease then count the new ones, atomically: a lease is counted in `enqueued`
// exactly once however often it is re-submitted. A new lease also gets its clock entry
// (JSON [enqueuedAt by Redis TIME in ms, scheduleToStartMs, scheduleToCloseMs], 0 = none),
// unless ARGV[2] = '1' says every lease's entry was written before its job was added.
// Returns -1, writing nothing, when the run has no record (see NO_RECORD).
// KEYS: runLeases, run, runEnqueuedAt. ARGV: enqueued field, stamped '1'/'0', then score,
// leaseId, start, close quads.
const RECORD_LEASES = redisScript('rqRecordLeases', `
if not ${runHasRecordLua('KEYS[2]')} then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local added = 0
for i = 3, #ARGV, 4 do
  local new = redis.call('ZADD', KEYS[1], 'NX', ARGV[i], ARGV[i + 1])
  if new == 1 and ARGV[2] ~= '1' then
    redis.call('HSETNX', KEYS[3], ARGV[i + 1], '[' .. string.format('%d', now) .. ',' .. ARGV[i + 2] .. ',' .. ARGV[i + 3] .. ']')
  end
  added = added + new
end
if added > 0 then redis.call('HINCRBY', KEYS[2], ARGV[1], added) end
return added`, 3);

// The enqueue clock of leases about to be added, written BEFORE addBulk so that a worker that
// takes a job at once still finds it (its queuedMs would be null otherwise). HSETNX: a lease
// re-submitted after a coordinator crash keeps its first time, and RECORD_LEASES's own HSETNX
// (after addBulk) leaves it alone. Returns the time stamped, which the jobs carry too, or -1
// when the run has no record (see NO_RECORD).
// KEYS: runEnqueuedAt, run. ARGV: leaseId, start, close triples.
const STAMP_ENQUEUED = redisScript('rqStampEnqueued', `
if not ${runHasRecordLua('KEYS[2]')} then return -1 end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
for i = 1, #ARGV, 3 do
  redis.call('HSETNX', KEYS[1], ARGV[i], '[' .. now .. ',' .. ARGV[i + 1] .. ',' .. ARGV[i + 2] .. ']')
end
return now`, 2);

// Per lease: 1 when it is in runLeases (enqueued), + 2 when in runDelivered. A script rather
// than ZMSCORE/SMISMEMBER, which need Redis 6.2 while BullMQ still runs on 5.
// KEYS: runLeases, runDelivered. ARGV: leaseIds.
const LEASE_FLAGS = redisScript('rqLeaseFlags', `
local flags = {}
for i = 1, #ARGV do
  local f = 0
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then f = 1 end
  if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 1 then f = f + 2 end
  flags[i] = f
end
return flags`, 2);

/** A lease {@link RunStore.recordLeases} records: its submission index and its coordinator-side deadlines. */
export interface LeaseToRecord {
  readonly leaseId: string;
  readonly index: number;
  readonly scheduleToStartMs?: number | undefined;
  readonly scheduleToCloseMs?: number | undefined;
}

/** What {@link RunStore.leaseFlags} knows of a lease. */
export interface LeaseFlags {
  /** In the run's enqueued set: a re-submission must not add it again. */
  readonly enqueued: boolean;
  /** Its Result was acknowledged before. */
  readonly delivered: boolean;
}

// SADD delivered, and count the kind only when the lease was not delivered before: the
// consumer may see a Result twice (at-least-once), the counters count it once. Fenced: only
// the holder of the coordinator lease (its token in KEYS[3]) may acknowledge. With a status
// field, then marks a running run completed (as SET_STATUS with 'running' allowed: the run's
// last Results). Replies {completed 1/0, the delivered set's size after, then one flag per
// (leaseId, kind field) pair (1 new, 0 again)}, or a single -1 when fenced, -2 when the run has no record (nothing written either
// way): after Redis restarted empty mid-run the coordinator retakes its lease, and its SADD and
// HINCRBY made a delivered set and a counters-only hash that nothing ever expired.
// KEYS: runDelivered, run, runCoordinator. ARGV: lease token, status field ('' = leave the
// status), then leaseId, kind field pairs.
const ACKNOWLEDGE = redisScript('rqAcknowledge', `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -1 end
if not ${runHasRecordLua('KEYS[2]')} then return -2 end
local reply = {0, 0}
for i = 3, #ARGV, 2 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('HINCRBY', KEYS[2], ARGV[i + 1], 1)
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[2], ARGV[2]) == 'running' then
  redis.call('HSET', KEYS[2], ARGV[2], 'completed')
  reply[1] = 1
end
reply[2] = redis.call('SCARD', KEYS[1])
return reply`, 3);

// HSET status only when the run exists and its status is one of ARGV[3..]; never creates a
// half record, never turns a cancelled run back into a completed one.
// KEYS: run. ARGV: status field, new status, stopReason field, stopReason ('' = leave), allowed...
const SET_STATUS = redisScript('rqSetStatus', `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local current = redis.call('HGET', KEYS[1], ARGV[1])
for i = 5, #ARGV do
  if current == ARGV[i] then
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
    if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
    return 1
  end
end
return 0`, 1);

// LEASE_FLAGS and STAMP_ENQUEUED of one batch in one call: the flags of every lease in ARGV
// from `from` on, and the enqueue clock (HSETNX, as STAMP_ENQUEUED) of each lease marked
// stampable whose flags are 0 (neither enqueued nor delivered: it is about to be added).
// Returns {now, flags...}. In CHECK_AND_STAMP and in OPEN_RUN (a new run's first batch).
// ARGV from `from`: leaseId, stamp '1'/'0', start, close quads.
const checkAndStampLua = (leases: string, delivered: string, enqueuedAt: string, from: number): string => `
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local checked = {now}
for i = ${from}, #ARGV, 4 do
  local f = 0
  if redis.call('ZSCORE', ${leases}, ARGV[i]) then f = 1 end
  if redis.call('SISMEMBER', ${delivered}, ARGV[i]) == 1 then f = f + 2 end
  if f == 0 and ARGV[i + 1] == '1' then
    redis.call('HSETNX', ${enqueuedAt}, ARGV[i], '[' .. now .. ',' .. ARGV[i + 2] .. ',' .. ARGV[i + 3] .. ']')
  end
  checked[#checked + 1] = f
end`;

// Returns -1, writing nothing, when the run has no record (see NO_RECORD).
// KEYS: runLeases, runDelivered, runEnqueuedAt, run. ARGV: the quads of checkAndStampLua.
const CHECK_AND_STAMP = redisScript('rqCheckAndStamp', `
if not ${runHasRecordLua('KEYS[4]')} then return -1 end
${checkAndStampLua('KEYS[1]', 'KEYS[2]', 'KEYS[3]', 1)}
return checked`, 4);

// A session's first round trip: take the coordinator lease (SET NX PX) and, once taken, read
// the run head; with `create`, also make the run record (HSETNX, as ensureRun) unless the run
// was stopped or cancelled, turning a completed run back to running (its retention is undone
// by the caller), and when the record did not exist, check and stamp the first batch given
// (checkAndStampLua). Returns {0, holder} when the lease is held by another, else {1, head
// fields before any change, reopened 0/1, stored runAttemptId, stored specCount, {now, flags...}}
// (the last three only with create, the last one only for a new run given a batch).
// KEYS: runCoordinator, run, runs, runLeases, runDelivered, runEnqueuedAt. ARGV: token, ttl ms,
// create '1'/'0', runId, createdAt, runAttemptId, specCount ('' = unknown), then fields status,
// stopReason, runAttemptId, specCount, enqueued, createdAt, then sourceFingerprint's field and
// value ('' = none), then the batch's quads (may be none).
const OPEN_RUN = redisScript('rqOpenRun', `
if not redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return {0, redis.call('GET', KEYS[1])} end
local head = redis.call('HMGET', KEYS[2], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12])
local status = head[1]
if ARGV[3] ~= '1' or status == 'stopped' or status == 'cancelled' then return {1, head, 0} end
local new = redis.call('EXISTS', KEYS[2]) == 0
local reopened = 0
if status == 'completed' then
  redis.call('HSET', KEYS[2], ARGV[8], 'running')
  reopened = 1
end
redis.call('HSETNX', KEYS[2], ARGV[13], ARGV[5])
redis.call('HSETNX', KEYS[2], ARGV[8], 'running')
redis.call('HSETNX', KEYS[2], ARGV[10], ARGV[6])
if ARGV[7] ~= '' then redis.call('HSETNX', KEYS[2], ARGV[11], ARGV[7]) end
if ARGV[15] ~= '' then redis.call('HSETNX', KEYS[2], ARGV[14], ARGV[15]) end
redis.call('SADD', KEYS[3], ARGV[4])
local reply = {1, head, reopened, redis.call('HGET', KEYS[2], ARGV[10]), redis.call('HGET', KEYS[2], ARGV[11]) or ''}
if not new or #ARGV < 16 then return reply end
${checkAndStampLua('KEYS[4]', 'KEYS[5]', 'KEYS[6]', 16)}
reply[6] = checked
return reply`, 6);

/** A lease's flags as LEASE_FLAGS and checkAndStampLua reply them (1 enqueued, + 2 delivered). */
const flagsOf = (f: number): LeaseFlags => ({ enqueued: (f & 1) !== 0, delivered: (f & 2) !== 0 });

/** The ARGV quads of checkAndStampLua for `check`. */
const checkArgs = ({ leaseIds, stamp }: BatchCheck): (string | number)[] => {
  const deadlines = new Map(stamp.map((lease) => [lease.leaseId, lease]));
  return leaseIds.flatMap((leaseId) => {
    const lease = deadlines.get(leaseId);
    return [leaseId, lease ? '1' : '0', lease?.scheduleToStartMs ?? 0, lease?.scheduleToCloseMs ?? 0];
  });
};

/** checkAndStampLua's reply {now, flags...} for `leaseIds`. */
const checkedBatch = (leaseIds: readonly string[], [now, ...replies]: readonly [string, ...number[]]): CheckedBatch => {
  const flags = new Map<string, LeaseFlags>();
  leaseIds.forEach((leaseId, i) => flags.set(leaseId, flagsOf(replies[i] ?? 0)));
  return { flags, stampedAt: Number(now) };
};

const int = (value: string | null | undefined): number | null => (value ? Number.parseInt(value, 10) : null);

const headOf = (values: readonly (string | null)[]): RunHead | undefined => {
  const [status, stopReason, runAttemptId, specCount, enqueued] = values;
  // No status and no runAttemptId: no run, whatever else the hash holds (see readRunRecord).
  if ((status === null || status === undefined) && (runAttemptId === null || runAttemptId === undefined)) return undefined;
  return {
    status: (status as RunStatus | null) ?? 'running',
    stopReason: stopReason ?? null,
    runAttemptId: runAttemptId ?? null,
    specCount: int(specCount),
    enqueued: int(enqueued) ?? 0,
  };
};


/** What a new run's record is made with (an existing run keeps its own fields). */
export interface RunCreation {
  readonly runAttemptId: string;
  /** Number of drafts, undefined while unknown (a stream). */
  readonly specCount: number | undefined;
  /** `MapRolloutsOptions.sourceFingerprint`, stored once. */
  readonly sourceFingerprint?: string;
}

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
            runAttemptId: runAttemptId ?? create.runAttemptId, specCount: int(specCount), reopened: reopened === 1,
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
