import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import { fixture } from '../../helpers/raw-queue.js';
import { startSentinel, type TestSentinel } from '../../helpers/redis-topologies.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// A Sentinel failover mid-run: primary SIGKILLed, the replica promoted by redis-sentinel, the
// worker and the coordinator follow it through redis+sentinel:// and the run loses nothing.
const FAST = { lockDurationMs: 3000, stalledIntervalMs: 1500, concurrency: 4 };
const silent = createLogger({ component: 'test' }, { write: () => undefined });
let topology: TestSentinel;

beforeAll(async () => {
  topology = await startSentinel();
});

afterAll(async () => {
  await topology?.stop();
});

describe('Redis Sentinel (redis+sentinel://)', () => {
  it('primary SIGKILLed mid-run, replica promoted: every spec still ends in exactly one Result', async () => {
    const queue = 'sentinel-run';
    const worker = await startWorkerProcess({ redisUrl: topology.url, queue, prefix: 'rqs', allow: ['rq-fixtures/*'], ...FAST });
    const rq = await RolloutQueue.create({ redisUrl: topology.url, queue, prefix: 'rqs', reconcileMs: 200, logger: silent });
    try {
      const drafts: RolloutDraft[] = Array.from({ length: 40 }, (_, i) => ({ task: { id: `t${i}`, delayMs: 100 }, rendered: 'x', run: fixture('echo'), reward: fixture('constant') }));
      const seen = new Map<string, number>();
      let killed = false;
      for await (const result of rq.mapRollouts(drafts, { runId: 's1' })) {
        seen.set(result.leaseId, (seen.get(result.leaseId) ?? 0) + 1);
        expect(result.kind, JSON.stringify(result.error)).toBe('ok');
        if (!killed && seen.size === 8) {
          killed = true;
          await topology.primary.kill();
        }
      }
      expect(killed).toBe(true);
      expect(await topology.currentPrimaryPort()).toBe(topology.replica.port);
      expect(seen.size).toBe(40);
      expect([...seen.values()].every((times) => times === 1)).toBe(true);
      const status = await rq.status('s1');
      expect(status.run).toMatchObject({ status: 'completed', delivered: 40, specCount: 40 });
    } finally {
      await rq.close();
      worker.signal('SIGTERM');
      expect((await worker.exited()).code).toBe(0);
    }
  });
});
