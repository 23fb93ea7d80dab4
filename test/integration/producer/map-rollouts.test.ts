import { describe, expect, it, vi } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutWorker } from '../../../src/consumer/index.js';
import { RolloutQueue } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { TEST_PREFIX, collect, useProducerFixture } from '../../helpers/producer-fixture.js';
import { draft, drafts } from '../../helpers/rollout-drafts.js';

const fx = useProducerFixture();

describe('mapRollouts', () => {
  it('yields Results in completion order: a slow first spec is not first', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue, { concurrency: 3 });
    const runId = fx.runId();
    const list = [draft({ id: 'slow', delayMs: 400 }), draft({ id: 'fast1' }), draft({ id: 'fast2' })];
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));
    expect(error).toBeUndefined();
    expect(items.map((r) => r.leaseId)).toHaveLength(3);
    expect(items[0]?.leaseId).not.toBe(`${runId}.slow`);
    expect(items[2]?.leaseId).toBe(`${runId}.slow`);
    expect(items.every((r) => r.kind === 'ok' && r.runId === runId)).toBe(true);

    const status = await rq.status(runId);
    expect(status.run).toMatchObject({ status: 'completed', specCount: 3, enqueued: 3, delivered: 3, kinds: { ok: 3 } });
    expect(status.workers.length).toBeGreaterThan(0);
  });

  it('holds at most maxInFlight of the run\'s jobs waiting+active (back-pressure on the way in)', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { maxInFlight: 5 });
    const inspect = fx.inspect(queue);
    let peak = 0;
    const sample = async (): Promise<void> => {
      const counts = await inspect.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      peak = Math.max(peak, (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0));
    };
    await fx.worker(queue, { concurrency: 3, onStart: sample });
    const { items, error } = await collect(rq.mapRollouts(drafts(30, { delayMs: 15 }), { runId: fx.runId() }), sample);
    expect(error).toBeUndefined();
    expect(new Set(items.map((r) => r.leaseId)).size).toBe(30);
    expect(peak).toBeLessThanOrEqual(5);
    expect(peak).toBeGreaterThanOrEqual(3); // the window was actually used, not one job at a time
  });

  it('returns at once with no Results for an empty list, without creating a run', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const runId = fx.runId();
    expect((await collect(rq.mapRollouts([], { runId }))).items).toEqual([]);
    async function* none(): AsyncGenerator<never> {}
    expect(await collect(rq.mapRollouts(none(), { runId }))).toEqual({ items: [], error: undefined });
    expect((await rq.status(runId)).run).toBeNull();
  });

  it('throws a clear error for every method of a closed queue; close is idempotent', async () => {
    const rq = await fx.open(fx.queueName());
    await rq.close();
    await rq.close();
    expect(rq.state).toBe('closed');
    const message = 'RolloutQueue is closed (state: closed); create a new one';
    expect(() => rq.mapRollouts([draft({ id: 'a' })], { runId: 'r1' })).toThrow(message);
    expect(() => rq.attach('r1')).toThrow(message);
    await expect(rq.rollout(draft({ id: 'a' }))).rejects.toThrow(message);
    await expect(rq.cancel('r1')).rejects.toThrow(message);
    await expect(rq.status()).rejects.toThrow(message);
  });

  // Fresh-user report (library pass): plain-JavaScript misuse passed silently ({ signl } left a
  // run no abort could cancel) or failed with an internal TypeError.
  it('refuses options it does not take, a missing runId and drafts that are no iterable, synchronously and by name', async () => {
    const rq = await fx.open(fx.queueName());
    const controller = new AbortController();
    const loose = rq as unknown as { mapRollouts(drafts: unknown, options?: unknown): unknown; attach(runId: string, options?: unknown): unknown; rollout(draft: unknown, options?: unknown): Promise<unknown> };
    expect(() => loose.mapRollouts([draft({ id: 'a' })], { runId: 'opt1', signl: controller.signal, maxInFlight: 3 })).toThrow('mapRollouts option "signl" is not an option (did you mean "signal"?); its options are runId, signal, runAttemptId, specCount, sourceFingerprint, coordinatorNote, checkPreviousNote');
    expect(() => loose.mapRollouts([draft({ id: 'a' })])).toThrow("mapRollouts takes its options as an object, with runId: mapRollouts(…, { runId: '…' }); got undefined");
    expect(() => loose.mapRollouts([draft({ id: 'a' })], { runid: 'x' })).toThrow('mapRollouts option "runid" is not an option (did you mean "runId"?)');
    expect(() => loose.mapRollouts(5, { runId: 'opt1' })).toThrow('mapRollouts takes its drafts as an array, an iterable or an async iterable; got number');
    expect(() => loose.mapRollouts([draft({ id: 'a' })], { runId: 'opt1', signal: 'stop' })).toThrow('mapRollouts option signal must be an AbortSignal (new AbortController().signal); got string');
    expect(() => loose.attach('opt1', { signl: controller.signal })).toThrow('attach option "signl" is not an option (did you mean "signal"?); its options are signal, coordinatorNote, checkPreviousNote');
    await expect(loose.rollout(draft({ id: 'a' }), { runID: 'x' })).rejects.toThrow('rollout option "runID" is not an option (did you mean "runId"?); its options are runId, signal');
    expect((await rq.status('opt1')).run).toBeNull();
  });

  it('refuses a bad runId synchronously, naming the allowed form', async () => {
    const rq = await fx.open(fx.queueName());
    expect(() => rq.mapRollouts([draft({ id: 'a' })], { runId: 'a.b' })).toThrow(/runId "a\.b".*letters, digits/);
  });

  it('yields model and infrastructure Results like ok ones, never throwing', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const list = [draft({ id: 'm', kind: 'model' }), draft({ id: 'i', kind: 'infrastructure' }), draft({ id: 'o' })];
    const { items, error } = await collect(rq.mapRollouts(list, { runId: fx.runId() }));
    expect(error).toBeUndefined();
    expect(items.map((r) => r.kind).sort()).toEqual(['infrastructure', 'model', 'ok']);
  });

  it('turns a failed job into an infrastructure Result (WorkerError; WorkerLost at the stall limit, quarantined)', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    await fx.worker(queue, {
      // The real worker counts re-dispatches per lease; pretend it saw two.
      onStart: async (job) => void (job.data.task.id === 'lost' && (await fx.redis.hset(keys.lease(String(job.id)), 'redispatched', '2'))),
    });
    const runId = fx.runId();
    const list = [
      draft({ id: 'err', fail: true, failMessage: 'worker blew up' }),
      draft({ id: 'lost', fail: true, failMessage: 'job stalled more than allowable limit' }),
    ];
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));
    expect(error).toBeUndefined();
    const byTask = Object.fromEntries(items.map((r) => [r.taskId, r])) as Record<string, Result>;
    expect(byTask.err).toMatchObject({ kind: 'infrastructure', error: { type: 'WorkerError', message: 'worker blew up' }, attempts: 1, redispatched: 0 });
    // Fresh-user report: BullMQ's bare "job stalled more than allowable limit" named no cause.
    expect(byTask.lost).toMatchObject({ kind: 'infrastructure', error: { type: 'WorkerLost', message: `the worker running lease ${runId}.lost was lost more often than the re-dispatch limit allows (killed, frozen or cut off from Redis before it renewed its lock), so the lease ended (BullMQ: job stalled more than allowable limit)` }, redispatched: 2 });
    const record = (await rq.status(runId)).run;
    expect(record?.quarantined).toEqual({ [`${runId}.lost`]: { reason: 'job stalled more than allowable limit', exitCode: null, signal: null, stderrTail: '' } });
    expect(record).toMatchObject({ status: 'completed', kinds: { infrastructure: 2 } });
  });

  it('rollout(draft) returns exactly the one Result; a caller Result is returned, not thrown', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const ok = await rq.rollout(draft({ id: 'one', reward: 0.5 }));
    expect(ok).toMatchObject({ kind: 'ok', reward: 0.5, taskId: 'one' });
    expect(ok.runId).toMatch(/^single-/);
    expect((await rq.status(ok.runId)).run).toMatchObject({ status: 'completed', specCount: 1, enqueued: 1, delivered: 1 });
    const caller = await rq.rollout(draft({ id: 'bad', kind: 'caller' }), { runId: fx.runId('single') });
    expect(caller.kind).toBe('caller');
    const invalid = await rq.rollout({ ...draft({ id: 'x' }), run: { $ref: 'no-colon', config: {} } });
    expect(invalid).toMatchObject({ kind: 'caller', error: { type: 'InvalidSpec' } });
    expect(invalid.error?.message).toContain('run.$ref');
  });

  it('warns when Redis maxmemory-policy is not noeviction', async () => {
    // BullMQ also checks the policy on each connection it opens and prints
    // `IMPORTANT! Eviction policy is allkeys-lru…` with console.warn (Queue and QueueEvents: the
    // two eviction warnings `npm test` used to print). Captured here, so the test asserts it
    // instead of printing it.
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    await fx.redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const bullWarned = (): boolean => warn.mock.calls.some((call) => String(call[0]).startsWith('IMPORTANT! Eviction policy'));
    let warnings: string[] = [];
    try {
      await fx.open(fx.queueName());
      // BullMQ warns from its connections' init, which may finish after create() resolved.
      for (const until = Date.now() + 10_000; !bullWarned() && Date.now() < until;) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      await fx.redis.config('SET', 'maxmemory-policy', 'noeviction');
      warnings = warn.mock.calls.map((call) => String(call[0]));
      warn.mockRestore();
    }
    expect(fx.logs.join('\n')).toMatch(/maxmemory-policy is \\"allkeys-lru\\".*noeviction/);
    expect(warnings).toContain('IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"');
  });

  it('fails create() after connectTimeoutMs naming the redacted address, never the password', async () => {
    const lines: string[] = [];
    const logger = createLogger({}, { write: (l: string) => void lines.push(l) });
    const error = await RolloutQueue.create({ redisUrl: 'redis://:hunter2-pw@127.0.0.1:1', connectTimeoutMs: 300, logger }).catch((err: Error) => err);
    expect((error as Error).message).toContain('redis://:***@127.0.0.1:1');
    expect(`${(error as Error).message}${lines.join('')}`).not.toContain('hunter2-pw');
  });

  // Fresh-user report: REDIS_URL=…/99 ran in database 0 (ioredis only logs the refused SELECT).
  // RolloutWorker.create then also printed ioredis' "Unhandled error event" with a stack first.
  it('refuses create() and RolloutWorker.create() for a database the server does not have, naming it, and nothing else on stderr', async () => {
    const url = new URL(fx.url);
    url.pathname = '/99';
    const logger = createLogger({}, { write: () => true });
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const errors = await Promise.all([
        RolloutQueue.create({ redisUrl: url.toString(), logger }).catch((err: Error) => err),
        RolloutWorker.create({ redisUrl: url.toString(), logger }).catch((err: Error) => err),
      ]);
      for (const error of errors) expect((error as Error).message).toMatch(/has no database 99 \(it has 16: 0 to 15/);
      expect(printed.mock.calls.map((call) => call.join(' ')).join('\n')).not.toContain('Unhandled error event');
    } finally {
      printed.mockRestore();
    }
  });

  it('allows one live call per run on a RolloutQueue (rollout, mapRollouts, attach)', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const runId = fx.runId();
    const first = rq.mapRollouts(drafts(2, { delayMs: 50 }), { runId });
    const pending = first.next();
    const busy = `run "${runId}" is already being collected on this RolloutQueue (by a rollout(), mapRollouts() or attach() call not yet finished); await that call, or use another runId (one live call per run)`;
    await expect(rq.attach(runId).next()).rejects.toThrow(busy);
    await fx.worker(queue);
    expect((await pending).value).toMatchObject({ kind: 'ok' });
    await first.return();
    // Fresh-user report: two rollout() calls of one runId at once were told of "a live iterator" they never made.
    const single = fx.runId('single');
    const running = rq.rollout(draft({ id: 'a', delayMs: 200 }), { runId: single });
    await expect(rq.rollout(draft({ id: 'a', delayMs: 200 }), { runId: single })).rejects.toThrow(busy.replaceAll(runId, single));
    expect(await running).toMatchObject({ kind: 'ok' });
  });

  it('delivers by reconciliation alone when QueueEvents is off', async () => {
    const queue = fx.queueName();
    const rq: RolloutQueue = await fx.open(queue, { queueEvents: false, reconcileMs: 50 });
    await fx.worker(queue);
    const { items, error } = await collect(rq.mapRollouts(drafts(6), { runId: fx.runId() }));
    expect(error).toBeUndefined();
    expect(items).toHaveLength(6);
  });
});
