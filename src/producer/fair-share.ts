import type { Redis } from 'ioredis';
import { redisScript } from '../platform/redis-script.js';

/** A run's weight when none is given: every run of a queue gets an equal share. */
export const DEFAULT_RUN_WEIGHT = 1;
/** Smallest weight: a run of weight 0.01 gets one slot for every 100 of a weight-1 run. */
export const MIN_RUN_WEIGHT = 0.01;
/** Largest weight (the other end of the same 10 000:1 range). */
export const MAX_RUN_WEIGHT = 100;

/**
 * BullMQ's largest job priority, `2 ** 21 - 1` (`PRIORITY_LIMIT` in BullMQ `src/classes/job.ts`;
 * `add` throws above it). A priority is stored as `priority * 2^32 + pc` in the queue's
 * `prioritized` ZSET (`includes/getPriorityScore.lua`), lowest first, ties in insertion order.
 */
export const BULL_PRIORITY_LIMIT = 2 ** 21 - 1;

/**
 * Virtual time past which the clock starts again at 1 the next time the queue has nothing
 * waiting (half of BULL_PRIORITY_LIMIT: the other half is headroom for runs still enqueuing).
 */
const REBASE_AT = 2 ** 20;

/** Run fields kept past which the script drops those of runs that fell behind the clock. */
const PRUNE_PAST = 256;

/**
 * Start-time fair queuing (Goyal et al., SIGCOMM 1996) over BullMQ priorities. The system's
 * virtual time V is the priority of the job at the head of the queue's `prioritized` ZSET (the
 * next one a worker takes), or the last one seen when nothing waits. A run's jobs get start tags
 * `S_k = max(V, F) + k / weight` (F: where its last batch ended), priority `floor(S_k)`: two
 * equal runs alternate in the queue, a run that starts late starts at V (not behind the whole
 * window of the runs already there), and a run that was idle gets no burst for the time it was.
 *
 * KEYS[1] fair-share hash (`keys.fairShare(queue)`), KEYS[2] BullMQ `prioritized` ZSET.
 * ARGV runId, weight, count, BullMQ's priority limit, rebase point, prune size.
 * Returns the `count` priorities (integers ≥ 1), in the batch's order.
 */
const ASSIGN = redisScript('rqFairShareAssign', `
local runField = 'r:' .. ARGV[1]
local weight = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local clock = tonumber(redis.call('HGET', KEYS[1], '~clock') or '1')
if head[2] then
  clock = math.floor(tonumber(head[2]) / 4294967296)
elseif clock > tonumber(ARGV[5]) then
  -- Nothing waits: every tag is history, so the clock starts again far below BullMQ's limit.
  redis.call('DEL', KEYS[1])
  clock = 1
end
local finish = 0
local prev = redis.call('HGET', KEYS[1], runField)
if prev then finish = tonumber(string.match(prev, '^(%S+)')) or 0 end
local start = math.max(clock, finish)
local step = 1 / weight
local out = {}
for i = 1, count do
  local p = math.floor(start + (i - 1) * step)
  if p < 1 then p = 1 end
  if p > limit then p = limit end
  out[i] = p
end
redis.call('HSET', KEYS[1], runField, string.format('%.6f %s', start + count * step, ARGV[2]), '~clock', tostring(clock))
if redis.call('HLEN', KEYS[1]) > tonumber(ARGV[6]) then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local tag = string.match(all[i + 1], '^(%S+)')
    if string.sub(all[i], 1, 2) == 'r:' and all[i] ~= runField and tonumber(tag) and tonumber(tag) < clock then redis.call('HDEL', KEYS[1], all[i]) end
  end
end
return out
`, 2);

/**
 * The share of the queue a run asks for. `weight` is relative: a run of weight 2 gets two slots
 * for each one of a weight-1 run while both have jobs waiting; alone, a run gets every slot.
 */
export interface RunShare {
  readonly runId: string;
  /** MIN_RUN_WEIGHT–MAX_RUN_WEIGHT; DEFAULT_RUN_WEIGHT when not given. */
  readonly weight: number;
}

/**
 * The BullMQ priorities of the next `count` jobs `share.runId` adds to one queue, from the
 * queue's fair-share clock (see the script above), in one round trip. The tags are whole numbers:
 * jobs of runs whose tags fall on the same number go in the order they were added.
 *
 * When the clock reaches BullMQ's limit while jobs keep waiting (about a million job-steps of a
 * weight-1 run without the queue ever being empty), new jobs all get the limit: the queue is
 * first-in first-out until it empties once, when the clock starts again.
 * @param fairKey `keys.fairShare(queueName)`; `prioritizedKey` BullMQ's `toKey('prioritized')` of the same queue.
 * @throws a Redis error (the caller's add fails as any add would).
 */
export async function assignPriorities(redis: Redis, fairKey: string, prioritizedKey: string, share: RunShare, count: number): Promise<number[]> {
  if (count === 0) return [];
  const reply = await ASSIGN.run(redis, [fairKey, prioritizedKey], [share.runId, share.weight, count, BULL_PRIORITY_LIMIT, REBASE_AT, PRUNE_PAST]);
  return (reply as (number | string)[]).map(Number);
}

/**
 * The weights recorded in one queue's fair-share hash, by run id (the weight each run last
 * enqueued with). Runs that fell behind the clock may have been pruned: absent means default.
 */
export async function readWeights(redis: Redis, fairKey: string): Promise<Map<string, number>> {
  const fields = await redis.hgetall(fairKey);
  const weights = new Map<string, number>();
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith('r:')) continue;
    const weight = Number(value.split(' ')[1]);
    if (Number.isFinite(weight)) weights.set(field.slice(2), weight);
  }
  return weights;
}

/**
 * Checks a run's weight (library option `weight`, CLI `run --weight`).
 * @returns the weight, DEFAULT_RUN_WEIGHT when undefined.
 * @throws TypeError naming `field`, the value and the allowed range.
 */
export function checkRunWeight(weight: unknown, field = 'weight'): number {
  if (weight === undefined) return DEFAULT_RUN_WEIGHT;
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < MIN_RUN_WEIGHT || weight > MAX_RUN_WEIGHT) {
    throw new TypeError(`${field} must be a number from ${MIN_RUN_WEIGHT} to ${MAX_RUN_WEIGHT} (a run's share of the queue's workers relative to other runs; default ${DEFAULT_RUN_WEIGHT}); got ${typeof weight === 'number' ? weight : typeof weight}`);
  }
  return weight;
}
