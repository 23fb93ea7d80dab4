import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reclaimLease } from '../../../src/consumer/lease-reclaim.js';
import { bullLeaseKeys } from '../../../src/lease/index.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// Issue 33 item 2: the script a worker runs to take back a lease whose lock expired while Redis
// stalled, on the BullMQ key layout (job hash, `:lock`, `active`, `wait`, `stalled`). Each state a
// lease can be in after a stall, written as BullMQ writes it, and what the script makes of it.
const PREFIX = 'reclaimt';
const QUEUE = 'q';
let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  const keys = await client.keys(`${PREFIX}:*`);
  if (keys.length > 0) await client.del(...keys);
  client.disconnect();
  await redis.stop();
});

/** A job hash like BullMQ's, in the given list, with the given lock token (or none). */
async function lease(id: string, list: 'active' | 'wait' | undefined, lock: string | undefined, fields: Record<string, string> = {}): Promise<ReturnType<typeof bullLeaseKeys>> {
  const keys = bullLeaseKeys(PREFIX, QUEUE, id);
  await client.hset(keys.job, { data: '{}', timestamp: String(Date.now()), ...fields });
  if (list) await client.lpush(keys[list], id);
  if (lock) await client.set(keys.lock, lock, 'PX', 60_000);
  await client.sadd(keys.stalled, id);
  return keys;
}

describe('reclaimLease', () => {
  it('a lock still the attempt\'s: ours, extended, out of the stalled set', async () => {
    const keys = await lease('own', 'active', 'tok-1');
    expect(await reclaimLease(client, PREFIX, QUEUE, 'own', 'tok-1', 5000, 0)).toEqual({ state: 'ours' });
    expect(await client.pttl(keys.lock)).toBeLessThanOrEqual(5000);
    expect(await client.sismember(keys.stalled, 'own')).toBe(0);
  });

  it('an expired lock on a job still in active: reclaimed under the attempt\'s token', async () => {
    const keys = await lease('expired', 'active', undefined);
    expect(await reclaimLease(client, PREFIX, QUEUE, 'expired', 'tok-2', 5000, 0)).toEqual({ state: 'reclaimed' });
    expect(await client.get(keys.lock)).toBe('tok-2');
    expect(await client.lrange(keys.active, 0, -1)).toContain('expired');
    expect(await client.sismember(keys.stalled, 'expired')).toBe(0);
  });

  it('a job the stalled check put back in wait and nobody took: back in active, the attempt\'s', async () => {
    const keys = await lease('waiting', 'wait', undefined, { stc: '1' });
    expect(await reclaimLease(client, PREFIX, QUEUE, 'waiting', 'tok-3', 5000, 0)).toEqual({ state: 'reclaimed' });
    expect(await client.lrange(keys.wait, 0, -1)).not.toContain('waiting');
    expect(await client.lrange(keys.active, 0, -1)).toContain('waiting');
    expect(await client.get(keys.lock)).toBe('tok-3');
  });

  it('a job the attempt handed back itself (in wait, no stall counted since it started): left there', async () => {
    const keys = await lease('handed', 'wait', undefined, { stc: '1' });
    expect(await reclaimLease(client, PREFIX, QUEUE, 'handed', 'tok-8', 5000, 1)).toEqual({ state: 'elsewhere' });
    expect(await client.lrange(keys.wait, 0, -1)).toContain('handed');
    expect(await client.exists(keys.lock)).toBe(0);
  });

  it('another attempt holds the lock: taken, and its lock is left alone', async () => {
    const keys = await lease('other', 'active', 'tok-other');
    expect(await reclaimLease(client, PREFIX, QUEUE, 'other', 'tok-4', 5000, 0)).toEqual({ state: 'taken' });
    expect(await client.get(keys.lock)).toBe('tok-other');
  });

  it('a finished job: finished, with the Result it stored; nothing moved', async () => {
    const keys = await lease('done', undefined, undefined, { finishedOn: String(Date.now()), returnvalue: '{"kind":"ok"}' });
    expect(await reclaimLease(client, PREFIX, QUEUE, 'done', 'tok-5', 5000, 0)).toEqual({ state: 'finished', returnvalue: '{"kind":"ok"}' });
    expect(await client.exists(keys.lock)).toBe(0);
    expect(await client.lrange(keys.active, 0, -1)).not.toContain('done');
  });

  it('a job gone (its run purged): gone; one in neither list (delayed): elsewhere', async () => {
    expect(await reclaimLease(client, PREFIX, QUEUE, 'nothing', 'tok-6', 5000, 0)).toEqual({ state: 'gone' });
    const keys = await lease('delayed', undefined, undefined);
    expect(await reclaimLease(client, PREFIX, QUEUE, 'delayed', 'tok-7', 5000, 0)).toEqual({ state: 'elsewhere' });
    expect(await client.exists(keys.lock)).toBe(0);
  });
});
