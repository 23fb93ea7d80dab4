import { afterAll, beforeAll, expect, it } from 'vitest';
import { RolloutWorker } from '../../../dist/consumer/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

// Fresh-user report: a worker interrupted twice logged "worker error: could not renew lock for
// job …" at error level. BullMQ emits that 'error' right after 'lockRenewalFailed' for the same
// jobs (lock-manager.js extendLocks), which the worker handles: one warn for an attempt it
// aborts, nothing for a lease it no longer runs.
it('a lost lock is told once, as the warn of the attempt it aborts, never as a worker error', async () => {
  const q = new RawQueue(redis.url);
  const lines: string[] = [];
  const worker = await RolloutWorker.create({ ...q.workerOptions({ concurrency: 1, lockDurationMs: 1000 }), logger: createLogger({}, { write: (line: string) => void lines.push(line) }) });
  try {
    const spec = makeSpec('lockloss', 't0', { task: { id: 't0', delayMs: 60_000 } });
    await q.add([spec]);
    const lock = `${TEST_PREFIX}:${q.name}:${spec.leaseId}:lock`;
    await waitFor(async () => (await q.redis.exists(lock)) === 1, 'the rollout to hold its lock', 30_000);
    await q.redis.del(lock);
    await waitFor(() => lines.some((line) => line.includes('lock renewal failed; aborting the attempt')), () => `the lock-loss warn in:\n${lines.join('')}`, 30_000);
    const told = lines.filter((line) => line.includes(spec.leaseId) || line.includes('could not renew lock'));
    expect(told.filter((line) => line.includes('could not renew lock'))).toEqual([]);
    expect(told.filter((line) => line.includes('lock renewal failed'))).toHaveLength(1);
  } finally {
    await worker.close();
    await q.queue.obliterate({ force: true });
    await q.queue.close();
    q.redis.disconnect();
  }
});
