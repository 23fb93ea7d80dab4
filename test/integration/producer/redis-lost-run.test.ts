import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueKeys, readRunRecord } from '../../../src/lease/index.js';
import type { RunStore } from '../../../src/producer/run-store.js';
import type { Result } from '../../../src/spec/index.js';
import { ProducerFixture, TEST_PREFIX, collect } from '../../helpers/producer-fixture.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// Fresh-user reports: Redis restarted empty (no persistence) mid-run. Every lease still ended in
// one Result, but the coordinator's acknowledgements and the worker's count of its refused late
// answers made `~run:<id>` and `~run:<id>:delivered` again, as keys no retention ever expired.
// Restarted while the coordinator was still enqueuing (120 tasks, --max-in-flight 30), the jobs it
// added after, `~run:<id>:leases` and `~run:<id>:enqueued-at` never expired either, and `status`
// and `purge` knew no such run. The coordinator now makes the record again, and the run ends and
// expires as any other.
let redis: TestRedis;
let fx: ProducerFixture;

beforeAll(async () => {
  redis = await startRedis({ private: true }); // no AOF: a restart comes back empty
  fx = new ProducerFixture(redis.url);
});
afterAll(async () => {
  await fx.cleanup();
  await fx.end();
  await redis.stop();
});

const echo = { $ref: 'rq-fixtures/failures:echo', config: {} };
const constant = { $ref: 'rq-fixtures/failures:constant', config: { value: 1 } };

describe('Redis restarted without persistence mid-run', () => {
  it('every lease ends in one Result (the lost jobs added again from the kept drafts) and nothing of the lost run is left without a TTL', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('lost');
    const rq = await fx.open(queue, { reconcileMs: 100 });
    const worker = await startWorkerProcess({ redisUrl: redis.url, queue, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], concurrency: 2, lockDurationMs: 3000, stalledIntervalMs: 1500 });
    // t0 ends at once; the others hold 1.5 s, so two of them are running when Redis goes.
    const drafts = Array.from({ length: 6 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}`, delayMs: i === 0 ? 0 : 1500 }, run: echo, reward: constant }));
    const { items, error } = await collect(rq.mapRollouts(drafts, { runId }), async (result: Result) => {
      if (result.leaseId === `${runId}.t0`) {
        await redis.kill();
        await redis.restart();
      }
    });
    expect(error).toBeUndefined();
    expect(items.map((r) => r.leaseId).sort()).toEqual(drafts.map((d) => `${runId}.${d.task.id}`).sort());
    expect(items.filter((r) => r.kind !== 'ok').map((r) => `${r.leaseId} ${r.error?.type}`)).toEqual([]);
    expect(fx.logs.join('\n')).toContain("the run's record is gone from Redis");
    expect(fx.logs.join('\n')).toContain('added the jobs of the unfinished leases again');

    // The worker's running rollouts end (their answers refused: the jobs are gone) before it exits.
    worker.signal('SIGTERM');
    expect((await worker.exited()).code).toBe(0);
    await rq.close();
    const left = await fx.redis.keys(`${TEST_PREFIX}:${queue}:~run:${runId}*`);
    const ttls = await Promise.all(left.map(async (key) => [key, await fx.redis.pttl(key)] as const));
    expect(ttls.filter(([, ttl]) => ttl < 0)).toEqual([]);
  });

  it('restarted while the coordinator still enqueues: the run completes with its record made again, and every key it wrote after expires', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('enq');
    const rq = await fx.open(queue, { reconcileMs: 100, maxInFlight: 3 });
    const worker = await startWorkerProcess({ redisUrl: redis.url, queue, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], concurrency: 3, lockDurationMs: 3000, stalledIntervalMs: 1500 });
    const drafts = Array.from({ length: 24 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}`, delayMs: 200 }, run: echo, reward: constant }));
    let seen = 0;
    const { items, error } = await collect(rq.mapRollouts(drafts, { runId }), async () => {
      seen++;
      if (seen === 4) {
        await redis.kill();
        await redis.restart();
      }
    });
    expect(error).toBeUndefined();
    expect(items.map((r) => r.leaseId).sort()).toEqual(drafts.map((d) => `${runId}.${d.task.id}`).sort());
    // The coordinator had every draft: the jobs Redis lost were added again and ran.
    expect(items.filter((r) => r.kind !== 'ok').map((r) => `${r.leaseId} ${r.error?.type}`)).toEqual([]);
    worker.signal('SIGTERM');
    expect((await worker.exited()).code).toBe(0);
    await rq.close();

    const record = await readRunRecord(fx.redis, queueKeys(TEST_PREFIX, queue), runId);
    expect({ status: record?.status, restored: record?.restoredAt != null, specCount: record?.specCount }).toEqual({ status: 'completed', restored: true, specCount: 24 });
    expect(record?.endedAt).not.toBeNull();
    // Job hashes and their logs, lease hashes, the run's own keys: everything naming the run.
    const left = await fx.redis.keys(`${TEST_PREFIX}:${queue}*${runId}*`);
    expect(left.length).toBeGreaterThan(items.length - 4);
    const ttls = await Promise.all(left.map(async (key) => [key, await fx.redis.pttl(key)] as const));
    expect(ttls.filter(([, ttl]) => ttl < 0)).toEqual([]);
  });

  // CI failure (stop 26's run): all 5 unfinished leases ended JobMissing. A reconciliation pass
  // read the run record, Redis restarted empty, and the same pass then found the jobs missing and
  // judged them by the record it had read before: removed by hand, not lost by Redis. Here the
  // restart falls exactly there, once: Redis is emptied right after the pass's record read.
  it('a restart between a pass reading the run record and reading the jobs: the lost jobs are added again, none ends JobMissing', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('gap');
    // The first pass is full (reads every outstanding job) and comes after reconcileMs: by then
    // the three jobs are added, and the flush below is armed.
    const rq = await fx.open(queue, { reconcileMs: 1500 });
    const store = (rq as unknown as { store: RunStore }).store;
    const readHead = store.readHead.bind(store);
    let armed = false;
    let flushed = false;
    store.readHead = async (id) => {
      const head = await readHead(id);
      if (armed && id === runId) {
        armed = false;
        await fx.redis.flushall();
        flushed = true;
      }
      return head;
    };
    const drafts = Array.from({ length: 3 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}` }, run: echo, reward: constant }));
    const results = rq.mapRollouts(drafts, { runId });
    const first = results.next();
    const jobKeys = drafts.map((d) => `${TEST_PREFIX}:${queue}:${runId}.${d.task.id}`);
    while ((await fx.redis.exists(...jobKeys)) < jobKeys.length) await new Promise((resolve) => setTimeout(resolve, 20));
    armed = true;
    while (!flushed) await new Promise((resolve) => setTimeout(resolve, 20));
    const worker = await startWorkerProcess({ redisUrl: redis.url, queue, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], concurrency: 2 });
    const items: Result[] = [];
    for (let next = await first; !next.done; next = await results.next()) items.push(next.value);
    expect(items.map((r) => `${r.leaseId} ${r.kind}`).sort()).toEqual(drafts.map((d) => `${runId}.${d.task.id} ok`));
    expect(fx.logs.join('\n')).toContain('added the jobs of the unfinished leases again');
    worker.signal('SIGTERM');
    expect((await worker.exited()).code).toBe(0);
    await rq.close();
  });
});
