import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { redisScript } from '../platform/redis-script.js';

/** Wrap-ups of runs in this process between two prunes of the run list. */
export const PRUNE_EVERY_RUNS = 64;
/**
 * Run ids sampled per prune (`SRANDMEMBER`). Twice {@link PRUNE_EVERY_RUNS}: every run ends up
 * expired, so a prune must take out about as many ids as were added since the last one; at
 * twice the sample the list settles at no more than about twice the runs whose record still exists.
 */
export const PRUNE_SAMPLE = PRUNE_EVERY_RUNS * 2;

// Takes the sampled ids whose run record is gone out of the run list, in one script, so a run
// created again under the same id between the sample and the removal keeps its entry.
// KEYS: runs, then each sampled run's record. ARGV: the sampled run ids, in the same order.
const PRUNE = redisScript('rqPruneRunList', `
local gone = {}
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then gone[#gone + 1] = ARGV[i] end
end
if #gone > 0 then redis.call('SREM', KEYS[1], unpack(gone)) end
return #gone`, 'any');

/**
 * Takes run ids whose record expired (the end of their retention, `applyRetention`) or was
 * deleted out of the queue's run list (`QueueKeys.runs`, read by `status`). A SET member has no
 * TTL of its own, so without this every run, and every `rollout()` call is one, left an entry
 * behind for ever. Samples {@link PRUNE_SAMPLE} ids at random rather than reading the whole list:
 * two requests, whatever the list's size.
 * @returns how many ids were taken out.
 * @throws the Redis error of either request.
 */
export async function pruneRunList(redis: Redis, keys: QueueKeys, sample = PRUNE_SAMPLE): Promise<number> {
  const ids = await redis.srandmember(keys.runs(), sample);
  if (ids.length === 0) return 0;
  return (await PRUNE.run(redis, [keys.runs(), ...ids.map((id) => keys.run(id))], ids)) as number;
}

