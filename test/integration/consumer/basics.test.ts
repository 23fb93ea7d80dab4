import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { isAlive, startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

describe('worker basics (real worker processes, raw BullMQ producer)', () => {
  it('runs rollouts in child processes over two workers and types every outcome', async () => {
    const q = new RawQueue(redis.url);
    const workers: WorkerProcess[] = await Promise.all([startWorkerProcess(q.workerOptions()), startWorkerProcess(q.workerOptions())]);
    try {
      const run = 'basics';
      const ok = Array.from({ length: 30 }, (_, i) => makeSpec(run, `ok-${i}`, { task: { id: `ok-${i}`, delayMs: 20 } }));
      const throws = makeSpec(run, 'throws', { run: fixture('throws', { name: 'ValueError', message: 'bad input' }) });
      const denied = makeSpec(run, 'denied', { run: { $ref: 'not-allowed-pkg/x:run', config: {} } });
      const outOfRange = makeSpec(run, 'range', { reward: fixture('fromTask'), task: { id: 'range', reward: 7 } });
      const rewardThrows = makeSpec(run, 'rewardthrows', { reward: fixture('throws', { name: 'TypeError', message: 'cannot read gold' }) });
      const specs = [...ok, throws, denied, outOfRange, rewardThrows];
      await q.add(specs);
      const { results, failed } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect(failed.size).toBe(0);
      for (const spec of ok) {
        const result = results.get(spec.leaseId);
        expect(result?.kind).toBe('ok');
        expect(result?.reward).toBe(1);
        const output = result?.output as { pid: number };
        // The rollout ran in a child: not this process, not either worker's main process.
        expect(output.pid).not.toBe(process.pid);
        expect(workers.map((w) => w.pid)).not.toContain(output.pid);
      }
      expect(new Set(ok.map((s) => results.get(s.leaseId)?.worker)).size).toBe(2);
      expect(results.get(throws.leaseId)).toMatchObject({ kind: 'model', error: { type: 'ValueError' } });
      expect(results.get(throws.leaseId)?.error?.message).toContain('bad input');
      expect(results.get(denied.leaseId)?.kind).toBe('caller');
      expect(results.get(denied.leaseId)?.error?.message).toContain('not-allowed-pkg');
      expect(results.get(outOfRange.leaseId)).toMatchObject({ kind: 'caller', error: { type: 'RewardOutOfRange' } });
      expect(results.get(outOfRange.leaseId)?.error?.message).toContain('[0, 1]');
      // Issue 11 (executor contract): a reward that throws on this output is evidence about the
      // output (model), kept with the output; it no longer stops the run as caller.
      expect(results.get(rewardThrows.leaseId)).toMatchObject({ kind: 'model', error: { type: 'RewardThrew:TypeError' }, redispatched: 0 });
      expect(results.get(rewardThrows.leaseId)?.output).toMatchObject({ taskId: 'rewardthrows' });
      expect(results.get(rewardThrows.leaseId)?.error?.message).toContain('cannot read gold');
    } finally {
      for (const w of workers) w.signal('SIGTERM');
      const exits = await Promise.all(workers.map((w) => w.exited()));
      expect(exits.map((e) => e.code)).toEqual([0, 0]);
      await q.close();
    }
  });

  it('a rollout that aborts its process does not take the worker or other rollouts down', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 3 }));
    try {
      const run = 'crash';
      const crasher = makeSpec(run, 'crasher', { run: fixture('abortsProcess') });
      const others = Array.from({ length: 50 }, (_, i) => makeSpec(run, `ok-${i}`));
      await q.add([crasher, ...others]);
      const { results } = await q.waitForAll([crasher, ...others].map((s) => s.leaseId));
      for (const spec of others) expect(results.get(spec.leaseId)?.kind).toBe('ok');
      const crashed = results.get(crasher.leaseId);
      expect(crashed?.kind).toBe('infrastructure');
      expect(crashed?.redispatched).toBe(2);
      expect(crashed?.attempts).toBe(3);
      expect(crashed?.error?.message).toContain("its rollout's process crashed on every attempt");
      expect(crashed?.error?.message).toMatch(/SIGABRT/);
      expect(await q.counters(run)).toEqual({ redispatched: 2, duplicatesDropped: 0 });
      expect(isAlive(worker.pid)).toBe(true);
      const later = Array.from({ length: 5 }, (_, i) => makeSpec(run, `later-${i}`));
      await q.add(later);
      const after = await q.waitForAll(later.map((s) => s.leaseId));
      for (const spec of later) expect(after.results.get(spec.leaseId)?.kind).toBe('ok');
      const quarantined = await q.redis.hget(q.keys.runQuarantined(run), crasher.leaseId);
      expect(JSON.parse(quarantined ?? '{}')).toMatchObject({ reason: 'ChildCrashed', signal: 'SIGABRT' });
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });
});
