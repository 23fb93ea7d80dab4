import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Timing fields come from one clock each (Redis TIME for queuedMs and finishedAt, the worker's
// monotonic clock for runMs): a coordinator whose wall clock is a day behind changes nothing.
const DAY_MS = 86_400_000;
let redis: TestRedis;
let raw: RawQueue;
let worker: WorkerProcess;

beforeAll(async () => {
  redis = await startRedis({ private: true });
  raw = new RawQueue(redis.url);
  worker = await startWorkerProcess(raw.workerOptions({ concurrency: 2 }));
});
afterAll(async () => {
  vi.restoreAllMocks();
  worker.signal('SIGTERM');
  await worker.exited();
  await raw.close();
  await redis.stop();
});

describe('Result timings', () => {
  it('do not depend on the coordinator clock: queuedMs and finishedAt by Redis TIME, runMs by the worker', async () => {
    const realNow = Date.now.bind(Date);
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: createLogger({}, { write: () => true }) });
    // From here the coordinator's wall clock (BullMQ's job timestamp comes from it) is a day behind.
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() - DAY_MS);
    const results: Result[] = [];
    try {
      const drafts = ['a', 'b'].map((id) => ({ rendered: 'x', task: { id, delayMs: 200 }, run: fixture('echo'), reward: fixture('constant') }));
      for await (const result of rq.mapRollouts(drafts, { runId: 'clock' })) results.push(result);
    } finally {
      vi.restoreAllMocks();
      await rq.close();
    }
    const [seconds] = await raw.redis.time();
    const redisNow = Number(seconds) * 1000;
    for (const result of results) {
      expect(result.kind).toBe('ok');
      expect(result.queuedMs).not.toBeNull();
      expect(result.queuedMs as number).toBeLessThan(DAY_MS / 2);
      expect(result.runMs as number).toBeGreaterThanOrEqual(200);
      expect(Math.abs(Date.parse(result.finishedAt) - redisNow)).toBeLessThan(DAY_MS / 2);
    }
  });

  it('queuedMs is known for every rollout, also those an idle worker takes the instant they are added', async () => {
    // Regression (fresh-user report): ~6 % of Results had queuedMs null, the first jobs a worker
    // took, because the enqueue time was recorded only after addBulk.
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: createLogger({}, { write: () => true }) });
    const results: Result[] = [];
    try {
      for (let round = 0; round < 5; round++) {
        const drafts = ['a', 'b'].map((id) => ({ rendered: 'x', task: { id }, run: fixture('echo'), reward: fixture('constant') }));
        for await (const result of rq.mapRollouts(drafts, { runId: `instant-${round}` })) results.push(result);
      }
    } finally {
      await rq.close();
    }
    expect(results).toHaveLength(10);
    expect(results.filter((result) => result.queuedMs === null).map((result) => result.leaseId)).toEqual([]);
  });
});
