import type { Redis } from 'ioredis';
import { redisScript } from '../platform/redis-script.js';
import { bullJobLogsKey, RUN_FIELDS, runOwnKeys, type QueueKeys } from '../lease/index.js';
import { leaseBullKey, type BullKeys } from './read-job-outcomes.js';

/** Default retention of a delivered run, ms: 3 days (`ProducerOptions.retainMs`, `run --retain`). */
export const DEFAULT_RETAIN_MS = 3 * 24 * 3600 * 1000;

/** Leases handled per script call: bounds one call's size (≤ 3 keys each, plus the sets) and how long it holds Redis. */
const BATCH = 500;

// One script call per BATCH leases: PEXPIRE each lease's job hash, its log list and its lease
// hash; a delivered lease also leaves its queue's BullMQ `completed` and `failed` sets (one
// variadic ZREM per set). Placed leases live in different BullMQ queues, so every key is passed
// in KEYS: the sets of each queue first (completed, failed), then three per lease, then (in the
// last call only) the run's own keys, its record first. All share the queue prefix's hash tag
// (placement queue names extend the base name), which keeps one call in one Cluster slot.
// The last call also records endedAt (Redis TIME) and retainMs in the record and PEXPIREs the
// run's own keys: a small run's retention is this one call. Given a coordinator lease token, it
// then releases that lease (its key last in KEYS, deleted when it holds the token), as the
// coordinator's own release would: the session's end is one call.
// ARGV: retainMs, number of queues, number of leases, endedAt field ('' = not the last call),
// retainMs field, lease token ('' = no release), then per lease its id and its queue's 1-based
// number, 0 when it was not delivered.
const RETAIN = redisScript('rqRetainLeases', `
local ms = ARGV[1]
local sets = tonumber(ARGV[2]) * 2
local leases = tonumber(ARGV[3])
local gone = {}
local k = sets
local own = #KEYS
if ARGV[6] ~= '' then
  own = own - 1
  if redis.call('GET', KEYS[#KEYS]) == ARGV[6] then redis.call('DEL', KEYS[#KEYS]) end
end
for i = 7, 6 + leases * 2, 2 do
  redis.call('PEXPIRE', KEYS[k + 1], ms)
  redis.call('PEXPIRE', KEYS[k + 2], ms)
  redis.call('PEXPIRE', KEYS[k + 3], ms)
  k = k + 3
  local q = tonumber(ARGV[i + 1])
  if q > 0 then
    local ids = gone[q]
    if not ids then ids = {}; gone[q] = ids end
    ids[#ids + 1] = ARGV[i]
  end
end
for q, ids in pairs(gone) do
  redis.call('ZREM', KEYS[q * 2 - 1], unpack(ids))
  redis.call('ZREM', KEYS[q * 2], unpack(ids))
end
if ARGV[4] ~= '' then
  local t = redis.call('TIME')
  local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  redis.call('HSET', KEYS[k + 1], ARGV[4], now, ARGV[5], ms)
  for i = k + 1, own do redis.call('PEXPIRE', KEYS[i], ms) end
end
return 1`, 'any');

/** A coordinator lease the retention's last call releases: its key and the holder's token. */
export interface LeaseToRelease {
  readonly key: string;
  readonly token: string;
}

/**
 * PEXPIREs one batch of leases' keys and takes the delivered ones out of BullMQ's finished sets,
 * in one script call; with `ownKeys` (the last batch: the run's record first) it also records
 * the end and PEXPIREs those, then releases `release` when given.
 */
async function retainBatch(redis: Redis, bull: BullKeys, keys: QueueKeys, leaseIds: readonly string[], delivered: ReadonlySet<string>, retainMs: number, ownKeys?: readonly string[], release?: LeaseToRelease): Promise<void> {
  const queueOf = new Map<string, number>();
  const sets: string[] = [];
  const leaseKeys: string[] = [];
  const args: (string | number)[] = [retainMs, 0, leaseIds.length, ownKeys ? RUN_FIELDS.endedAt : '', RUN_FIELDS.retainMs, ownKeys && release ? release.token : ''];
  for (const leaseId of leaseIds) {
    const job = leaseBullKey(bull, leaseId);
    leaseKeys.push(job, bullJobLogsKey(job), keys.lease(leaseId));
    let q = 0;
    if (delivered.has(leaseId)) {
      const completed = leaseBullKey(bull, leaseId, 'completed');
      q = queueOf.get(completed) ?? 0;
      if (q === 0) {
        sets.push(completed, leaseBullKey(bull, leaseId, 'failed'));
        q = sets.length / 2;
        queueOf.set(completed, q);
      }
    }
    args.push(leaseId, q);
  }
  args[1] = sets.length / 2;
  await RETAIN.run(redis, [...sets, ...leaseKeys, ...(ownKeys ?? []), ...(ownKeys && release ? [release.key] : [])], args);
}

