import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolloutQueue, RunStoppedError, type RolloutDraft } from '../../src/producer/index.js';
import { createLogger } from '../../src/platform/logger.js';
import type { Result } from '../../src/spec/index.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { fixture, RawQueue, TEST_PREFIX } from '../helpers/raw-queue.js';
import { isAlive, startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

// The whole seam with real parts: RolloutQueue in this process, two worker processes, each
// running rollouts in its own children, one private Redis.
let redis: TestRedis;
let raw: RawQueue;
let workers: WorkerProcess[];
let rq: RolloutQueue;

const draft = (id: string, extra: Partial<RolloutDraft> = {}): RolloutDraft => ({
  rendered: 'x',
  task: { id },
  run: fixture('echo'),
  reward: fixture('constant'),
  ...extra,
});

async function collect(iterable: AsyncIterable<Result>): Promise<Result[]> {
  const results: Result[] = [];
  for await (const result of iterable) results.push(result);
  return results;
}

beforeAll(async () => {
  redis = await startRedis();
  raw = new RawQueue(redis.url);
  workers = await Promise.all([0, 1].map(() => startWorkerProcess(raw.workerOptions({ concurrency: 3 }))));
  rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 300, logger: createLogger({}, { write: () => true }) });
});

afterAll(async () => {
  await rq.close();
  for (const w of workers) w.signal('SIGTERM');
  await Promise.all(workers.map((w) => w.exited()));
  await raw.close();
  await redis.stop();
});

