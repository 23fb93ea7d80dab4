import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { serveMetrics } from '../../../src/platform/metrics-endpoint.js';
import { CoordinatorMetrics, RolloutQueue } from '../../../src/producer/index.js';
import { promtoolCheck, sample } from '../../helpers/promtool.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Worker and coordinator metrics over real processes: a real worker process whose rollout
// children really crash, scraped over HTTP, and the whole scrape checked by promtool.
const FAST = { lockDurationMs: 3000, stalledIntervalMs: 1500, concurrency: 2 };
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('worker metrics', () => {
  let q: RawQueue;
  let worker: WorkerProcess;

  beforeAll(async () => {
    q = new RawQueue(redis.url);
    worker = await startWorkerProcess(q.workerOptions({ ...FAST, metricsPort: 0, metricsHost: '127.0.0.1' }));
  });

  afterAll(async () => {
    worker?.signal('SIGTERM');
    await worker?.exited();
    await q?.close();
  });

  it('counts real child crashes, results by kind, queue wait and run time; the whole scrape passes promtool', async () => {
    const port = Number(/^ready \S+ (\d+)/m.exec(worker.output())?.[1]);
    const before = await scrape(port);
    expect(sample(before, 'rollout_queue_child_events_total{event="crashed"}')).toBe(0);
    expect(sample(before, 'rollout_queue_worker_slots')).toBe(2);
    // Two slots, one shared child hosting both (issue 32: slots are not processes).
    expect(sample(before, 'rollout_queue_worker_children')).toBe(1);
    expect(sample(before, 'rollout_queue_redis_up')).toBe(1);

    // `exits` kills its child with process.exit(1) on every attempt: 3 attempts (2 re-dispatches)
    // end the lease as infrastructure; each attempt is one real crash.
    const specs = [
      makeSpec('metrics', 'ok'),
      makeSpec('metrics', 'model', { run: fixture('throws') }),
      makeSpec('metrics', 'crash', { run: fixture('exits', { code: 1 }) }),
    ];
    await q.add(specs);
    const { results } = await q.waitForAll(specs.map((spec) => spec.leaseId), 60_000);
    expect([...results.values()].map((result) => result.kind).sort()).toEqual(['infrastructure', 'model', 'ok']);

    const text = await scrape(port);
    expect(sample(text, 'rollout_queue_child_events_total{event="crashed"}')).toBe(3);
    expect(sample(text, 'rollout_queue_results_total{kind="ok"}')).toBe(1);
    expect(sample(text, 'rollout_queue_results_total{kind="model"}')).toBe(1);
    expect(sample(text, 'rollout_queue_results_total{kind="infrastructure"}')).toBe(1);
    expect(sample(text, 'rollout_queue_redispatches_total{cause="ChildCrashed"}')).toBe(2);
    // These jobs were added without the producer, so no enqueue time exists on the Redis clock:
    // their queuedMs is null and the queue-wait histogram stays empty (never a made-up wait).
    expect(sample(text, 'rollout_queue_queue_wait_seconds_count')).toBe(0);
    expect(sample(text, 'rollout_queue_run_duration_seconds_count')).toBeGreaterThanOrEqual(2);
    expect(sample(text, `rollout_queue_queue_jobs{queue="${q.name}",state="waiting"}`)).toBe(0);
    expect(sample(text, `rollout_queue_queue_jobs{queue="${q.name}",state="active"}`)).toBe(0);
    expect(sample(text, `rollout_queue_queue_jobs{queue="${q.name}",state="delayed"}`)).toBe(0);
    expect(sample(text, 'rollout_queue_worker_slots_busy')).toBe(0);
    expect(text).toMatch(/^rollout_queue_info\{version="\d+\.\d+\.\d+[^"]*",node_version="v[\d.]+",role="worker"\} 1$/m);

    const lint = promtoolCheck(text);
    expect(lint.output).toBe('');
    expect(lint.status).toBe(0);
  });

  it('a queue-depth gauge shows waiting jobs no worker has taken', async () => {
    const port = Number(/^ready \S+ (\d+)/m.exec(worker.output())?.[1]);
    const other = new RawQueue(redis.url, `${q.name}-depth`);
    try {
      // Another queue's waiting jobs are not this worker's: its gauge speaks of its own queue.
      await other.add([makeSpec('depth', 'a'), makeSpec('depth', 'b')]);
      const text = await scrape(port);
      expect(sample(text, `rollout_queue_queue_jobs{queue="${q.name}",state="waiting"}`)).toBe(0);
      const delayed = makeSpec('metrics', 'later');
      await q.queue.add('rollout', delayed, { jobId: delayed.leaseId, delay: 600_000 });
      expect(sample(await scrape(port), `rollout_queue_queue_jobs{queue="${q.name}",state="delayed"}`)).toBe(1);
      await q.queue.remove(delayed.leaseId);
    } finally {
      await other.close();
    }
  });
});

describe('coordinator metrics (opt-in endpoint)', () => {
  it('reports a run in flight, delivered by kind and duplicates; the whole scrape passes promtool', async () => {
    const queueName = `coord-${Date.now().toString(36)}`;
    const raw = new RawQueue(redis.url, queueName);
    const worker = await startWorkerProcess(raw.workerOptions({ ...FAST, metricsPort: 0, metricsHost: '127.0.0.1' }));
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: queueName, prefix: TEST_PREFIX, reconcileMs: 200, logger: createLogger({ component: 'test' }, { write: () => undefined }) });
    const metrics = new CoordinatorMetrics(rq);
    metrics.track('coord');
    const endpoint = await serveMetrics(metrics.registry, { port: 0, host: '127.0.0.1' });
    try {
      const drafts = [
        { task: { id: 'a' }, rendered: 'x', run: fixture('echo'), reward: fixture('constant') },
        { task: { id: 'b' }, rendered: 'x', run: fixture('throws'), reward: fixture('constant') },
        { task: { id: 'c', delayMs: 400 }, rendered: 'x', run: fixture('echo'), reward: fixture('constant') },
      ];
      const seen: string[] = [];
      let midRun: string | undefined;
      for await (const result of rq.mapRollouts(drafts, { runId: 'coord' })) {
        seen.push(result.kind);
        if (seen.length === 1) midRun = await scrape(endpoint.port);
      }
      expect(seen.sort()).toEqual(['model', 'ok', 'ok']);
      expect(sample(midRun as string, 'rollout_queue_run_specs{run_id="coord"}')).toBe(3);
      expect(sample(midRun as string, 'rollout_queue_run_in_flight{run_id="coord"}')).toBeGreaterThanOrEqual(1);

      const text = await scrape(endpoint.port);
      expect(sample(text, 'rollout_queue_run_in_flight{run_id="coord"}')).toBe(0);
      expect(sample(text, 'rollout_queue_run_delivered_total{run_id="coord",kind="ok"}')).toBe(2);
      expect(sample(text, 'rollout_queue_run_delivered_total{run_id="coord",kind="model"}')).toBe(1);
      expect(sample(text, 'rollout_queue_run_duplicates_dropped_total{run_id="coord"}')).toBe(0);
      expect(sample(text, 'rollout_queue_run_redispatched_total{run_id="coord"}')).toBe(0);
      expect(sample(text, 'rollout_queue_redis_up')).toBe(1);
      expect(text).toMatch(/^rollout_queue_info\{.*role="coordinator"\} 1$/m);
      // Enqueued by the producer: each Result has a queuedMs by the Redis clock, observed by the worker.
      const workerText = await scrape(Number(/^ready \S+ (\d+)/m.exec(worker.output())?.[1]));
      expect(sample(workerText, 'rollout_queue_queue_wait_seconds_count')).toBe(3);
      const lint = promtoolCheck(text);
      expect(lint.output).toBe('');
      expect(lint.status).toBe(0);
    } finally {
      await endpoint.close();
      await rq.close();
      worker.signal('SIGTERM');
      await worker.exited();
      await raw.close();
    }
  });
});
