import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue } from '../../../src/producer/index.js';
import { RolloutWorker } from '../../../src/consumer/index.js';
import type { RolloutDraft } from '../../../src/producer/index.js';
import { fixture } from '../../helpers/raw-queue.js';
import { startCluster, type TestCluster } from '../../helpers/redis-topologies.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// rollout-queue on a real 3-primary Redis Cluster (redis-server --cluster-enabled yes on free
// loopback ports): a hash-tagged prefix puts every key of a queue, BullMQ's and ours, in one
// slot, so BullMQ's scripts and our MULTIs never meet CROSSSLOT.
const PREFIX = '{rqc}';
const FAST = { lockDurationMs: 3000, stalledIntervalMs: 1500, concurrency: 3 };
const silent = createLogger({ component: 'test' }, { write: () => undefined });
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster(3);
});

afterAll(async () => {
  await cluster?.stop();
});

describe('Redis Cluster (redis+cluster://, prefix {rqc})', () => {
  it('a small run end to end: every spec one Result, and every key of the queue in one slot', async () => {
    const queue = 'cluster-run';
    const worker = await startWorkerProcess({ redisUrl: cluster.url, queue, prefix: PREFIX, allow: ['rq-fixtures/*'], ...FAST });
    const rq = await RolloutQueue.create({ redisUrl: cluster.url, queue, prefix: PREFIX, reconcileMs: 200, logger: silent });
    try {
      const drafts: RolloutDraft[] = Array.from({ length: 20 }, (_, i) => ({
        task: { id: `t${i}`, delayMs: 20 },
        rendered: 'x',
        run: i === 7 ? fixture('throws') : fixture('echo'),
        reward: fixture('constant'),
      }));
      const kinds: string[] = [];
      const leases = new Set<string>();
      for await (const result of rq.mapRollouts(drafts, { runId: 'c1' })) {
        kinds.push(result.kind);
        leases.add(result.leaseId);
      }
      expect(leases.size).toBe(20);
      expect(kinds.filter((kind) => kind === 'ok')).toHaveLength(19);
      expect(kinds.filter((kind) => kind === 'model')).toHaveLength(1);
      const status = await rq.status('c1');
      expect(status.run).toMatchObject({ status: 'completed', delivered: 20, specCount: 20 });

      // Every key under the prefix, on every primary: all on one node, all in one slot.
      const slots = new Set<number>();
      const holders = new Set<number>();
      let count = 0;
      for (const node of cluster.nodes) {
        const client = new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: true });
        await client.connect();
        try {
          let cursor = '0';
          do {
            const [next, keys] = await client.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
            cursor = next;
            for (const key of keys) {
              count++;
              holders.add(node.port);
              slots.add(Number(await client.cluster('KEYSLOT', key)));
            }
          } while (cursor !== '0');
        } finally {
          client.disconnect();
        }
      }
      expect(count).toBeGreaterThan(20);
      expect(holders.size).toBe(1);
      expect(slots.size).toBe(1);
    } finally {
      await rq.close();
      worker.signal('SIGTERM');
      expect((await worker.exited()).code).toBe(0);
    }
  });

  it('a prefix without a hash tag is refused at start, naming the fix', async () => {
    await expect(RolloutQueue.create({ redisUrl: cluster.url, queue: 'q', prefix: 'rq', logger: silent })).rejects.toThrow(
      /RolloutQueue option prefix: prefix "rq" with queue "q" has no hash tag.*use a hash-tagged prefix such as "\{rq\}"/,
    );
    await expect(RolloutWorker.create({ redisUrl: cluster.url, queue: 'q', prefix: 'rq', logger: silent })).rejects.toThrow(/worker option prefix: .*"\{rq\}"/);
  });
});
