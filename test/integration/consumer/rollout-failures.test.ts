import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The compiled package: a worker forks dist/consumer/child-main.js, which vitest's TS sources lack.
import { Redis } from 'ioredis';
import { RolloutWorker } from '../../../dist/consumer/index.js';
import { RolloutQueue } from '../../../src/producer/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { until } from '../../helpers/attempt-traces.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { isAlive, startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

async function withWorker<T>(q: RawQueue, options: Record<string, unknown>, body: (w: WorkerProcess) => Promise<T>, env: NodeJS.ProcessEnv = {}): Promise<T> {
  const worker = await startWorkerProcess(q.workerOptions(options), env);
  try {
    return await body(worker);
  } finally {
    worker.signal('SIGTERM');
    await worker.exited();
    await q.close();
  }
}

// Fresh-user report (library pass): a run returning a BigInt or a cycle was stored as
// "[object Object]" with reward 1 (the reward scored the object, the Result kept its String()).
describe('a run output that is not JSON data', () => {
  it('is a model OutputNotJson naming the path when JSON would lose or refuse it; a faithful JSON form is stored and scored', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const cases = ['bigint', 'cycle', 'map', 'fn', 'nan', 'classInstance', 'date', 'undefinedField', 'protoKeys'];
      const specs = cases.map((returns) => makeSpec('odd', returns, { task: { id: returns, returns }, run: fixture('returnsOdd'), reward: fixture('answerIsThree') }));
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((spec) => spec.leaseId));
      const of = (returns: string) => results.get(`odd.${returns}`);
      expect(of('cycle')?.error?.message).toBe("the run returned output that is not JSON data, at output: JSON cannot write it (Converting circular structure to JSON --> starting at object with constructor 'Object' --- property 'self' closes the circle); return strings, finite numbers, booleans, null, arrays and plain objects");
      for (const [returns, path] of [['bigint', 'output.n'], ['map', 'output.m'], ['fn', 'output.f'], ['nan', 'output.x'], ['classInstance', 'output.answer']] as const) {
        expect(of(returns), returns).toMatchObject({ kind: 'model', output: null, reward: null, error: { type: 'OutputNotJson' } });
        expect(of(returns)?.error?.message, returns).toMatch(new RegExp(`^the run returned output that is not JSON data, at ${path.replace('.', '\\.')}`));
      }
      expect(of('map')?.error?.message).toContain('instance of Map');
      expect(of('date')).toMatchObject({ kind: 'ok', reward: 1, output: { answer: 3, at: '1970-01-01T00:00:00.000Z' } });
      expect(of('undefinedField')).toMatchObject({ kind: 'ok', reward: 1, output: { answer: 3 } });
      expect(Object.keys(of('undefinedField')?.output as object)).toEqual(['answer']);
      expect(of('protoKeys')).toMatchObject({ kind: 'ok', reward: 1 });
      expect(JSON.stringify(of('protoKeys')?.output)).toBe('{"answer":3,"__proto__":1,"constructor":2}');
    });
  });
});

// Fresh-user report (library pass): a 150 MB output ended ok (Redis and the coordinator grew by
// hundreds of MB); a 200 MB one ended RewardTimeout, blaming an instant reward.
it('an output over the worker\'s maxOutputBytes is a model OutputTooLarge, before the reward; one under it is ok', async () => {
  const q = new RawQueue(redis.url);
  await withWorker(q, { maxOutputBytes: 4096 }, async () => {
    const over = makeSpec('big', 'over', { task: { id: 'over', returns: 'big', size: 5000 }, run: fixture('returnsOdd'), reward: fixture('answerIsThree') });
    const under = makeSpec('big', 'under', { task: { id: 'under', returns: 'big', size: 3000 }, run: fixture('returnsOdd'), reward: fixture('answerIsThree') });
    await q.add([over, under]);
    const { results } = await q.waitForAll([over.leaseId, under.leaseId]);
    expect(results.get(over.leaseId)).toMatchObject({ kind: 'model', output: null, reward: null, error: { type: 'OutputTooLarge' } });
    expect(results.get(over.leaseId)?.error?.message).toBe("the run returned output whose JSON text is over the worker's maxOutputBytes = 4096 bytes; return a summary and keep large data elsewhere (a file, object storage), or raise maxOutputBytes (worker --max-output-bytes)");
    expect(results.get(under.leaseId)).toMatchObject({ kind: 'ok', reward: 1 });
  });
});

