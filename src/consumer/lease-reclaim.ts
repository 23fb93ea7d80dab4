import type { Redis } from 'ioredis';
import { bullLeaseKeys } from '../lease/index.js';
import { redisScript } from '../platform/redis-script.js';

/**
 * Where a lease stands for an attempt that asks to hold it again (see {@link reclaimLease}):
 * - `ours`: the attempt's lock token is still the lock (extended now);
 * - `reclaimed`: nobody held it (the lock expired while Redis stalled) and it was in `active`, or
 *   back in `wait` where BullMQ's stalled check put it and no worker had taken it yet: it is the
 *   attempt's again, in `active` under its token;
 * - `taken`: another attempt holds the lock (a real re-dispatch happened);
 * - `finished`: the job is completed or failed already (`returnvalue` says by what Result);
 * - `gone`: the job no longer exists (its run was purged);
 * - `elsewhere`: neither active nor waiting (delayed, prioritized): left alone.
 */
export type ReclaimOutcome =
  | { readonly state: 'ours' | 'reclaimed' | 'taken' | 'gone' | 'elsewhere' }
  | { readonly state: 'finished'; readonly returnvalue: string };

// KEYS: job hash, lock, active, wait, stalled. ARGV: job id, lock token, lock duration (ms), the
// job's stalled count (`stc`) when the attempt started. A job in `wait` is taken back only when
// BullMQ's stalled check put it there (it counts `stc` up first): one the attempt handed back
// itself (`moveToWait` on shutdown or a lost lock) stays handed back.
// BullMQ's stalled check moves a job only when its lock is missing (moveStalledJobsToWait-9.lua)
// and moveToFinished needs the job in `active` with the token as its lock (removeLock.lua): after
// this script both hold for a reclaimed lease, and the stalled check leaves it alone (its lock
// exists). A job that left `wait` for another worker has that worker's lock: `taken`.
const RECLAIM = redisScript('rqReclaimLease', `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone', ''} end
local holder = redis.call('GET', KEYS[2])
if holder == ARGV[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('SREM', KEYS[5], ARGV[1])
  return {'ours', ''}
end
if holder then return {'taken', ''} end
if redis.call('HEXISTS', KEYS[1], 'finishedOn') == 1 then return {'finished', redis.call('HGET', KEYS[1], 'returnvalue') or ''} end
if redis.call('LREM', KEYS[3], 1, ARGV[1]) == 0 then
  if tonumber(redis.call('HGET', KEYS[1], 'stc') or '0') <= tonumber(ARGV[4]) then return {'elsewhere', ''} end
  if redis.call('LREM', KEYS[4], 1, ARGV[1]) == 0 then return {'elsewhere', ''} end
end
redis.call('LPUSH', KEYS[3], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('SREM', KEYS[5], ARGV[1])
return {'reclaimed', ''}
`, 5);

/**
 * Makes lease `leaseId` of `queue` the attempt's with lock token `token` again if it still is, or
 * if nobody holds it (one atomic script; see {@link ReclaimOutcome}). The lock then lasts
 * `lockDurationMs` from now; BullMQ's lock renewal (if the attempt still runs) or its finish
 * (`moveToCompleted` with the same token) takes over.
 * @param stalledCount the job's `stalledCounter` when the attempt started (BullMQ `stc`).
 * @throws whatever the client throws ("Command timed out" while Redis does not answer: the script
 *   may still run when Redis wakes, which is harmless, it is idempotent for the same token).
 */
export async function reclaimLease(redis: Redis, prefix: string, queue: string, leaseId: string, token: string, lockDurationMs: number, stalledCount: number): Promise<ReclaimOutcome> {
  const keys = bullLeaseKeys(prefix, queue, leaseId);
  const [state, returnvalue] = (await RECLAIM.run(redis, [keys.job, keys.lock, keys.active, keys.wait, keys.stalled], [leaseId, token, lockDurationMs, stalledCount])) as [string, string];
  if (state === 'finished') return { state, returnvalue };
  return { state: state as Exclude<ReclaimOutcome['state'], 'finished'> };
}
