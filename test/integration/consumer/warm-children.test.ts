import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolloutWorker } from '../../../dist/consumer/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue } from '../../helpers/raw-queue.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

const quiet = createLogger({}, { write: () => true });

async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('warm rollout children', () => {
  it('forks `children` shared children at start, not one per slot, and reuses them (no recycling by count by default)', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 6, children: 2, logger: quiet });
    try {
      const warm = worker.childPids();
      expect(warm).toHaveLength(2);
      const specs = Array.from({ length: 40 }, (_, i) => makeSpec('warm', `r-${i}`));
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      const pids = new Set([...results.values()].map((r) => (r.output as { pid: number }).pid));
      // Every rollout ran in one of the children forked at start, and both took rollouts.
      for (const pid of pids) expect(warm).toContain(pid);
      expect(pids.size).toBe(2);
      expect(worker.childPids().sort()).toEqual([...warm].sort());
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('more children than slots: the warm children stay, none retired and forked again as the rollouts come and go', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 1, children: 4, logger: quiet });
    try {
      const warm = worker.childPids().sort();
      expect(warm).toHaveLength(4);
      const specs = Array.from({ length: 10 }, (_, i) => makeSpec('morechildren', `r-${i}`));
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect([...results.values()].every((r) => r.kind === 'ok')).toBe(true);
      expect(worker.childPids().sort()).toEqual(warm);
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('keeps at most its slots of idle children over every heap limit: runs with five sandbox.memoryMb values leave no idle set each (fresh-user report)', async () => {
    const q = new RawQueue(redis.url);
    // concurrency 2 + evalConcurrency 1: at most 3 idle children (the report saw 6 → 14, kept for good).
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 2, logger: quiet });
    try {
      for (const memoryMb of [100, 200, 300, 400, 500]) {
        const specs = Array.from({ length: 2 }, (_, i) => makeSpec(`mem${memoryMb}`, `r-${i}`, { sandbox: { memoryMb } }));
        await q.add(specs);
        const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
        expect([...results.values()].map((r) => r.kind)).toEqual(['ok', 'ok']);
        await until(() => worker.childPids().length <= 3, `at most 3 live children after the memoryMb ${memoryMb} run`);
      }
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('retires a child whose RSS passed maxChildRssMb on the rollout that grew it, however soon after the last read, and keeps one that did not', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 1, maxChildRssMb: 160, logger: quiet });
    try {
      const pidOf = async (key: string, mb: number): Promise<number> => {
        const spec = makeSpec('rss', key, { run: fixture('holdsMemory', { mb }) });
        await q.add([spec]);
        const { results } = await q.waitForAll([spec.leaseId]);
        const result = results.get(spec.leaseId);
        expect(result?.kind).toBe('ok');
        return (result?.output as { pid: number }).pid;
      };
      // Back to back, well within the child's RSS read interval: the growth itself makes it read.
      const small = await pidOf('small', 1);
      expect(await pidOf('small-again', 1)).toBe(small);
      const grown = await pidOf('grown', 256);
      expect(grown).toBe(small);
      expect(await pidOf('after', 0)).not.toBe(grown);
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('drains a shared child whose heap in use passed three quarters of sandbox.memoryMb after a rollout, before an out-of-memory ends all its rollouts; keeps one below', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 2, children: 1, logger: quiet });
    try {
      const sandbox = { env: [], memoryMb: 200 };
      const pidOf = async (key: string, mb: number): Promise<number> => {
        const spec = makeSpec('heap', key, { run: fixture('holdsHeap', { mb }), sandbox });
        await q.add([spec]);
        const result = (await q.waitForAll([spec.leaseId])).results.get(spec.leaseId);
        expect(result?.kind).toBe('ok');
        return (result?.output as { pid: number }).pid;
      };
      const first = await pidOf('small', 40); // 40 of 200 MiB: kept
      expect(await pidOf('grown', 120)).toBe(first); // now ~160 of 200 MiB in use
      expect(await pidOf('after', 0)).not.toBe(first);
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('with maxRolloutsPerChild 1 retires each child after its rollout and replaces it in the background', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 2, children: 2, maxRolloutsPerChild: 1, logger: quiet });
    try {
      const specs = Array.from({ length: 6 }, (_, i) => makeSpec('recycle', `r-${i}`));
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect([...results.values()].every((r) => r.kind === 'ok')).toBe(true);
      const pids = [...results.values()].map((r) => (r.output as { pid: number }).pid);
      expect(new Set(pids).size).toBe(6);
      // The pool refills to `children` without any rollout asking for a child.
      await until(() => worker.childPids().length === 2 && worker.childPids().every((pid) => !pids.includes(pid)), 'two fresh warm children');
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('a child whose stage board was closed by rollout code still reports the rollout, then is replaced', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ ...q.workerOptions(), concurrency: 1, logger: quiet });
    try {
      const careless = makeSpec('board', 'r-0', { run: fixture('closesStageBoard') });
      await q.add([careless]);
      const first = (await q.waitForAll([careless.leaseId])).results.get(careless.leaseId);
      expect(first, JSON.stringify(first?.error)).toMatchObject({ kind: 'ok', reward: 1 });
      const next = makeSpec('board', 'r-1');
      await q.add([next]);
      const second = (await q.waitForAll([next.leaseId])).results.get(next.leaseId);
      expect(second).toMatchObject({ kind: 'ok' });
      expect((second?.output as { pid: number }).pid).not.toBe((first?.output as { pid: number }).pid);
    } finally {
      await worker.close({ graceMs: 0 });
      await q.close();
    }
  });

  it('refuses a maxRolloutsPerChild of 0 naming the option', async () => {
    await expect(RolloutWorker.create({ redisUrl: redis.url, maxRolloutsPerChild: 0, logger: quiet })).rejects.toThrow(/maxRolloutsPerChild/);
  });
});