describe('the main job, end to end', () => {
  it('200 specs over 2 worker processes give 200 Results, each lease exactly once, in child processes', async () => {
    const drafts = Array.from({ length: 200 }, (_, i) => draft(`t${i}`));
    const results = await collect(rq.mapRollouts(drafts, { runId: 'main200' }));
    expect(results).toHaveLength(200);
    expect(new Set(results.map((r) => r.leaseId)).size).toBe(200);
    expect(results.every((r) => r.kind === 'ok' && r.reward === 1)).toBe(true);
    const pids = new Set(results.map((r) => (r.output as { pid: number }).pid));
    expect(pids.has(process.pid)).toBe(false);
    for (const w of workers) expect(pids.has(w.pid)).toBe(false);
    expect(new Set(results.map((r) => r.worker))).toEqual(new Set(workers.map((w) => w.name)));
    const status = await rq.status('main200');
    expect(status.run).toMatchObject({ status: 'completed', delivered: 200, enqueued: 200, redispatched: 0, duplicatesDropped: 0 });
    expect(status.run?.kinds.ok).toBe(200);
  });

  it('yields in completion order, not submission order', async () => {
    const drafts = [draft('slow', { task: { id: 'slow', delayMs: 1500 } }), ...Array.from({ length: 5 }, (_, i) => draft(`fast${i}`))];
    const results = await collect(rq.mapRollouts(drafts, { runId: 'order' }));
    expect(results).toHaveLength(6);
    expect(results[0]?.taskId).not.toBe('slow');
    expect(results.at(-1)?.taskId).toBe('slow');
  });

  it('a run that throws is a model Result; an aborting rollout is infrastructure; neither throws at the coordinator', async () => {
    const drafts = [
      draft('throws', { run: fixture('throws', { name: 'ZeroDivisionError', message: 'division by zero' }) }),
      draft('aborts', { run: fixture('abortsProcess') }),
      ...Array.from({ length: 20 }, (_, i) => draft(`ok${i}`)),
    ];
    const results = await collect(rq.mapRollouts(drafts, { runId: 'mixed' }));
    const byTask = new Map(results.map((r) => [r.taskId, r]));
    expect(byTask.get('throws')).toMatchObject({ kind: 'model', error: { type: 'ZeroDivisionError', message: expect.stringContaining('division by zero') } });
    expect(byTask.get('aborts')).toMatchObject({ kind: 'infrastructure', redispatched: 2 });
    expect(results.filter((r) => r.kind === 'ok')).toHaveLength(20);
    for (const w of workers) expect(isAlive(w.pid)).toBe(true);
    expect((await rq.status('mixed')).run).toMatchObject({ redispatched: 2 });
  });

  it('a Ref outside the allowlist yields a caller Result and stops the run saying which lease and why', async () => {
    const drafts = [draft('bad', { run: { $ref: 'evil-package:run', config: {} } }), ...Array.from({ length: 50 }, (_, i) => draft(`after${i}`, { task: { id: `after${i}`, delayMs: 50 } }))];
    const seen: Result[] = [];
    let stopped: unknown;
    try {
      for await (const result of rq.mapRollouts(drafts, { runId: 'stopme' })) seen.push(result);
    } catch (err) {
      stopped = err;
    }
    expect(stopped).toBeInstanceOf(RunStoppedError);
    expect((stopped as RunStoppedError).leaseId).toBe('stopme.bad');
    expect((stopped as Error).message).toContain('stopme.bad');
    expect((stopped as Error).message).toContain('evil-package');
    expect(seen.find((r) => r.leaseId === 'stopme.bad')).toMatchObject({ kind: 'caller' });
    const status = await rq.status('stopme');
    expect(status.run?.status).toBe('stopped');
    // Back-pressure kept most drafts un-enqueued; nothing was enqueued after the stop.
    const enqueuedAtStop = status.run?.enqueued ?? 0;
    await new Promise((r) => setTimeout(r, 500));
    expect((await rq.status('stopme')).run?.enqueued).toBe(enqueuedAtStop);
    expect(await raw.queue.getJobCountByTypes('waiting', 'prioritized')).toBe(0);
  });

  it('rollout(spec) returns exactly the one Result of that spec; an empty list returns at once', async () => {
    const result = await rq.rollout(draft('single'));
    expect(result).toMatchObject({ kind: 'ok', taskId: 'single', reward: 1 });
    expect(await collect(rq.mapRollouts([], { runId: 'empty' }))).toEqual([]);
  });

  it('cancellation reaches running rollouts and the iterator throws AbortError', async () => {
    const controller = new AbortController();
    const drafts = Array.from({ length: 6 }, (_, i) => draft(`long${i}`, { task: { id: `long${i}`, delayMs: 60_000 } }));
    const iterator = rq.mapRollouts(drafts, { runId: 'cancelme', signal: controller.signal });
    setTimeout(() => controller.abort('user pressed ctrl-c'), 1000);
    await expect(collect(iterator)).rejects.toMatchObject({ name: 'AbortError' });
    const until = Date.now() + 10_000;
    let active = await raw.queue.getActiveCount();
    while (active > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      active = await raw.queue.getActiveCount();
    }
    expect(active).toBe(0);
    const cancelled = await Promise.all(drafts.map((d) => raw.queue.getJob(`cancelme.${String((d.task as { id: string }).id)}`)));
    const kinds = cancelled.filter((job) => job?.returnvalue).map((job) => (job?.returnvalue as Result).error?.type);
    expect(kinds.length).toBeGreaterThan(0);
    expect(new Set(kinds)).toEqual(new Set(['Cancelled']));
  });
});

describe('one coordinator per run', () => {
  it('a second coordinator of a run being delivered is refused with RunBusyError instead of receiving every Result twice', async () => {
    const other = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 300, logger: createLogger({}, { write: () => true }) });
    const controller = new AbortController();
    try {
      const drafts = Array.from({ length: 4 }, (_, i) => draft(`busy${i}`, { task: { id: `busy${i}`, delayMs: 60_000 } }));
      const first = collect(rq.mapRollouts(drafts, { runId: 'twin', signal: controller.signal })).catch((err: Error) => err);
      await new Promise((r) => setTimeout(r, 500));
      await expect(collect(other.mapRollouts(drafts, { runId: 'twin' }))).rejects.toMatchObject({ name: 'RunBusyError', message: expect.stringContaining('"twin"') });
      controller.abort('test done');
      expect(await first).toMatchObject({ name: 'AbortError' });
    } finally {
      await other.close();
    }
  });
});
