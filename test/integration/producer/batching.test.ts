import { Queue } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { MAX_BATCH } from '../../../src/producer/draft-enqueuer.js';
import { RunStoppedError, type RolloutDraft } from '../../../src/producer/index.js';
import { RunStore } from '../../../src/producer/run-store.js';
import type { Result } from '../../../src/spec/index.js';
import { ProducerFixture, TEST_PREFIX, collect } from '../../helpers/producer-fixture.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { draft, drafts } from '../../helpers/rollout-drafts.js';
import { waitFor } from '../../helpers/wait-for.js';

let redis: TestRedis;
let fx: ProducerFixture;

beforeAll(async () => {
  // Private: INFO commandstats counts the whole server, so no other test file may share it.
  redis = await startRedis({ private: true });
  fx = new ProducerFixture(redis.url);
});
afterEach(async () => {
  vi.restoreAllMocks();
  await fx.cleanup();
});
afterAll(async () => {
  await fx.end();
  await redis.stop();
});

/** Calls per command since the server started, from INFO commandstats. */
async function commandCalls(): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const match of (await fx.redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1] as string, Number(match[2]));
  return calls;
}

/** Sizes of every `Queue.addBulk` call (and a count of single `Queue.add` calls) in this test. */
function spyOnAdds(): { bulks: number[]; singles: () => number } {
  const bulks: number[] = [];
  const addBulk = Queue.prototype.addBulk;
  vi.spyOn(Queue.prototype, 'addBulk').mockImplementation(function (this: Queue, jobs) {
    bulks.push(jobs.length);
    return addBulk.call(this, jobs);
  });
  const add = vi.spyOn(Queue.prototype, 'add');
  return { bulks, singles: () => add.mock.calls.length };
}

const leaseIds = (runId: string, list: readonly RolloutDraft[]): string[] => list.map((d) => `${runId}.${String(d.task.id)}`).sort();