/** The Redis clock now, ms since the epoch (`TIME`): the one clock run timings use. */
export async function redisNowMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

// The run's enqueued leases, delivered leases and stored artifacts, read at once. A script, not
// MULTI: one request instead of five (MULTI, three reads, EXEC), and every rollout() call ends a
// run of its own. KEYS: runLeases, runDelivered, runArtifacts.
const RUN_LEASE_IDS = redisScript('rqRunLeaseIds', `
return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('SMEMBERS', KEYS[2]), redis.call('SMEMBERS', KEYS[3])}`, 3);

async function runLeaseIds(redis: Redis, keys: QueueKeys, runId: string): Promise<{ all: string[]; delivered: Set<string>; artifacts: string[] }> {
  const [leases, delivered, artifacts] = (await RUN_LEASE_IDS.run(redis, [keys.runLeases(runId), keys.runDelivered(runId), keys.runArtifacts(runId)], [])) as [string[], string[], string[]];
  const deliveredSet = new Set(delivered);
  return { all: [...new Set([...leases, ...delivered])], delivered: deliveredSet, artifacts };
}

/**
 * Starts the retention of a run whose Results are all delivered: every key of the run expires
 * `retainMs` from now (PEXPIRE): its job hashes and their log lists, its lease hashes, its
 * artifacts and its own records. Delivered jobs also leave BullMQ's `completed` / `failed`
 * sets at once, because a set entry does not expire with its job hash and would dangle (and
 * count in `getJobCounts`) forever; until the retention ends the jobs are still readable by id
 * (`Queue.getJob`) and the run by `status RUN_ID`. Records `endedAt` (Redis clock) and `retainMs`.
 * Two round trips for up to 500 leases (one read, one script call), one more per further 500;
 * one for a run whose leases the caller knows (`known`: the session that made the run and
 * delivered all of it, `RunSession`). BullMQ's own `removeOnComplete: { age }` is not used: it
 * counts from the job's finish, not its delivery, and runs only when another job finishes
 * (BullMQ docs "Auto-removal of jobs").
 * @param known every lease of the run (all delivered) and the sha256 of every stored artifact;
 *   undefined: read them from the run's sets.
 * @param release a coordinator lease the last call releases (see {@link LeaseToRelease}).
 * @throws the Redis error of a read or a script call (what was written before stays written).
 */
export async function applyRetention(
  redis: Redis,
  bull: BullKeys,
  keys: QueueKeys,
  runId: string,
  retainMs: number,
  known?: { readonly leaseIds: readonly string[]; readonly artifacts: readonly string[] },
  release?: LeaseToRelease,
): Promise<void> {
  const { all, delivered, artifacts } = known ? { all: [...new Set(known.leaseIds)], delivered: new Set(known.leaseIds), artifacts: known.artifacts } : await runLeaseIds(redis, keys, runId);
  await bull.resolve?.(all);
  const record = keys.run(runId);
  const ownKeys = [record, ...runOwnKeys(keys, runId).filter((key) => key !== record), ...artifacts.map((sha) => keys.runArtifact(runId, sha))];
  // At least one call (the last), even for a run without leases: it records the end.
  for (let i = 0; i === 0 || i < all.length; i += BATCH) {
    const last = i + BATCH >= all.length;
    await retainBatch(redis, bull, keys, all.slice(i, i + BATCH), delivered, retainMs, last ? ownKeys : undefined, release);
  }
}

/**
 * Undoes {@link applyRetention} for a run that starts again (the same run id with new drafts
 * inside its retention window): its own records and artifacts no longer expire. Job hashes
 * of leases delivered before keep their expiry: nothing reads them again.
 */
export async function persistRun(redis: Redis, keys: QueueKeys, runId: string): Promise<void> {
  const artifacts = await redis.smembers(keys.runArtifacts(runId));
  const tx = redis.multi().hdel(keys.run(runId), RUN_FIELDS.endedAt, RUN_FIELDS.retainMs);
  for (const key of [...runOwnKeys(keys, runId), ...artifacts.map((sha) => keys.runArtifact(runId, sha))]) tx.persist(key);
  await tx.exec();
}
