import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Result, RolloutSpec, RolloutSpecInput } from '../../../src/spec/index.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Issue 32: many rollouts share one child process. One rollout that crashes or wedges it must not
// spend its neighbours' re-dispatch budgets; the culprit ends as it did with a child of its own.
// Every worker here has one shared child per heap limit (children: 1), so neighbours share it.

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(tmpdir(), 'rq-shared-'));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function withWorker<T>(q: RawQueue, options: Record<string, unknown>, body: (w: WorkerProcess) => Promise<T>): Promise<T> {
  const worker = await startWorkerProcess(q.workerOptions({ children: 1, ...options }));
  try {
    return await body(worker);
  } finally {
    worker.signal('SIGTERM');
    await worker.exited();
    await q.close();
  }
}

/** Lines of the attempts log written by the `logsAttempt` fixture (`<leaseId> <attempt> <pid>`). */
function attemptLines(logFile: string): string[][] {
  return existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean).map((line) => line.split(' ')) : [];
}

/** The neighbours of a run started by {@link startNeighbours}. */
interface Neighbours {
  readonly specs: RolloutSpec[];
  /** The pid of the child they share. */
  readonly pid: string;
  readonly logFile: string;
  /** Lets every attempt of them end (they hold until then). */
  release(): void;
  /** Waits until each of them has started attempt `attempt` (re-dispatched after its child died). */
  restarted(attempt?: number): Promise<void>;
}

/**
 * `count` neighbours of run `runId` (the `logsAttempt` fixture: each logs its attempt, then holds
 * until released, or sleeps `delayMs` when given), added and waited for until all of them run.
 */
async function startNeighbours(q: RawQueue, runId: string, count: number, overrides: Partial<RolloutSpecInput> = {}, delayMs?: number): Promise<Neighbours> {
  const logFile = path.join(dir, `${runId}.log`);
  const releaseFile = path.join(dir, `${runId}.release`);
  const task = (i: number): Record<string, unknown> => ({ id: `n-${i}`, logFile, ...(delayMs === undefined ? { releaseFile } : { delayMs }) });
  const specs = Array.from({ length: count }, (_, i) => makeSpec(runId, `n-${i}`, { task: task(i), run: fixture('logsAttempt'), ...overrides }));
  await q.add(specs);
  await waitFor(() => attemptLines(logFile).length >= count, `${count} neighbours of ${runId} running`, 30_000);
  const pids = new Set(attemptLines(logFile).map(([, , pid]) => pid));
  expect(pids.size).toBe(1);
  const restarted = (attempt = 2): Promise<void> =>
    waitFor(() => new Set(attemptLines(logFile).filter(([, n]) => Number(n) >= attempt).map(([lease]) => lease)).size === count, `${count} neighbours of ${runId} on attempt ${attempt}`, 60_000);
  return { specs, pid: [...pids][0] as string, logFile, release: () => writeFileSync(releaseFile, ''), restarted };
}

function expectUntouched(results: Map<string, Result>, specs: readonly RolloutSpec[]): void {
  for (const spec of specs) expect(results.get(spec.leaseId), spec.leaseId).toMatchObject({ kind: 'ok', reward: 1, redispatched: 0 });
}

