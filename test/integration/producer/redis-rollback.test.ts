import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueKeys, readRunRecord } from '../../../src/lease/index.js';
import type { Result } from '../../../src/spec/index.js';
import { ProducerFixture, TEST_PREFIX, collect } from '../../helpers/producer-fixture.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Case BR-49: failover to a replica that lagged, simulated on one server: a snapshot is taken
// mid-run, the run goes on, then Redis is SIGKILLed and restarted from that older snapshot, so
// every write since is lost at once (delivered Results' acknowledgements and counts, the jobs
// added since and their lease records, finished jobs back to wait/active, the coordinator
// lease). Before: 16 of 60 leases ended infrastructure/JobMissing although the live coordinator
// held their drafts, `status` said 45 delivered for 60 in the results file, nothing was logged.
let redis: TestRedis;
let fx: ProducerFixture;

beforeAll(async () => {
  redis = await startRedis({ private: true }); // no AOF: a restart loads the last snapshot (dump.rdb)
  fx = new ProducerFixture(redis.url);
});
afterAll(async () => {
  await fx.cleanup();
  await fx.end();
  await redis.stop();
});

const echo = { $ref: 'rq-fixtures/failures:echo', config: {} };
const constant = { $ref: 'rq-fixtures/failures:constant', config: { value: 1 } };

describe('Redis restarted from an older snapshot mid-run (BR-49)', () => {
  it('every lease is delivered exactly once and ok (the lost jobs added again from the kept drafts), status counts agree, one warning says what was lost', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('rollback');
    const rq = await fx.open(queue, { reconcileMs: 200, maxInFlight: 12 });
    const workers: WorkerProcess[] = [];
    for (const name of ['w1', 'w2']) {
      workers.push(await startWorkerProcess({ redisUrl: redis.url, queue, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], concurrency: 2, name, lockDurationMs: 3000, stalledIntervalMs: 1500 }));
    }
    const n = 40;
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: 'x', task: { id: `t${i}`, delayMs: 400 }, run: echo, reward: constant }));
    let seen = 0;
    let atSnapshot = 0;
    const { items, error } = await collect(rq.mapRollouts(drafts, { runId }), async () => {
      seen++;
      if (seen === 10) {
        // The replica's state: everything written up to here (SAVE: the snapshot is on disk when it answers).
        await fx.redis.save();
        atSnapshot = seen;
      } else if (seen === 20) {
        // The failover: the writes of the last 10 deliveries (and the enqueues meanwhile) are gone.
        await redis.kill();
        await redis.restart();
      }
    });
    expect(error).toBeUndefined();
    expect(atSnapshot).toBe(10);

    // Exactly once each, every one ran: none ended JobMissing while its draft was at hand.
    const leaseIds = items.map((r) => r.leaseId);
    expect(new Set(leaseIds).size).toBe(leaseIds.length);
    expect([...leaseIds].sort()).toEqual(drafts.map((d) => `${runId}.${d.task.id}`).sort());
    expect(items.filter((r: Result) => r.kind !== 'ok').map((r) => `${r.leaseId} ${r.error?.type}`)).toEqual([]);

    // The run's record agrees with what was delivered (repaired from this coordinator's own delivered set).
    const record = await readRunRecord(fx.redis, queueKeys(TEST_PREFIX, queue), runId);
    expect({ status: record?.status, delivered: record?.delivered, ok: record?.kinds.ok, infrastructure: record?.kinds.infrastructure, enqueued: record?.enqueued })
      .toEqual({ status: 'completed', delivered: n, ok: n, infrastructure: 0, enqueued: n });

    // One warning, naming what was lost.
    const warnings = fx.logs.filter((line) => line.includes('Redis lost writes of this run') && line.includes(runId));
    expect(warnings).toHaveLength(1);
    const warning = JSON.parse(warnings[0] as string) as { forgottenDelivered: number; jobsAddedAgain: number; level: unknown };
    expect(warning.forgottenDelivered).toBeGreaterThanOrEqual(1);
    expect(warning.forgottenDelivered).toBeLessThanOrEqual(10);
    expect(fx.logs.join('\n')).not.toContain("the run's record is gone from Redis");

    for (const worker of workers) worker.signal('SIGTERM');
    for (const worker of workers) expect((await worker.exited()).code).toBe(0);
    await rq.close();
  });

  it('a job removed by hand (its lease record kept) still ends JobMissing, and no rollback is reported', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('removed');
    const rq = await fx.open(queue, { reconcileMs: 100 });
    const drafts = Array.from({ length: 3 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}` }, run: echo, reward: constant }));
    const results = rq.mapRollouts(drafts, { runId });
    const first = results.next();
    const bull = new Queue(queue, { connection: { url: redis.url }, prefix: TEST_PREFIX });
    try {
      const jobKeys = drafts.map((d) => `${TEST_PREFIX}:${queue}:${runId}.${d.task.id}`);
      await waitFor(async () => (await fx.redis.exists(...jobKeys)) === jobKeys.length, 'the three jobs');
      await bull.remove(`${runId}.t1`);
      const worker = await startWorkerProcess({ redisUrl: redis.url, queue, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], concurrency: 2 });
      const items: Result[] = [];
      for (let next = await first; !next.done; next = await results.next()) items.push(next.value);
      expect(items.map((r) => `${r.leaseId} ${r.kind} ${r.error?.type ?? ''}`).sort()).toEqual([
        `${runId}.t0 ok `, `${runId}.t1 infrastructure JobMissing`, `${runId}.t2 ok `,
      ]);
      expect(fx.logs.filter((line) => line.includes(runId)).join('\n')).not.toContain('Redis lost writes of this run');
      worker.signal('SIGTERM');
      expect((await worker.exited()).code).toBe(0);
    } finally {
      await bull.close();
      await rq.close();
    }
  });
});
