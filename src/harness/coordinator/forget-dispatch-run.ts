import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { redisScript } from '../../platform/redis-script.js';
import { runOwnKeys, type QueueKeys } from '../../lease/index.js';

// While the answer (KEYS[1]) lives, the keys that say the lease was delivered (KEYS[2] up to
// 1 + ARGV[2]) expire with it; without one they are deleted. The answer's expiry is set again,
// last and with the same TTL, so that it never expires before them (the clock may tick between
// two PEXPIREs). Every other key after them is deleted, and the run id (ARGV[1]) leaves the
// runs SET (KEYS[#KEYS]).
const FORGET = redisScript('rqForgetDispatchRun', `
local ttl = redis.call('PTTL', KEYS[1])
local marks = tonumber(ARGV[2])
for i = 2, 1 + marks do
  if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) else redis.call('DEL', KEYS[i]) end
end
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
for i = 2 + marks, #KEYS - 1 do redis.call('DEL', KEYS[i]) end
redis.call('SREM', KEYS[#KEYS], ARGV[1])
if ttl > 0 then return 1 end
return 0`, 'any');

/**
 * What {@link forgetDispatchRun} did: nothing (`active`: the job is still held by a worker), or
 * deleted the call's keys, those saying its lease was delivered kept with its answer (`kept`) or
 * not (`deleted`: a later call of the cell runs it afresh).
 */
export type ForgetOutcome = 'active' | 'kept' | 'deleted';

/**
 * Ends what one dispatch run left in Redis once its call has returned (delivered, or aborted):
 * deletes its BullMQ job (BullMQ's own `Queue.remove`, which refuses a job that is still locked by
 * a worker), its stored artifacts, the worker's `lease` hash with its receipts, the `runs` member
 * and the rest of its bookkeeping. The run record, `runLeases` and `runDelivered` (what tells a
 * later session of the run that its lease was delivered) and the lease hash (its receipts, which
 * `status` of the run counts) expire with the kept answer
 * (`dispatchAnswer`; one script call, never after it) rather than at once: a process that waited
 * for the run's coordinator lease and gets it after this finds the lease delivered, not a missing
 * run (so it does not run the Dispatch a second time), and reads the kept answer. Without a kept
 * answer (`keepAnswerMs: 0`, a transient, an abort) every key goes now: a retry runs afresh. The
 * answer stays (its expiry moves by at most the script's run time). Idempotent: a later call
 * expires the marks with the answer again, undoing the retention a session of the run applied meanwhile.
 * @returns `active` when the job is still active (an aborted dispatch whose worker has not
 *   stopped yet): nothing was deleted, try again later; else `kept` or `deleted` ({@link ForgetOutcome}).
 */
export async function forgetDispatchRun(redis: Redis, queue: Queue, keys: QueueKeys, runId: string, leaseId: string): Promise<ForgetOutcome> {
  const removed = await queue.remove(leaseId);
  if (removed === 0 && (await redis.exists(queue.toKey(leaseId))) === 1) return 'active';
  const artifacts = await redis.smembers(keys.runArtifacts(runId));
  // The lease hash holds the receipts: kept with the answer, `status` of the run counts its cost.
  const marks = [keys.run(runId), keys.runLeases(runId), keys.runDelivered(runId), keys.lease(leaseId)];
  const rest = runOwnKeys(keys, runId).filter((key) => !marks.includes(key));
  const kept = await FORGET.run(redis, [keys.dispatchAnswer(runId), ...marks, ...rest, ...artifacts.map((sha) => keys.runArtifact(runId, sha)), keys.dispatchRequest(runId), keys.runs()], [runId, marks.length]);
  return Number(kept) === 1 ? 'kept' : 'deleted';
}