describe('a crash in one rollout of a shared child', () => {
  it('process.exit in its code: it alone is charged (infrastructure after two re-dispatches, as with a child of its own); the neighbours end ok, budget untouched', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8 }, async () => {
      const neighbours = await startNeighbours(q, 'exit', 4);
      const { specs } = neighbours;
      const culprit = makeSpec('exit', 'culprit', { run: fixture('exits', { code: 3 }) });
      await q.add([culprit]);
      await neighbours.restarted();
      neighbours.release();
      const { results } = await q.waitForAll([culprit, ...specs].map((s) => s.leaseId), 120_000);
      expect(results.get(culprit.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2, attempts: 3, error: { type: 'RedispatchLimit' } });
      expect(results.get(culprit.leaseId)?.error?.message).toContain('exit code 3');
      expectUntouched(results, specs);
      expect(await q.counters('exit')).toEqual({ redispatched: 2, duplicatesDropped: 0 });
    });
  });

  it('a segfault (a signal no code of it sees first): every rollout of the child retries alone uncounted; only the culprit, crashing alone, is charged', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8 }, async () => {
      const neighbours = await startNeighbours(q, 'segv', 3);
      const { specs, logFile } = neighbours;
      const culprit = makeSpec('segv', 'culprit', { run: fixture('segfaultsLater', { afterMs: 0 }) });
      await q.add([culprit]);
      await neighbours.restarted();
      neighbours.release();
      const { results } = await q.waitForAll([culprit, ...specs].map((s) => s.leaseId), 120_000);
      // Its first crash was shared (nobody to blame), then three alone: two re-dispatches, then the end.
      expect(results.get(culprit.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2, attempts: 4, error: { type: 'RedispatchLimit' } });
      expect(results.get(culprit.leaseId)?.error?.message).toContain('signal SIGSEGV');
      expectUntouched(results, specs);
      const quarantined = await q.redis.hget(q.keys.runQuarantined('segv'), culprit.leaseId);
      expect(JSON.parse(quarantined ?? '{}')).toMatchObject({ reason: 'ChildCrashed', signal: 'SIGSEGV' });
      expect(await q.counters('segv')).toEqual({ redispatched: 2, duplicatesDropped: 0 });
      // The neighbours' second attempts ran in children of their own: three pids, none the shared one.
      const [first, ...rest] = [attemptLines(logFile).filter(([, attempt]) => attempt === '1'), attemptLines(logFile).filter(([, attempt]) => attempt === '2')];
      const secondPids = new Set(rest[0]?.map(([, , pid]) => pid));
      expect(secondPids.size).toBe(3);
      expect(secondPids.has(first?.[0]?.[2] as string)).toBe(false);
    });
  });

  it('an out-of-memory of the shared heap: the neighbours end ok, budget untouched; the culprit ends infrastructure', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8 }, async () => {
      const sandbox = { env: [], memoryMb: 128 };
      const neighbours = await startNeighbours(q, 'oom', 3, { sandbox });
      const { specs } = neighbours;
      const culprit = makeSpec('oom', 'culprit', { run: fixture('leaksMemory'), sandbox });
      await q.add([culprit]);
      await neighbours.restarted();
      neighbours.release();
      const { results } = await q.waitForAll([culprit, ...specs].map((s) => s.leaseId), 180_000);
      expect(results.get(culprit.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2, error: { type: 'RedispatchLimit' } });
      expect(results.get(culprit.leaseId)?.error?.message).toMatch(/heap|memory|SIGABRT|SIGTRAP|exit code 134/i);
      expectUntouched(results, specs);
      expect(await q.counters('oom')).toEqual({ redispatched: 2, duplicatesDropped: 0 });
    });
  });
});

describe('a wedged event loop in one rollout of a shared child', () => {
  it('blocked inside its run call: it ends model RunTimeout at its own runMs, as alone; the neighbours end ok, budget untouched', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8 }, async () => {
      const neighbours = await startNeighbours(q, 'spin', 3);
      const { specs } = neighbours;
      const culprit = makeSpec('spin', 'culprit', { run: fixture('spinsForever'), timeouts: { runMs: 1000, hangMs: 60_000 } });
      await q.add([culprit]);
      await neighbours.restarted();
      neighbours.release();
      const { results } = await q.waitForAll([culprit, ...specs].map((s) => s.leaseId), 60_000);
      expect(results.get(culprit.leaseId)).toMatchObject({ kind: 'model', redispatched: 0, attempts: 1, error: { type: 'RunTimeout' } });
      expectUntouched(results, specs);
      expect(await q.counters('spin')).toEqual({ redispatched: 0, duplicatesDropped: 0 });
    });
  });

  it('blocked after an await (no call of the child names it): the watchdog kills the child at blockedLoopMs, all retry alone uncounted, and the culprit then ends RunTimeout as alone', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8, blockedLoopMs: 1000 }, async (worker) => {
      const neighbours = await startNeighbours(q, 'spinlater', 3);
      const { specs } = neighbours;
      const culprit = makeSpec('spinlater', 'culprit', { run: fixture('spinsAfterAwait', { afterMs: 0 }), timeouts: { runMs: 4000, hangMs: 60_000 } });
      await q.add([culprit]);
      await neighbours.restarted();
      neighbours.release();
      const { results } = await q.waitForAll([culprit, ...specs].map((s) => s.leaseId), 90_000);
      expect(results.get(culprit.leaseId)).toMatchObject({ kind: 'model', redispatched: 0, attempts: 2, error: { type: 'RunTimeout' } });
      expectUntouched(results, specs);
      for (const spec of specs) expect(results.get(spec.leaseId)?.attempts).toBe(2);
      expect(await q.counters('spinlater')).toEqual({ redispatched: 0, duplicatesDropped: 0 });
      expect(worker.output()).toContain('its shared rollout child died and no single rollout of it is to blame');
    });
  });
});

