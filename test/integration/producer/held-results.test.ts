import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolloutWorker } from '../../../dist/consumer/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue } from '../../../src/producer/index.js';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

const quiet = createLogger({}, { write: () => true });
const echo = { $ref: 'rq-fixtures/failures:echo', config: {} };
const constant = { $ref: 'rq-fixtures/failures:constant', config: {} };

describe('maxHeldResults', () => {
  it('a consumer that stops taking Results stops the enqueuing once maxHeldResults are held; all are delivered once it resumes', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 4, logger: quiet });
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX, logger: quiet, maxInFlight: 10, maxHeldResults: 5, reconcileMs: 200 });
    const runId = `held${Date.now().toString(36)}`;
    try {
      const drafts = Array.from({ length: 60 }, (_, i) => ({ rendered: 'x', task: { id: `t-${i}` }, run: echo, reward: constant }));
      const seen: string[] = [];
      const results = rq.mapRollouts(drafts, { runId })[Symbol.asyncIterator]();
      const first = await results.next();
      seen.push((first.value as { leaseId: string }).leaseId);
      // The consumer pauses: wait until nothing is waiting or running (two looks in a row).
      const deadline = Date.now() + 30_000;
      for (let quiet = 0; quiet < 2; ) {
        if (Date.now() > deadline) throw new Error('jobs still waiting or active after 30 s');
        const counts = await q.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        quiet = Object.values(counts).every((n) => n === 0) ? quiet + 1 : 0;
        await new Promise((r) => setTimeout(r, 300));
      }
      const paused = (await rq.status(runId)).run;
      // 1 taken + at most 5 held + at most 10 in flight (finished in Redis, not taken).
      expect(paused?.enqueued).toBeLessThanOrEqual(16);
      expect(paused?.enqueued).toBeGreaterThanOrEqual(6);
      for (let next = await results.next(); !next.done; next = await results.next()) seen.push(next.value.leaseId);
      expect(seen).toHaveLength(60);
      expect(new Set(seen).size).toBe(60);
      expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', enqueued: 60 });
    } finally {
      await rq.close();
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('refuses maxHeldResults 0 naming the option', async () => {
    await expect(RolloutQueue.create({ redisUrl: redis.url, maxHeldResults: 0 })).rejects.toThrow(/maxHeldResults/);
  });
});
