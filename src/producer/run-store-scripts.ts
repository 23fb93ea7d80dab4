import { runHasRecordLua, type RunStatus } from '../lease/index.js';
import { redisScript } from '../platform/redis-script.js';
import type { BatchCheck, CheckedBatch, LeaseFlags, RunHead } from './run-store-shapes.js';

// The Lua scripts of RunStore (run-store.ts), each with its KEYS/ARGV contract, and the decoders
// of their replies: one script per multi-step change, so a coordinator killed at any point leaves
// a consistent record.

// ZADD NX each lease then count the new ones, atomically: a lease is counted in `enqueued`
// exactly once however often it is re-submitted. A new lease also gets its clock entry
// (JSON [enqueuedAt by Redis TIME in ms, scheduleToStartMs, scheduleToCloseMs], 0 = none),
// unless ARGV[2] = '1' says every lease's entry was written before its job was added.
// Returns -1, writing nothing, when the run has no record (see NO_RECORD).
// KEYS: runLeases, run, runEnqueuedAt. ARGV: enqueued field, stamped '1'/'0', then score,
// leaseId, start, close quads.
export const RECORD_LEASES = redisScript('rqRecordLeases', `
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
export const STAMP_ENQUEUED = redisScript('rqStampEnqueued', `
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
export const LEASE_FLAGS = redisScript('rqLeaseFlags', `
local flags = {}
for i = 1, #ARGV do
  local f = 0
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then f = 1 end
  if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 1 then f = f + 2 end
  flags[i] = f
end
return flags`, 2);

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
export const ACKNOWLEDGE = redisScript('rqAcknowledge', `
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
export const SET_STATUS = redisScript('rqSetStatus', `
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
export const CHECK_AND_STAMP = redisScript('rqCheckAndStamp', `
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
export const OPEN_RUN = redisScript('rqOpenRun', `
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
export const flagsOf = (f: number): LeaseFlags => ({ enqueued: (f & 1) !== 0, delivered: (f & 2) !== 0 });

/** The ARGV quads of checkAndStampLua for `check`. */
export const checkArgs = ({ leaseIds, stamp }: BatchCheck): (string | number)[] => {
  const deadlines = new Map(stamp.map((lease) => [lease.leaseId, lease]));
  return leaseIds.flatMap((leaseId) => {
    const lease = deadlines.get(leaseId);
    return [leaseId, lease ? '1' : '0', lease?.scheduleToStartMs ?? 0, lease?.scheduleToCloseMs ?? 0];
  });
};

/** checkAndStampLua's reply {now, flags...} for `leaseIds`. */
export const checkedBatch = (leaseIds: readonly string[], [now, ...replies]: readonly [string, ...number[]]): CheckedBatch => {
  const flags = new Map<string, LeaseFlags>();
  leaseIds.forEach((leaseId, i) => flags.set(leaseId, flagsOf(replies[i] ?? 0)));
  return { flags, stampedAt: Number(now) };
};

/** A run record's integer field, null when absent or empty. */
export const intOrNull = (value: string | null | undefined): number | null => (value ? Number.parseInt(value, 10) : null);

/** The RunHead of a run record's HMGET of status, stopReason, runAttemptId, specCount, enqueued; undefined when there is no run. */
export const headOf = (values: readonly (string | null)[]): RunHead | undefined => {
  const [status, stopReason, runAttemptId, specCount, enqueued] = values;
  // No status and no runAttemptId: no run, whatever else the hash holds (see readRunRecord).
  if ((status === null || status === undefined) && (runAttemptId === null || runAttemptId === undefined)) return undefined;
  return {
    status: (status as RunStatus | null) ?? 'running',
    stopReason: stopReason ?? null,
    runAttemptId: runAttemptId ?? null,
    specCount: intOrNull(specCount),
    enqueued: intOrNull(enqueued) ?? 0,
  };
};