describe('the watchdog', () => {
  it('does not take a child whose board rollout code closed for a blocked one: its neighbours run to their end, then it is replaced', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8, blockedLoopMs: 500 }, async () => {
      // Held by time, not by a release: nothing is to happen to them while a misfire could.
      const { specs, pid } = await startNeighbours(q, 'board', 3, {}, 3000);
      const careless = makeSpec('board', 'careless', { run: fixture('closesStageBoard') });
      await q.add([careless]);
      const { results } = await q.waitForAll([careless, ...specs].map((s) => s.leaseId));
      expect(results.get(careless.leaseId)).toMatchObject({ kind: 'ok', attempts: 1 });
      expectUntouched(results, specs);
      for (const spec of specs) expect(results.get(spec.leaseId)?.output).toMatchObject({ attempt: 1, pid: Number(pid) });
      const next = makeSpec('board', 'next');
      await q.add([next]);
      const after = (await q.waitForAll([next.leaseId])).results.get(next.leaseId);
      expect(after).toMatchObject({ kind: 'ok' });
      expect((after?.output as { pid: number }).pid).not.toBe(Number(pid));
    });
  });
});

describe('per-rollout control in a shared child', () => {
  it('a cancel of one run aborts its rollout alone: the rollouts of another run in the same child run on and end ok there', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8 }, async () => {
      const neighbours = await startNeighbours(q, 'keep', 3);
      const { specs, pid } = neighbours;
      const victim = makeSpec('drop', 'x', { task: { id: 'x', delayMs: 60_000, logFile: path.join(dir, 'drop.log') }, run: fixture('logsAttempt') });
      await q.add([victim]);
      await waitFor(() => attemptLines(path.join(dir, 'drop.log')).length === 1, 'the victim running', 30_000);
      expect(attemptLines(path.join(dir, 'drop.log'))[0]?.[2]).toBe(pid);
      await q.redis.hset(q.keys.run('drop'), 'status', 'cancelled');
      await q.redis.publish(q.keys.cancelChannel(), 'drop');
      expect((await q.waitForAll([victim.leaseId])).results.get(victim.leaseId)).toMatchObject({ kind: 'caller', error: { type: 'Cancelled' } });
      neighbours.release();
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      expectUntouched(results, specs);
      for (const spec of specs) expect(results.get(spec.leaseId)?.output).toMatchObject({ attempt: 1, pid: Number(pid) });
    });
  });

  it('SIGTERM drains every slot: the rollouts sharing the child all finish ok on their first attempt and the worker exits 0', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 12, children: 1 }));
    try {
      // Held by time: they must end by themselves within the shutdown grace.
      const { specs } = await startNeighbours(q, 'drain', 12, {}, 1500);
      worker.signal('SIGTERM');
      expect(await worker.exited()).toEqual({ code: 0, signal: null });
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      expectUntouched(results, specs);
      for (const spec of specs) expect(results.get(spec.leaseId)?.attempts).toBe(1);
    } finally {
      await worker.kill();
      await q.close();
    }
  });

  it('sandbox.isolation "process" gives each such rollout a child of its own; the others share one', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 8 }, async () => {
      const neighbours = await startNeighbours(q, 'iso', 3);
      const { specs, pid } = neighbours;
      const logFile = path.join(dir, 'iso-own.log');
      const own = Array.from({ length: 3 }, (_, i) => makeSpec('iso', `own-${i}`, { task: { id: `own-${i}`, logFile, releaseFile: path.join(dir, 'iso.release') }, run: fixture('logsAttempt'), sandbox: { env: [], memoryMb: 1024, isolation: 'process' } }));
      await q.add(own);
      await waitFor(() => attemptLines(logFile).length === 3, 'the isolated rollouts running', 30_000);
      const ownPids = new Set(attemptLines(logFile).map(([, , p]) => p));
      expect(ownPids.size).toBe(3);
      expect(ownPids.has(pid)).toBe(false);
      neighbours.release();
      const { results } = await q.waitForAll([...specs, ...own].map((s) => s.leaseId));
      expectUntouched(results, [...specs, ...own]);
    });
  });
});
