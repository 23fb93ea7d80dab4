import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// Issue 11 (redis-oom-worker-error-loop): Redis at maxmemory under noeviction refuses every
// write. The worker must back off (one log line per step), say 503 on /healthz, and pick up
// the waiting jobs once Redis accepts writes again. A private redis-server: CONFIG SET maxmemory.
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ private: true });
});
afterAll(async () => {
  await redis.stop();
});

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function healthz(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  await res.text();
  return res.status;
}

describe('Redis refusing writes (maxmemory, noeviction)', () => {
  it('backs off with one line per step, /healthz 503, then serves the waiting jobs once writes pass', async () => {
    const q = new RawQueue(redis.url);
    const specs = Array.from({ length: 10 }, (_, i) => makeSpec('full', `t${i}`));
    await q.add(specs);
    const used = Number(/^used_memory:(\d+)/m.exec(await q.redis.info('memory'))?.[1]);
    await q.redis.config('SET', 'maxmemory', String(used - 100_000));
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2, metricsPort: 0 }));
    try {
      const port = Number(/^ready \S+ (\d+)/m.exec(worker.output())?.[1]);
      await until(async () => (await healthz(port)) === 503, '/healthz 503');
      const refusals = (): Array<{ msg: string; retryMs: number }> =>
        worker.output().split('\n').filter((line) => line.includes('refuses writes')).map((line) => JSON.parse(line) as { msg: string; retryMs: number });
      // The second "still refuses" line comes 1 s + 2 s after the first; the next not before 4 s more.
      await until(() => refusals().length >= 3, 'two back-off steps');
      expect(refusals().map((line) => line.retryMs)).toEqual([1000, 2000, 4000]);
      expect(refusals()[0]?.msg).toMatch(/^Redis at redis:\/\/127\.0\.0\.1:\d+ refuses writes \(OOM command not allowed when used memory > 'maxmemory'\); job intake paused, retrying in 1 s$/);
      expect(worker.output()).not.toContain('worker error');
      expect(worker.output()).not.toMatch(/\n\s+at /);
      expect(await q.queue.getJobCountByTypes('waiting', 'prioritized')).toBe(10);

      await q.redis.config('SET', 'maxmemory', '0');
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect([...results.values()].every((r) => r.kind === 'ok')).toBe(true);
      expect(worker.output()).toContain('accepts writes again; job intake resumed');
      expect(await healthz(port)).toBe(200);
    } finally {
      await q.redis.config('SET', 'maxmemory', '0');
      worker.signal('SIGTERM');
      expect((await worker.exited()).code).toBe(0);
      await q.close();
    }
  });
});
