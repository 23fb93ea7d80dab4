import { describe, expect, it } from 'vitest';
import { startRedis } from '../../helpers/redis.js';
import { makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

const FAST = { lockDurationMs: 3000, stalledIntervalMs: 1500 };

describe('Redis outages (a private redis-server per test, killed with SIGKILL)', () => {
  it('Redis restarted mid-run with AOF appendfsync always: no accepted spec and no finished result is lost', async () => {
    const redis = await startRedis({ appendfsync: 'always' });
    const q = new RawQueue(redis.url);
    const workers = await Promise.all([startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 3 })), startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 3 }))]);
    try {
      const specs = Array.from({ length: 120 }, (_, i) => makeSpec('aof', `t-${i}`, { task: { id: `t-${i}`, delayMs: 30 } }));
      await q.add(specs);
      const until = Date.now() + 30_000;
      while ((await q.queue.getCompletedCount()) < 30 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      await redis.kill();
      await new Promise((r) => setTimeout(r, 1500));
      await redis.restart();
      const { results, failed } = await q.waitForAll(specs.map((s) => s.leaseId), 90_000);
      expect(failed.size).toBe(0);
      expect(results.size).toBe(120);
      for (const spec of specs) expect(results.get(spec.leaseId)?.kind).toBe('ok');
    } finally {
      for (const w of workers) w.signal('SIGTERM');
      await Promise.all(workers.map((w) => w.exited()));
      await q.close();
      await redis.stop();
    }
  });

  it('Redis down for 10 s while the worker is idle: it takes new jobs again after the restart, and /healthz tells', async () => {
    const redis = await startRedis({ private: true });
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ ...FAST, metricsPort: 0 }));
    const port = Number(/^ready \S+ (\d+)/m.exec(worker.output())?.[1]);
    const health = async (): Promise<number> => (await fetch(`http://127.0.0.1:${port}/healthz`)).status;
    try {
      expect(await health()).toBe(200);
      await redis.kill();
      await new Promise((r) => setTimeout(r, 10_000));
      expect(await health()).toBe(503);
      await redis.restart();
      const spec = makeSpec('outage', 'after');
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId], 30_000);
      expect(results.get(spec.leaseId)?.kind).toBe('ok');
      expect(await health()).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/rollout_queue_results_total\{kind="ok"\} 1/);
      expect(metrics).toMatch(/rollout_queue_containment\{level="[a-z+-]+"\} 1/);
      expect(worker.output()).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+; retrying with backoff/);
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
      await redis.stop();
    }
  });

  it('a worker that has lost Redis still exits on SIGTERM (regression: it waited for Redis forever)', async () => {
    const redis = await startRedis({ private: true });
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ shutdownGraceMs: 300 }));
    try {
      await redis.kill();
      await new Promise((r) => setTimeout(r, 1000));
      worker.signal('SIGTERM');
      expect(await worker.exited()).toEqual({ code: 0, signal: null });
      expect(worker.output()).toMatch(/could not hand leases back|worker closed/);
    } finally {
      await worker.kill();
      await redis.restart(); // so the raw queue can clean up its keys
      await q.close();
      await redis.stop();
    }
  });
});
