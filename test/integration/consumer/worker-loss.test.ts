import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Short locks so a lost worker is noticed in seconds: lock TTL 2 s, stalled check every 1 s.
const FAST = { lockDurationMs: 2000, stalledIntervalMs: 1000, shutdownGraceMs: 200 };

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

async function stopAll(workers: WorkerProcess[]): Promise<void> {
  for (const w of workers) w.signal('SIGTERM');
  await Promise.all(workers.map((w) => w.exited()));
}

describe('lost, frozen and restarted workers', () => {
  it('SIGKILL of a worker holding active rollouts: same lease ids re-dispatched, finished on the other worker', async () => {
    const q = new RawQueue(redis.url);
    const victim = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 2 }));
    // Attempt 1 holds until killed: the victim cannot finish it first however slowly the survivor starts.
    const specs = Array.from({ length: 2 }, (_, i) => makeSpec('kill', `long-${i}`, { task: { id: `long-${i}` }, run: fixture('holdsFirstAttempt') }));
    await q.add(specs);
    for (const spec of specs) await q.waitForState(spec.leaseId, 'active');
    const survivor = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 2 }));
    try {
      expect((await victim.kill()).signal).toBe('SIGKILL');
      const { results, failed } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect(failed.size).toBe(0);
      for (const spec of specs) {
        const result = results.get(spec.leaseId);
        expect(result).toMatchObject({ leaseId: spec.leaseId, kind: 'ok', worker: survivor.name, redispatched: 1, attempts: 2 });
      }
      expect(await q.counters('kill')).toEqual({ redispatched: 2, duplicatesDropped: 0 });
    } finally {
      await stopAll([survivor]);
      await q.close();
    }
  });

  it('a frozen worker event loop (SIGSTOP) loses its lock; the lease finishes elsewhere and the late answer is dropped and counted', async () => {
    const q = new RawQueue(redis.url);
    const frozen = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 }));
    const spec = makeSpec('freeze', 'slow', { task: { id: 'slow', delayMs: 3000 } });
    await q.add([spec]);
    await q.waitForState(spec.leaseId, 'active');
    // SIGSTOP freezes only the worker's main process: its child keeps running and will answer late.
    frozen.signal('SIGSTOP');
    const other = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 }));
    try {
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', worker: other.name, redispatched: 1 });
      frozen.signal('SIGCONT');
      const until = Date.now() + 20_000;
      while ((await q.counters('freeze')).duplicatesDropped < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      expect(await q.counters('freeze')).toEqual({ redispatched: 1, duplicatesDropped: 1 });
      // The delivered Result is still the other worker's: the late answer never replaced it.
      expect(((await q.queue.getJob(spec.leaseId))?.returnvalue as { worker: string }).worker).toBe(other.name);
    } finally {
      frozen.signal('SIGCONT');
      await stopAll([frozen, other]);
      await q.close();
    }
  });

  it('a child kept 100% busy for 3x lockDuration is not re-dispatched (the worker renews the lock)', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ ...FAST }));
    const watcher = await startWorkerProcess(q.workerOptions({ ...FAST }));
    try {
      const spec = makeSpec('busy', 'spin', { run: fixture('spins', { ms: 3 * FAST.lockDurationMs }) });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', redispatched: 0, attempts: 1 });
      expect((await q.queue.getJob(spec.leaseId))?.stalledCounter).toBe(0);
      expect(await q.counters('busy')).toEqual({ redispatched: 0, duplicatesDropped: 0 });
    } finally {
      await stopAll([worker, watcher]);
      await q.close();
    }
  });

  it('SIGTERM mid-rollout hands the lease back at once: no stall, no re-dispatch counted, finished elsewhere', async () => {
    const q = new RawQueue(redis.url);
    const leaving = await startWorkerProcess(q.workerOptions({ ...FAST }));
    // Attempt 1 never finishes by itself, so the hand-back is not racing its end on a loaded
    // machine (it used to finish within the grace 1 run in 4 and be answered by `leaving`).
    const spec = makeSpec('term', 'long', { run: fixture('holdsFirstAttempt') });
    await q.add([spec]);
    await q.waitForState(spec.leaseId, 'active');
    const staying = await startWorkerProcess(q.workerOptions({ ...FAST }));
    try {
      leaving.signal('SIGTERM');
      expect((await leaving.exited()).code).toBe(0);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', worker: staying.name, redispatched: 0, attempts: 2 });
      expect((await q.queue.getJob(spec.leaseId))?.stalledCounter).toBe(0);
      expect(await q.counters('term')).toEqual({ redispatched: 0, duplicatesDropped: 0 });
    } finally {
      await stopAll([staying]);
      await q.close();
    }
  });

  it('a rolling restart twice during one long rollout does not use the re-dispatch budget', async () => {
    const q = new RawQueue(redis.url);
    // Attempts 1 and 2 hold until their worker hands them back: however slowly the next worker
    // starts, the rollout cannot finish on the worker being restarted.
    const spec = makeSpec('rolling', 'long', { task: { id: 'long' }, run: fixture('holdsFirstAttempt', { releaseOnAttempt: 3 }) });
    await q.add([spec]);
    let current = await startWorkerProcess(q.workerOptions({ ...FAST }));
    try {
      for (let restart = 0; restart < 2; restart++) {
        await q.waitForState(spec.leaseId, 'active');
        const next = await startWorkerProcess(q.workerOptions({ ...FAST }));
        current.signal('SIGTERM');
        expect((await current.exited()).code).toBe(0);
        current = next;
      }
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', redispatched: 0, attempts: 3, worker: current.name });
    } finally {
      await stopAll([current]);
      await q.close();
    }
  });
});