describe('failures of the rollout itself', () => {
  it('a rollout that blocks forever is killed after hangMs, re-dispatched, then ends as infrastructure', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const spec = makeSpec('hang', 'wedged', { run: fixture('blocksForever'), timeouts: { runMs: 60_000, hangMs: 500 } });
      const fine = makeSpec('hang', 'fine');
      await q.add([spec, fine]);
      const { results } = await q.waitForAll([spec.leaseId, fine.leaseId]);
      expect(results.get(fine.leaseId)?.kind).toBe('ok');
      const hung = results.get(spec.leaseId);
      expect(hung).toMatchObject({ kind: 'infrastructure', redispatched: 2, attempts: 3, error: { type: 'RedispatchLimit' } });
      expect(hung?.error?.message).toContain('Hang');
      // Fresh-user report: it read "the worker died repeatedly", while the worker was fine.
      expect(hung?.error?.message).toContain('its rollout stopped answering on every attempt and was killed at timeouts.hangMs each time');
      expect(await q.counters('hang')).toEqual({ redispatched: 2, duplicatesDropped: 0 });
    });
  });

  it('a run past its own timeouts.runMs is a model failure, not a re-dispatch', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const spec = makeSpec('slow', 'slow', { task: { id: 'slow', delayMs: 5000 }, timeouts: { runMs: 300, hangMs: 10_000 } });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'model', redispatched: 0, error: { type: 'RunTimeout' } });
    });
  });

  it('process.exit and a heap OOM in the child are crashes of the plane, re-dispatched then infrastructure', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 2 }, async (worker) => {
      const exits = makeSpec('oom', 'exits', { run: fixture('exits', { code: 3 }) });
      const oom = makeSpec('oom', 'oom', { run: fixture('leaksMemory'), sandbox: { env: [], memoryMb: 64 } });
      await q.add([exits, oom]);
      const { results } = await q.waitForAll([exits.leaseId, oom.leaseId], 120_000);
      expect(results.get(exits.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2 });
      expect(results.get(exits.leaseId)?.error?.message).toContain('exit code 3');
      expect(results.get(exits.leaseId)?.error?.message).toContain("its rollout's process crashed on every attempt");
      expect(results.get(oom.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2 });
      expect(results.get(oom.leaseId)?.error?.message).toMatch(/heap|memory|SIGABRT|SIGTRAP|exit code 134/i);
      expect(isAlive(worker.pid)).toBe(true);
    });
  });

  // Fresh-user report: codeRunner maxOutputBytes 32 MiB under sandbox.memoryMb 64 crashed the
  // rollout child (heap out of memory holding the kept output) on every attempt, so the lease
  // ended infrastructure after two re-dispatches. Refused as caller before the artifact runs;
  // the largest that fits runs with both streams full in a real 64 MiB child.
  it('a codeRunner maxOutputBytes its child cannot report under memoryMb is a caller Result at once; the largest that fits runs', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 2 }, async () => {
      const flood = "const fs = require('fs'); const a = Buffer.alloc(1 << 20, 97); for (let i = 0; i < 40; i++) { fs.writeSync(2, a); fs.writeSync(1, a); }";
      const runner = (maxOutputBytes: number) => ({ $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', maxOutputBytes, timeoutMs: 60_000 } });
      const sandbox = { env: [], memoryMb: 64 };
      const tooBig = makeSpec('outfit', 'too-big', { rendered: { files: { 'main.js': flood } }, run: runner(33_554_432), sandbox });
      const fits = makeSpec('outfit', 'fits', { rendered: { files: { 'main.js': flood } }, run: runner(8_388_608), sandbox });
      await q.add([tooBig, fits]);
      const { results } = await q.waitForAll([tooBig.leaseId, fits.leaseId], 120_000);
      expect(results.get(tooBig.leaseId)).toMatchObject({ kind: 'caller', attempts: 1, redispatched: 0, error: { type: 'CallerError' } });
      expect(results.get(tooBig.leaseId)?.error?.message).toContain('raise sandbox.memoryMb to at least 208 or lower maxOutputBytes to at most 8388608');
      expect(results.get(fits.leaseId)).toMatchObject({ kind: 'ok', attempts: 1, redispatched: 0 });
    });
  });

  it('a crash on the first attempt is re-dispatched and the second attempt succeeds', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const spec = makeSpec('flaky', 'flaky', { run: fixture('crashesUntilAttempt', { succeedOnAttempt: 2 }) });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', redispatched: 1, attempts: 2 });
      expect(await q.counters('flaky')).toEqual({ redispatched: 1, duplicatesDropped: 0 });
    });
  });

  it('a re-dispatched lease taken again by another slot of the same worker keeps its lock renewed while it runs past several lock durations', async () => {
    // BullMQ's lock manager tracks locks by job id: the crashed attempt's end used to drop the
    // new attempt's lock from renewal, which then stalled and was re-dispatched as WorkerLost.
    const q = new RawQueue(redis.url);
    await withWorker(q, { concurrency: 2, lockDurationMs: 2000, stalledIntervalMs: 1000 }, async () => {
      const spec = makeSpec('relock', 'x', { run: fixture('crashesUntilAttempt', { succeedOnAttempt: 2, thenWaitMs: 6000 }) });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', attempts: 2, redispatched: 1 });
      expect((await q.queue.getJob(spec.leaseId))?.stalledCounter).toBe(0);
    });
  });

  it('a child that cannot start fails the lease with its exit code and stderr tail, not as stalled', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, { childExecArgv: ['--no-such-node-flag'] }, async () => {
      const spec = makeSpec('nostart', 'x');
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      const result = results.get(spec.leaseId);
      expect(result).toMatchObject({ kind: 'infrastructure', redispatched: 2 });
      expect(result?.error?.message).toContain('ChildStartFailed');
      expect(result?.error?.message).toContain('exit code 9');
      expect(result?.error?.message).toContain('--no-such-node-flag');
      expect((await q.queue.getJob(spec.leaseId))?.stalledCounter).toBe(0);
    });
  });

  it('a secret missing on the worker re-dispatches, then reports infrastructure naming the variable', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const spec = makeSpec('secret', 'x', { sandbox: { env: ['RQ_TEST_ABSENT_SECRET'], memoryMb: 256 } });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2 });
      expect(results.get(spec.leaseId)?.error?.message).toContain('RQ_TEST_ABSENT_SECRET');
      // Fresh-user report (helper-32): the back-off alone did not keep an idle worker without the
      // secret from taking the lease again; the message names the routing that does.
      expect(results.get(spec.leaseId)?.error?.message).toContain('or send these leases only to workers that have it with a placement label (worker --placement KEY=VALUE, and the same placement on the drafts)');
    });
  });

  // Fresh-user report (helper-30): `sandbox.env` naming a variable one worker lacks ended
  // infrastructure/RedispatchLimit in 45 ms, all three attempts on that worker: each hand-back went
  // straight back to it, and a worker of the fleet that has the secret never got the lease.
  it('a secret missing on one worker: the lease waits out the back-off, and a worker that has the secret runs it', async () => {
    const q = new RawQueue(redis.url);
    // A long back-off on the worker without the secret: it is stopped well before the lease is due again.
    const lacking = await startWorkerProcess(q.workerOptions({ transientBackoffMs: 6000 }));
    let having: WorkerProcess | undefined;
    try {
      const spec = makeSpec('secret', 'fleet', { sandbox: { env: ['RQ_TEST_FLEET_SECRET'], memoryMb: 256 } });
      await q.add([spec]);
      await waitFor(() => lacking.output().includes('lease re-dispatched'), 'the first hand-back', 30_000);
      const handBack = JSON.parse(lacking.output().split('\n').find((line) => line.includes('lease re-dispatched')) ?? '{}') as { reason?: string; delayMs?: number };
      expect(handBack.reason).toBe('MissingSecret');
      expect(handBack.delayMs).toBeGreaterThan(0);
      lacking.signal('SIGTERM');
      expect((await lacking.exited()).code).toBe(0);
      having = await startWorkerProcess(q.workerOptions(), { RQ_TEST_FLEET_SECRET: 'fleet-secret-value' });
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', redispatched: 1, worker: having.name });
    } finally {
      if (having) {
        having.signal('SIGTERM');
        await having.exited();
      }
      await lacking.kill();
      await q.close();
    }
  });

  it('cost receipts reach the Result once each, also when the rollout failed after paying', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const thrown = makeSpec('cost', 'thrown', { run: fixture('paysThenFails', { usd: 0.25 }) });
      const crashed = makeSpec('cost', 'crashed', { run: fixture('paysThenFails', { usd: 0.5, crash: true }) });
      await q.add([thrown, crashed]);
      const { results } = await q.waitForAll([thrown.leaseId, crashed.leaseId]);
      expect(results.get(thrown.leaseId)?.kind).toBe('model');
      expect(results.get(thrown.leaseId)?.cost).toEqual([{ id: `${thrown.leaseId}-1`, usd: 0.25, label: 'fixture' }]);
      const crashedResult = results.get(crashed.leaseId);
      expect(crashedResult?.kind).toBe('infrastructure');
      expect(crashedResult?.cost.map((c) => c.id).sort()).toEqual([1, 2, 3].map((n) => `${crashed.leaseId}-${n}`));
    });
  });

  it('malformed jobs from other clients become caller Results naming the bad path; the worker keeps serving', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async (worker) => {
      await q.queue.add('rollout', 'plain garbage', { jobId: 'garbage-1' });
      await q.queue.add('rollout', { v: 2, leaseId: 'x.y' }, { jobId: 'wrong-version' });
      const good = makeSpec('mal', 'good');
      await q.queue.add('rollout', { ...good, task: 'not an object' }, { jobId: 'mal.badtask' });
      await q.add([good]);
      const { results } = await q.waitForAll(['garbage-1', 'wrong-version', 'mal.badtask', good.leaseId]);
      expect(results.get('garbage-1')).toMatchObject({ kind: 'caller', error: { type: 'InvalidSpec' } });
      expect(results.get('wrong-version')?.error?.message).toMatch(/\bv\b/);
      expect(results.get('mal.badtask')?.error?.message).toContain('task');
      expect(results.get(good.leaseId)?.kind).toBe('ok');
      expect(isAlive(worker.pid)).toBe(true);
    });
  });

  it('cancellation reaches a running rollout promptly and is reported as Cancelled', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const spec = makeSpec('cancel', 'long', { task: { id: 'long', delayMs: 60_000 } });
      await q.add([spec]);
      await q.waitForState(spec.leaseId, 'active');
      await q.redis.hset(q.keys.run('cancel'), 'status', 'cancelled');
      await q.redis.publish(q.keys.cancelChannel(), 'cancel');
      const { results } = await q.waitForAll([spec.leaseId], 10_000);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'caller', error: { type: 'Cancelled' } });
    });
  });

  it('a cancel the rollout cannot answer (its event loop blocked) ends it as Cancelled once killed, never handed back to run again', async () => {
    const q = new RawQueue(redis.url);
    const dir = mkdtempSync(path.join(tmpdir(), 'rq-cancel-'));
    const marker = path.join(dir, 'ran');
    try {
      await withWorker(q, { killGraceMs: 300 }, async () => {
        // Attempt 1 blocks its event loop once it has written the marker; a second attempt would return ok at once.
        const spec = makeSpec('cancelkill', 'spin', { run: fixture('spinsOnFirstAttempt', { path: marker }) });
        await q.add([spec]);
        expect(await until(() => existsSync(marker), 30_000)).toBe(true);
        // The bare message is the whole contract (the run record still says `running`).
        await q.redis.publish(q.keys.cancelChannel(), 'cancelkill');
        const { results } = await q.waitForAll([spec.leaseId]);
        expect(results.get(spec.leaseId)).toMatchObject({ kind: 'caller', attempts: 1, error: { type: 'Cancelled' } });
        expect(results.get(spec.leaseId)?.error?.message).toContain('killGraceMs = 300 ms');
        expect(readFileSync(marker, 'utf8')).toBe('ran spin\n');
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a cancel heard while no rollout of the run was active here ends a later attempt of it as Cancelled, not run', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async (worker) => {
      // As a cancel falling between a stalled attempt's end and its re-dispatched attempt's start.
      await q.redis.publish(q.keys.cancelChannel(), 'cancellater');
      expect(await until(() => worker.output().includes('no active rollout of it here'), 30_000)).toBe(true);
      // RawQueue jobs carry no enqueue time: their start goes through the ledger, which reads the
      // run record (still `running`: the bare message is the whole contract).
      const spec = makeSpec('cancellater', 'x');
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'caller', error: { type: 'Cancelled', message: 'the run was cancelled before this rollout started' } });
    }, { LOG_LEVEL: 'debug' });
  });

  // Fresh-user report: after `cancel X` and `purge X`, a new `run --run-id X` on the same
  // workers ended Cancelled at once (the worker remembered the run id, not its attempt).
  it('a cancel heard for one attempt of a run id does not cancel a later attempt under the same id', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async (worker) => {
      await q.redis.hset(q.keys.run('reused'), 'status', 'cancelled', 'runAttemptId', 'old');
      await q.redis.publish(q.keys.cancelChannel(), 'reused');
      expect(await until(() => worker.output().includes('no active rollout of it here'), 30_000)).toBe(true);
      // Purged, then run again: a new record, a new attempt.
      await q.redis.del(q.keys.run('reused'));
      await q.redis.hset(q.keys.run('reused'), 'status', 'running', 'runAttemptId', 'a1');
      const fresh = makeSpec('reused', 'x');
      const stale = makeSpec('reused', 'y', { runAttemptId: 'old' });
      await q.add([fresh, stale]);
      const { results } = await q.waitForAll([fresh.leaseId, stale.leaseId]);
      expect(results.get(fresh.leaseId)?.kind).toBe('ok');
      expect(results.get(stale.leaseId)).toMatchObject({ kind: 'caller', error: { type: 'Cancelled' } });
    }, { LOG_LEVEL: 'debug' });
  });

  // Fresh-user report: `cancel` under REDIS_URL=…/3 stopped the run of the same id on database 0
  // (pub/sub ignores database numbers).
  it("a cancel published in another database does not reach this database's rollouts", async () => {
    const q = new RawQueue(redis.url);
    const other = new URL(redis.url);
    other.pathname = '/3';
    const rq = await RolloutQueue.create({ redisUrl: other.toString(), queue: q.name, prefix: TEST_PREFIX, logger: createLogger({}, { write: () => true }) });
    try {
      await withWorker(q, {}, async () => {
        const spec = makeSpec('crossdb', 'long', { task: { id: 'long', delayMs: 1500 } });
        await q.add([spec]);
        await q.waitForState(spec.leaseId, 'active');
        await rq.cancel('crossdb').catch(() => undefined); // no such run in database 3
        const db3 = new Redis(other.toString());
        try {
          await db3.hset(q.keys.run('crossdb'), 'status', 'running', 'runAttemptId', 'a1');
          expect((await rq.cancel('crossdb')).workersNotified).toBe(0);
        } finally {
          db3.disconnect();
        }
        const { results } = await q.waitForAll([spec.leaseId]);
        expect(results.get(spec.leaseId)?.kind).toBe('ok');
      });
    } finally {
      await rq.close();
    }
  });

  it('nothing a finished rollout started outlives it (a detached grandchild is killed)', async () => {
    const q = new RawQueue(redis.url);
    await withWorker(q, {}, async () => {
      const spec = makeSpec('orphans', 'x', { run: fixture('leavesGrandchild') });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      const pid = (results.get(spec.leaseId)?.output as { grandchildPid: number }).grandchildPid;
      expect(results.get(spec.leaseId)?.kind).toBe('ok');
      // Killed before the Result was reported; a zombie awaiting reaping by init counts as gone.
      const state = (): string => {
        try {
          return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] ?? 'gone';
        } catch {
          return 'gone';
        }
      };
      expect(['gone', 'Z']).toContain(state());
    });
  });

  it('close is idempotent and leaves no live child processes', async () => {
    const q = new RawQueue(redis.url);
    const worker = await RolloutWorker.create({ redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], concurrency: 2, logger: createLogger({}, { write: () => true }) });
    try {
      const specs = [makeSpec('close', 'a'), makeSpec('close', 'b')];
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect([...results.values()].map((r) => r.kind)).toEqual(['ok', 'ok']);
      const pids = worker.childPids();
      expect(pids.length).toBeGreaterThan(0);
      await Promise.all([worker.close(), worker.close()]);
      await worker.close();
      expect(worker.status).toBe('closed');
      for (const pid of pids) expect(isAlive(pid)).toBe(false);
    } finally {
      await worker.close();
      await q.close();
    }
  });
});
