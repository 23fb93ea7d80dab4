import { describe, expect, it } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { DuplicateLeaseError, type RolloutDraft } from '../../../src/producer/index.js';
import * as packageRoot from '../../../src/index.js';
import type { Result } from '../../../src/spec/index.js';
import { TEST_PREFIX, collect, useProducerFixture } from '../../helpers/producer-fixture.js';
import { draft, drafts } from '../../helpers/rollout-drafts.js';
import { waitFor } from '../../helpers/wait-for.js';

const fx = useProducerFixture();

const leaseIds = (results: readonly Result[]): string[] => results.map((r) => r.leaseId).sort();

describe('re-submission', () => {
  // Fresh-user report: three drafts, two sharing task id "same", gave two Results; the
  // repeat was dropped with a log line only. A stream cannot be checked ahead: the repeat gets
  // its own caller Result.
  it('a streamed draft repeating an earlier lease id of the call gets its own caller Result (DuplicateLease) and no job', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { stopOnCaller: false });
    await fx.worker(queue);
    const runId = fx.runId();
    const list = [draft({ id: 'same', x: 1 }), draft({ id: 'same', x: 2 }), draft({ id: 'other' })];
    const stream = async function* (): AsyncGenerator<(typeof list)[number]> {
      yield* list;
    };
    const { items, error } = await collect(rq.mapRollouts(stream(), { runId }));
    expect(error).toBeUndefined();
    expect(items).toHaveLength(3);
    const repeat = items.find((r) => r.kind === 'caller');
    expect(repeat).toMatchObject({ taskId: 'same', error: { type: 'DuplicateLease' } });
    expect(repeat?.error?.message).toMatch(new RegExp(`draft #1 repeats lease ${runId}\\.same .*give each draft a distinct taskKey or task\\.id`));
    expect(leaseIds(items.filter((r) => r.kind === 'ok'))).toEqual([`${runId}.other`, `${runId}.same`]);
    expect(new Set(items.map((r) => r.leaseId)).size).toBe(3);
    expect(await fx.jobHashes(queue, runId)).toBe(2);
    expect((await rq.status(runId)).run).toMatchObject({ enqueued: 2, delivered: 3, status: 'completed', kinds: { ok: 2, caller: 1 } });
    // Resumed with the same stream: the refusal was answered, so nothing comes back.
    expect(await collect(rq.mapRollouts(stream(), { runId }))).toEqual({ items: [], error: undefined });
  });

  // Fresh-user report: [x, y, x, z] yielded only the repeat's caller Result, then stopped the
  // run with x and y run but not yielded and z never enqueued.
  it('an array with two drafts of one lease is refused before anything is enqueued (DuplicateLeaseError)', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const runId = fx.runId();
    const list = [draft({ id: 'x' }), draft({ id: 'y' }), draft({ id: 'x' }), draft({ id: 'z' })];
    expect(() => rq.mapRollouts(list, { runId })).toThrow(DuplicateLeaseError);
    expect(() => rq.mapRollouts(list, { runId })).toThrow(`drafts #0 and #2 name the same lease ${runId}.x (both by their task.id); give each draft a distinct taskKey or task.id; nothing was enqueued`);
    expect((await rq.status(runId)).run).toBeNull();
    // Fresh-user report: a draft with neither taskKey nor task.id (keyed by its position) was
    // said to repeat "the same taskKey or task.id".
    const positional = [draft({ id: 'a' }), draft({ id: 5 }), { ...draft({}), task: { noid: true } }, draft({ id: 'b' }), draft({ id: 'c' }), { ...draft({}), task: 'str' } as unknown as RolloutDraft];
    expect(() => rq.mapRollouts(positional, { runId })).toThrow(`drafts #1 and #5 name the same lease ${runId}.5 (#1 by its task.id, #5 by its position in the list (it has no taskKey or task.id)); give each draft a distinct taskKey or task.id; nothing was enqueued`);
  });

  it('re-submitting a finished run enqueues nothing, yields nothing again, keeps the stored spec', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const inspect = fx.inspect(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    expect((await collect(rq.mapRollouts([draft({ id: 't0', x: 1 })], { runId }))).items).toHaveLength(1);
    const again = await collect(rq.mapRollouts([draft({ id: 't0', x: 2 })], { runId }));
    expect(again).toEqual({ items: [], error: undefined });
    // Fresh-user report (helper-30): it said nothing; a changed draft was silently not run.
    expect(fx.logs.join('\n')).toContain(`run \\"${runId}\\": every one of this call's 1 draft named a lease the run delivered before, neither run nor yielded again (even if changed), so this call yields no Result`);
    expect((await inspect.getJob(`${runId}.t0`))?.data.task.x).toBe(1);
    expect((await rq.status(runId)).run).toMatchObject({ enqueued: 1, alreadyEnqueued: 1, delivered: 1, status: 'completed', kinds: { ok: 1 } });
  });
});

