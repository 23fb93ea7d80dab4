import type { Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KeptAnswers, MAX_KEPT_ANSWERS } from '../../../src/consumer/kept-answers.js';
import { createLogger } from '../../../src/platform/logger.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';

// Issue 33 item 2: the answers a worker keeps while Redis does not take them are bounded, and
// are settled by themselves once Redis answers (retried every second, no other trigger needed).
let redis: TestRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis({ private: true });
  client = new Redis(redis.url, { commandTimeout: 1000, maxRetriesPerRequest: null });
  await client.ping();
});
afterAll(async () => {
  redis.thaw?.();
  client.disconnect();
  await redis.stop();
});

it('keeps at most MAX_KEPT_ANSWERS while Redis is frozen, refuses the next one saying so, and settles them all after the wake', async () => {
  const lines: string[] = [];
  const dropped: string[] = [];
  const kept = new KeptAnswers(client, 'keptt', 5000, createLogger({}, { write: (line: string) => void lines.push(line) }), { onDropped: (leaseId) => void dropped.push(leaseId) });
  const worker = { emit: () => true } as unknown as Worker;
  const job = (id: string): Job => ({ id, queueName: 'q' }) as unknown as Job;
  redis.freeze?.();
  try {
    for (let i = 0; i < MAX_KEPT_ANSWERS; i++) expect(kept.keep(worker, job(`run.t${i}`), `tok-${i}`, { leaseId: `run.t${i}`, kind: 'ok' }, 'Redis does not answer')).toBe(true);
    expect(kept.size).toBe(MAX_KEPT_ANSWERS);
    expect(kept.keep(worker, job('run.over'), 'tok-over', { kind: 'ok' }, 'Redis does not answer')).toBe(false);
    expect(lines.some((line) => line.includes('finished answer not kept: the keeper is full'))).toBe(true);
  } finally {
    redis.thaw?.();
  }
  // No job of these leases exists (their run is gone): each is settled as gone, none counted as another attempt's.
  await waitFor(() => kept.size === 0, () => `kept answers to settle (${kept.size} left)`, 60_000);
  expect(dropped).toEqual([]);
  expect(lines.filter((line) => line.includes("kept answer dropped: the lease's job is gone"))).toHaveLength(MAX_KEPT_ANSWERS);
  kept.close();
});
