import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { collect, ProducerFixture } from '../../helpers/producer-fixture.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { draft } from '../../helpers/rollout-drafts.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// No worker, no hang: the coordinator ends a lease nobody takes (NoWorker) or nobody finishes
// in time (DeadlineExceeded) as one infrastructure Result, delivered like any other.
let redis: TestRedis;
let fx: ProducerFixture;

beforeAll(async () => {
  redis = await startRedis({ private: true });
  fx = new ProducerFixture(redis.url);
});
afterAll(async () => {
  await fx.cleanup();
  await fx.end();
  await redis.stop();
});

const withTimeouts = (id: string, timeouts: Record<string, number>, task: Record<string, unknown> = {}): RolloutDraft =>
  draft({ id, ...task }, { timeouts: timeouts as RolloutDraft['timeouts'] });

describe('timeouts.scheduleToStartMs', () => {
  it('with no worker on the queue, each lease ends once as infrastructure / NoWorker and the run completes', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const runId = fx.runId();
    const { items, error } = await collect(rq.mapRollouts([withTimeouts('a', { scheduleToStartMs: 1000 }), withTimeouts('b', { scheduleToStartMs: 1000 })], { runId }));
    expect(error).toBeUndefined();
    expect(items.map((r) => [r.leaseId, r.kind, r.error?.type])).toEqual(
      expect.arrayContaining([[`${runId}.a`, 'infrastructure', 'NoWorker'], [`${runId}.b`, 'infrastructure', 'NoWorker']]),
    );
    expect(items).toHaveLength(2);
    expect(items[0]?.error?.message).toMatch(/no worker started lease .* within 1000 ms .*rollout-queue worker --queue/);
    expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', delivered: 2, kinds: { infrastructure: 2 } });
    // The waiting job was removed: a worker started later has nothing of this run to run.
    expect(await fx.inspect(queue).getJob(`${runId}.a`)).toBeUndefined();
  });

  it('ending many leases logs one warning per pass with their count, not one line per lease (240 lines for the demo run before)', async () => {
    const queue = fx.queueName();
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({}, { write: (line: string) => (lines.push(JSON.parse(line) as Record<string, unknown>), true) });
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue, prefix: TEST_PREFIX, reconcileMs: 200, logger });
    try {
      const runId = fx.runId();
      const drafts = Array.from({ length: 30 }, (_, i) => withTimeouts(`t${i}`, { scheduleToStartMs: 1000 }));
      const { items, error } = await collect(rq.mapRollouts(drafts, { runId }));
      expect(error).toBeUndefined();
      expect(items.map((r) => r.error?.type)).toEqual(Array(30).fill('NoWorker'));
      // Each Result still names its own lease.
      for (const r of items) expect(r.error?.message).toContain(`lease ${r.leaseId} `);
      const warnings = lines.filter((line) => line.type === 'NoWorker');
      // The 30 leases share one deadline: one pass ends them, two at most when the enqueue straddled a pass.
      expect(warnings.length).toBeGreaterThan(0);
      expect(warnings.length).toBeLessThanOrEqual(2);
      expect(warnings.reduce((sum, line) => sum + Number(line.leases), 0)).toBe(30);
      if (warnings[0]?.leases !== 1) expect(warnings[0]?.msg).toMatch(new RegExp(`^\\d+ leases of run ${runId} ended NoWorker; the first: no worker started lease`));
    } finally {
      await rq.close();
    }
  });

  it('never fires while a worker serves the queue, even for a lease that waits longer behind busy slots', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue, { concurrency: 1 });
    const runId = fx.runId();
    const drafts = ['a', 'b', 'c'].map((id) => withTimeouts(id, { scheduleToStartMs: 1000 }, { delayMs: 900 }));
    const { items, error } = await collect(rq.mapRollouts(drafts, { runId }));
    expect(error).toBeUndefined();
    expect(items.map((r) => r.kind)).toEqual(['ok', 'ok', 'ok']);
  });
});

describe('timeouts.scheduleToStartMs, the only worker dead', () => {
  it('a lease its SIGKILLed worker held (nobody left to re-dispatch it, it would stay active forever) ends as NoWorker', async () => {
    const raw = new RawQueue(redis.url);
    const worker = await startWorkerProcess(raw.workerOptions({ concurrency: 1 }));
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: createLogger({}, { write: () => true }) });
    try {
      const held: RolloutDraft = { rendered: 'x', task: { id: 'held', delayMs: 60_000 }, run: fixture('echo'), reward: fixture('constant'), timeouts: { scheduleToStartMs: 1000 } as RolloutDraft['timeouts'] };
      const results = rq.mapRollouts([held], { runId: 'orphan' });
      const first = results.next();
      await waitFor(async () => (await raw.queue.getJobState('orphan.held')) === 'active', 'the worker to take the lease', 20_000);
      await worker.kill();
      const { value } = await first;
      expect(value).toMatchObject({ kind: 'infrastructure', error: { type: 'NoWorker', message: expect.stringMatching(/was started, but no worker has served queue/) } });
      expect((await results.next()).done).toBe(true);
    } finally {
      await rq.close();
      await raw.close();
    }
  });
});

describe('timeouts.scheduleToCloseMs', () => {
  it('a lease still running past it ends once as DeadlineExceeded; the late real answer is counted in duplicatesDropped', async () => {
    const raw = new RawQueue(redis.url);
    const worker = await startWorkerProcess(raw.workerOptions({ concurrency: 1 }));
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: createLogger({}, { write: () => true }) });
    try {
      const slow: RolloutDraft = { rendered: 'x', task: { id: 'slow', delayMs: 3000 }, run: fixture('echo'), reward: fixture('constant'), timeouts: { scheduleToCloseMs: 1000 } as RolloutDraft['timeouts'] };
      const quick: RolloutDraft = { rendered: 'x', task: { id: 'quick' }, run: fixture('echo'), reward: fixture('constant') };
      const results: Result[] = [];
      for await (const result of rq.mapRollouts([slow, quick], { runId: 'deadline' })) results.push(result);
      const byId = new Map(results.map((r) => [r.taskId, r]));
      expect(results).toHaveLength(2);
      expect(byId.get('slow')).toMatchObject({ kind: 'infrastructure', error: { type: 'DeadlineExceeded' } });
      expect(byId.get('quick')?.kind).toBe('ok');
      await waitFor(async () => (await rq.status('deadline')).run?.duplicatesDropped === 1, 'the late answer to be dropped', 20_000);
      expect((await rq.status('deadline')).run).toMatchObject({ delivered: 2, kinds: { ok: 1, infrastructure: 1 } });
    } finally {
      await rq.close();
      worker.signal('SIGTERM');
      await worker.exited();
      await raw.close();
    }
  });
});