describe('resume after the coordinator went away', () => {
  it('break after half, close, resume with the same runId: every lease delivered exactly once', async () => {
    const queue = fx.queueName();
    await fx.worker(queue, { concurrency: 2 });
    const runId = fx.runId();
    const list = drafts(10, { delayMs: 20 });
    const first = await fx.open(queue, { maxInFlight: 3 });
    const got: Result[] = [];
    for await (const result of first.mapRollouts(list, { runId })) {
      got.push(result);
      if (got.length === 5) break;
    }
    await first.close();

    const second = await fx.open(queue);
    const rest = await collect(second.mapRollouts(list, { runId }));
    expect(rest.error).toBeUndefined();
    expect(rest.items).toHaveLength(5);
    expect(leaseIds([...got, ...rest.items])).toEqual(list.map((d) => `${runId}.${String(d.task.id)}`).sort());
    const record = (await second.status(runId)).run;
    expect(record).toMatchObject({ status: 'completed', enqueued: 10, delivered: 10, kinds: { ok: 10 } });
    expect(record?.alreadyEnqueued).toBeGreaterThanOrEqual(3);
  });

  it('close() while the consumer holds a Result (maxUnacknowledged 1): that one is delivered again, counted once', async () => {
    const queue = fx.queueName();
    await fx.worker(queue, { concurrency: 2 });
    const runId = fx.runId();
    const list = drafts(8, { delayMs: 10 });
    const first = await fx.open(queue, { maxUnacknowledged: 1 });
    const iterator = first.mapRollouts(list, { runId });
    const got: Result[] = [];
    for (let i = 0; i < 4; i++) got.push((await iterator.next()).value as Result);
    await first.close(); // the 4th was yielded but the consumer never came back for the 5th
    await expect(iterator.next()).rejects.toThrow('RolloutQueue is closed (state: closed); create a new one');

    const second = await fx.open(queue);
    const rest = await collect(second.mapRollouts(list, { runId }));
    expect(rest.error).toBeUndefined();
    expect(rest.items).toHaveLength(5);
    expect(rest.items.map((r) => r.leaseId)).toContain(got[3]?.leaseId);
    expect(new Set([...got, ...rest.items].map((r) => r.leaseId)).size).toBe(8);
    expect((await second.status(runId)).run).toMatchObject({ delivered: 8, kinds: { ok: 8 }, status: 'completed' });
  });

  it('Results taken but not yet acknowledged are delivered again after close(), at most maxUnacknowledged of them, each counted once', async () => {
    const queue = fx.queueName();
    const runId = fx.runId();
    const list = drafts(8);
    const first = await fx.open(queue, { maxUnacknowledged: 3 });
    const iterator = first.mapRollouts(list, { runId });
    // Every Result is ready before the first is taken: nothing forces an acknowledgement between them.
    const pending = iterator.next();
    await fx.worker(queue, { concurrency: 4 });
    const got: Result[] = [(await pending).value as Result];
    await waitFor(async () => (await fx.inspect(queue).getJobCounts('completed')).completed === 8, '8 completed jobs');
    for (let i = 0; i < 5; i++) got.push((await iterator.next()).value as Result);
    await first.close();
    await expect(iterator.next()).rejects.toThrow('RolloutQueue is closed (state: closed); create a new one');

    const second = await fx.open(queue);
    const rest = await collect(second.mapRollouts(list, { runId }));
    expect(rest.error).toBeUndefined();
    const again = rest.items.filter((r) => got.some((g) => g.leaseId === r.leaseId));
    // 6 taken: the one held at close() and those taken since the last acknowledgement come again.
    expect(again.length).toBeGreaterThan(0);
    expect(again.length).toBeLessThanOrEqual(3);
    expect(new Set([...got, ...rest.items].map((r) => r.leaseId)).size).toBe(8);
    expect((await second.status(runId)).run).toMatchObject({ delivered: 8, kinds: { ok: 8 }, status: 'completed' });
  });

  it('attach(runId) delivers Results that completed while no coordinator listened (reconciliation, not events)', async () => {
    const queue = fx.queueName();
    const inspect = fx.inspect(queue);
    const runId = fx.runId();
    const first = await fx.open(queue);
    // Handle the rejection at once: close() rejects it before any later await could.
    const pending = first.mapRollouts(drafts(6), { runId }).next().catch((err: unknown) => err);
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === 6, '6 waiting jobs');
    await first.close();
    expect(String(await pending)).toMatch(/RolloutQueue is closed \(state: clos(ing|ed)\); create a new one/);

    await fx.worker(queue);
    await waitFor(async () => (await inspect.getJobCounts('completed')).completed === 6, '6 completed jobs');
    await fx.redis.xtrim(inspect.toKey('events'), 'MAXLEN', 0); // and the event stream forgot them

    const second = await fx.open(queue, { queueEvents: false, reconcileMs: 60_000 }); // only the first pass can deliver
    const { items, error } = await collect(second.attach(runId));
    expect(error).toBeUndefined();
    expect(items).toHaveLength(6);
    expect((await second.status(runId)).run).toMatchObject({ status: 'completed', delivered: 6 });
    expect((await collect(second.attach(runId))).items).toEqual([]);
  });

  it('attach ends with an error naming how many specs were never enqueued', async () => {
    const queue = fx.queueName();
    const inspect = fx.inspect(queue);
    const runId = fx.runId();
    async function* stream(): AsyncGenerator<ReturnType<typeof draft>> {
      for (let i = 0; i < 10; i++) yield draft({ id: `s${i}` });
    }
    const first = await fx.open(queue, { maxInFlight: 2 });
    const pending = first.mapRollouts(stream(), { runId, specCount: 10 }).next().catch(() => undefined);
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === 2, '2 waiting jobs');
    await first.close();
    await pending;

    await fx.worker(queue);
    const second = await fx.open(queue);
    const { items, error } = await collect(second.attach(runId));
    expect(items).toHaveLength(2);
    expect((error as Error).message).toMatch(/8 specs were never enqueued.*mapRollouts again with the same runId/);
    // Fresh-user report (helper-30): attach threw a plain Error, and RunNotFoundError (which
    // purge threw) was not exported from the package, so `instanceof` could not tell it apart.
    const unknown = await collect(second.attach('never-ran'));
    expect(unknown.error).toBeInstanceOf(packageRoot.RunNotFoundError);
    expect((unknown.error as Error).message).toMatch(/no run "never-ran"/);
  });

  it('a failed job of a resumed run is still turned into its infrastructure Result', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const runId = fx.runId();
    const inspect = fx.inspect(queue);
    const first = await fx.open(queue);
    const pending = first.mapRollouts([draft({ id: 'f', fail: true })], { runId }).next().catch(() => undefined);
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === 1, 'the job');
    await first.close();
    await pending;
    await fx.worker(queue);
    await waitFor(async () => (await inspect.getJobCounts('failed')).failed === 1, 'the failure');
    const second = await fx.open(queue);
    const { items } = await collect(second.attach(runId));
    expect(items).toMatchObject([{ kind: 'infrastructure', error: { type: 'WorkerError' }, taskId: 'f' }]);
    expect(await fx.redis.hlen(keys.runQuarantined(runId))).toBe(0);
  });
});