describe('batched enqueuing', () => {
  it('checks, adds and records leases per batch: script calls are far below the number of drafts', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue, { maxInFlight: 1000, reconcileMs: 60_000 });
    const inspect = fx.inspect(queue);
    const adds = spyOnAdds();
    const record = vi.spyOn(RunStore.prototype, 'recordLeases');
    const check = vi.spyOn(RunStore.prototype, 'checkAndStamp');
    const opener = vi.spyOn(RunStore.prototype, 'opener');
    const stamp = vi.spyOn(RunStore.prototype, 'stampEnqueued');
    const count = 3 * MAX_BATCH + 50;
    const runId = fx.runId();
    const before = await commandCalls();
    // No worker: every job stays waiting, so only enqueuing talks to Redis.
    const pending = rq.mapRollouts(drafts(count), { runId }).next().catch(() => undefined);
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === count, `${count} waiting jobs`);
    await waitFor(async () => (await fx.redis.zcard(keys.runLeases(runId))) === count, `${count} recorded leases`);
    const after = await commandCalls();

    const batches = Math.ceil(count / MAX_BATCH);
    const evals = (after.get('eval') ?? 0) - (before.get('eval') ?? 0);
    // Our scripts go by EVAL: one lease check and one record per batch (the first batch of a new
    // run is checked by the script that opens its session). BullMQ's go by EVALSHA, except
    // ioredis's first use of a script on a connection (hence the slack of 2).
    expect(record).toHaveBeenCalledTimes(batches);
    expect(opener).toHaveBeenCalledTimes(1);
    expect(opener.mock.calls[0]?.[2]?.leaseIds).toHaveLength(MAX_BATCH);
    expect(check).toHaveBeenCalledTimes(batches - 1);
    // The enqueue clock rides with the check: no script of its own for rollouts.
    expect(stamp).not.toHaveBeenCalled();
    expect(evals).toBeLessThanOrEqual(2 * batches + 2);
    expect(evals).toBeLessThan(count / 20);
    expect(adds.singles()).toBe(0);
    expect(adds.bulks).toEqual([MAX_BATCH, MAX_BATCH, MAX_BATCH, 50]);
    expect((await rq.status(runId)).run).toMatchObject({ enqueued: count, alreadyEnqueued: 0 });
    // Scores are the drafts' positions, as when leases were recorded one at a time.
    expect(await fx.redis.zscore(keys.runLeases(runId), `${runId}.t${count - 1}`)).toBe(String(count - 1));
    await rq.close();
    await pending;
  });

  it('never takes more drafts than there are free slots under maxInFlight', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { maxInFlight: 7 });
    const adds = spyOnAdds();
    await fx.worker(queue, { concurrency: 3 });
    const list = drafts(40, { delayMs: 5 });
    const runId = fx.runId();
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));
    expect(error).toBeUndefined();
    expect(items.map((r) => r.leaseId).sort()).toEqual(leaseIds(runId, list));
    expect(adds.bulks[0]).toBe(7);
    expect(Math.max(...adds.bulks)).toBeLessThanOrEqual(7);
    // Refills of one job go by Queue.add.
    expect(adds.bulks.reduce((a, b) => a + b, 0) + adds.singles()).toBe(40);
  });

  it('does not wait for drafts a slow async source does not have yet, and loses none it had', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue, { concurrency: 2 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    async function* source(): AsyncGenerator<RolloutDraft> {
      for (let i = 0; i < 3; i++) yield draft({ id: `t${i}` });
      await gate; // the rest only comes once the first three were answered
      for (let i = 3; i < 9; i++) {
        if (i % 2 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        yield draft({ id: `t${i}` });
      }
    }
    const runId = fx.runId();
    let answered = 0;
    const { items, error } = await collect(rq.mapRollouts(source(), { runId }), () => {
      if (++answered === 3) release();
    });
    expect(error).toBeUndefined();
    expect(items.map((r) => r.leaseId).sort()).toEqual(leaseIds(runId, drafts(9)));
    expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', specCount: 9, enqueued: 9, delivered: 9 });
  }, 30_000);

  it('a refused draft in the middle of a batch: the drafts before it are enqueued, none after it', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    const inspect = fx.inspect(queue);
    const runId = fx.runId();
    const list = drafts(50);
    list[20] = { ...draft({ id: 't20' }), run: { $ref: 'no-colon-here', config: {} } };
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));
    expect(error).toBeInstanceOf(RunStoppedError);
    expect((error as RunStoppedError).leaseId).toBe(`${runId}.t20`);
    expect(items.map((r) => r.leaseId)).toEqual([`${runId}.t20`]);
    const recorded = await fx.redis.zrange(keys.runLeases(runId), 0, -1);
    expect(recorded).toEqual(list.slice(0, 20).map((d) => `${runId}.${String(d.task.id)}`));
    for (const id of ['t21', 't35', 't49']) expect(await inspect.getJob(`${runId}.${id}`)).toBeUndefined();
    expect((await inspect.getJobCountByTypes('waiting', 'prioritized'))).toBe(0); // the stop removed t0…t19
    expect((await rq.status(runId)).run).toMatchObject({ status: 'stopped', enqueued: 20, kinds: { caller: 1 } });
  });

  it('without stopOnCaller, refused drafts inside a batch are answered and the rest still run', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { stopOnCaller: false });
    await fx.worker(queue);
    const runId = fx.runId();
    const list = drafts(12);
    for (const i of [3, 7]) list[i] = { ...draft({ id: `t${i}` }), run: { $ref: 'no-colon-here', config: {} } };
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));
    expect(error).toBeUndefined();
    expect(items.map((r) => r.leaseId).sort()).toEqual(leaseIds(runId, list));
    expect(items.filter((r) => r.kind === 'caller').map((r) => r.taskId).sort()).toEqual(['t3', 't7']);
    expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', enqueued: 10, delivered: 12, kinds: { ok: 10, caller: 2 } });
  });

  it('a coordinator that died between addBulk and recording the leases resumes cleanly', async () => {
    const queue = fx.queueName();
    const inspect = fx.inspect(queue);
    await fx.worker(queue, { concurrency: 4 });
    const runId = fx.runId();
    const list = drafts(30);
    // The first batch's jobs land, then recording their leases fails: as if killed in between.
    const record = vi.spyOn(RunStore.prototype, 'recordLeases').mockRejectedValueOnce(new Error('coordinator killed here'));
    const first = await fx.open(queue, { maxInFlight: 10 });
    const failed = await collect(first.mapRollouts(list, { runId }));
    expect(String(failed.error)).toMatch(/enqueuing failed: coordinator killed here; the run is resumable/);
    expect(failed.items).toEqual([]);
    await first.close();
    expect(record).toHaveBeenCalledTimes(1);
    const counts = await inspect.getJobCounts('waiting', 'prioritized', 'active', 'completed');
    expect((counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.active ?? 0) + (counts.completed ?? 0)).toBe(10); // added, not recorded
    record.mockRestore();

    const second = await fx.open(queue, { maxInFlight: 10 });
    const { items, error } = await collect(second.mapRollouts(list, { runId }));
    expect(error).toBeUndefined();
    const perLease = new Map<string, number>();
    for (const r of items as Result[]) perLease.set(r.leaseId, (perLease.get(r.leaseId) ?? 0) + 1);
    expect([...perLease.keys()].sort()).toEqual(leaseIds(runId, list));
    expect([...perLease.values()].every((n) => n === 1)).toBe(true);
    expect((await second.status(runId)).run).toMatchObject({ status: 'completed', enqueued: 30, alreadyEnqueued: 0, delivered: 30, kinds: { ok: 30 } });
    // Delivered jobs leave BullMQ's completed set at once (retention); their hashes stay until they expire.
    expect(await fx.jobHashes(queue, runId)).toBe(30);
  });
});
