import { Queue } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { enqueuedAtOf, queueKeys, RUN_FIELDS } from '../../../src/lease/index.js';
import { CoordinatorLease } from '../../../src/producer/coordinator-lease.js';
import { PlacementQueues } from '../../../src/producer/placement-queues.js';
import { applyRetention } from '../../../src/producer/run-retention.js';
import { RunStore } from '../../../src/producer/run-store.js';
import { ResultDeliveredError } from '../../../src/producer/run-stopped-error.js';
import { TEST_PREFIX, useProducerFixture } from '../../helpers/producer-fixture.js';
import { draft } from '../../helpers/rollout-drafts.js';

// The round trips of one run: its start (one script takes the lease, makes the record and checks
// a new run's first batch), and its wrap-up: rollout() returns its Result at once; the
// acknowledgement, the run's completion mark, retention and coordinator lease release (its
// wrap-up) follow in the background, tracked by the queue.
const fx = useProducerFixture();

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * Holds calls of RunStore's `method` from the `from`-th one on (1-based) until `open()`;
 * `reached` resolves at the first call held.
 */
function gateRunStore(method: 'acknowledgeMany' | 'recordLeases', from = 1): { reached: Promise<void>; open: () => void } {
  let open!: () => void;
  let reach!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const original = RunStore.prototype[method] as (...args: unknown[]) => Promise<unknown>;
  let calls = 0;
  vi.spyOn(RunStore.prototype, method).mockImplementation(async function (this: RunStore, ...args: unknown[]) {
    if (++calls >= from) {
      reach();
      await gate;
    }
    return original.apply(this, args);
  } as never);
  return { reached, open };
}

/** Holds every RunStore.acknowledgeMany until `open()`; `reached` resolves at the first one. */
const gateAcknowledgement = (): { reached: Promise<void>; open: () => void } => gateRunStore('acknowledgeMany');

/** A turn of the event loop past pending I/O callbacks: what could settle by itself has. */
const aTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('wrap-up of a delivered run', () => {
  it('rollout() returns before its Result is acknowledged; the run is then acknowledged and marked completed in one script call, retained and its lease released', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue, { retainMs: 600_000 });
    await fx.worker(queue);
    const runId = fx.runId();
    const gate = gateAcknowledgement();
    const setStatus = vi.spyOn(RunStore.prototype, 'setStatus');

    const result = await rq.rollout(draft({ id: 'a' }), { runId });
    expect(result.kind).toBe('ok');
    await gate.reached;
    // Neither delivered nor completed yet: the wrap-up holds the lease meanwhile; settled() waits.
    let settled = false;
    const settling = rq.settled(runId).then(() => (settled = true));
    expect(await fx.redis.sismember(keys.runDelivered(runId), result.leaseId)).toBe(0);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('running');
    expect(await fx.redis.exists(keys.runCoordinator(runId))).toBe(1);
    expect(settled).toBe(false);

    gate.open();
    await settling;
    expect(await fx.redis.sismember(keys.runDelivered(runId), result.leaseId)).toBe(1);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.kind('ok'))).toBe('1');
    expect(setStatus).not.toHaveBeenCalled();
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('completed');
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.endedAt)).not.toBeNull();
    const ttl = await fx.redis.pttl(keys.run(runId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600_000);
    expect(await fx.redis.exists(keys.runCoordinator(runId))).toBe(0);
  });

  it('a Result whose acknowledgement failed after rollout() returned it is delivered again by the next session, counted once', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    // As if the process died before the acknowledgement reached Redis.
    vi.spyOn(RunStore.prototype, 'acknowledgeMany').mockRejectedValueOnce(new Error('simulated Redis failure'));
    const first = await rq.rollout(draft({ id: 'a' }), { runId });
    await rq.settled(runId);
    expect(fx.logs.some((line) => line.includes('acknowledge failed') && line.includes('simulated Redis failure'))).toBe(true);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('running');
    expect(await fx.redis.exists(keys.runCoordinator(runId))).toBe(0);

    const again = await rq.rollout(draft({ id: 'a' }), { runId });
    expect(again).toEqual(first);
    await rq.settled(runId);
    expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', enqueued: 1, delivered: 1, kinds: { ok: 1 } });
  });

  it('close() waits for a wrap-up in flight', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    const gate = gateAcknowledgement();
    const result = await rq.rollout(draft({ id: 'a' }), { runId });
    await gate.reached;

    let closed = false;
    const closing = rq.close().then(() => (closed = true));
    await aTurn();
    await aTurn();
    expect(closed).toBe(false);
    gate.open();
    await closing;
    expect(await fx.redis.sismember(keys.runDelivered(runId), result.leaseId)).toBe(1);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('completed');
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.endedAt)).not.toBeNull();
    expect(await fx.redis.exists(keys.runCoordinator(runId))).toBe(0);
  });

  it('status() and a new session of the same run come after the wrap-up', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    const acquire = vi.spyOn(CoordinatorLease, 'acquire');
    const result = await rq.rollout(draft({ id: 'a' }), { runId });
    // status() reads after it: no stale `running`.
    expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', delivered: 1 });
    await expect(rq.rollout(draft({ id: 'a' }), { runId })).rejects.toBeInstanceOf(ResultDeliveredError);
    // The second session found the lease free at its first attempt (it waited for the wrap-up, not the lease).
    expect(acquire).toHaveBeenCalledTimes(2);
    expect(fx.logs.some((line) => line.includes('another coordinator holds this run'))).toBe(false);
    expect(result.kind).toBe('ok');
  });

  it('a failed wrap-up is logged, and the next session of the run completes it', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    // The retention fails (its first step resolves the leases' queues); the reconciler, which
    // also resolves, is stopped once rollout() returned.
    let failing = false;
    const resolve = PlacementQueues.prototype.resolve;
    vi.spyOn(PlacementQueues.prototype, 'resolve').mockImplementation(async function (this: PlacementQueues, ...args) {
      if (failing) throw new Error('simulated Redis failure');
      return resolve.apply(this, args);
    });
    const returned = rq.rollout(draft({ id: 'a' }), { runId }).then(() => (failing = true));
    await returned;
    await rq.settled(runId);
    failing = false;
    expect(fx.logs.some((line) => line.includes('wrapping up a delivered run failed') && line.includes('simulated Redis failure'))).toBe(true);
    // Marked completed with its acknowledgement, not retained.
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('completed');
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.endedAt)).toBeNull();
    expect(await fx.redis.pttl(keys.run(runId))).toBe(-1);
    expect(await fx.redis.exists(keys.runCoordinator(runId))).toBe(0);

    // attach finds every Result delivered and records the end the first session could not.
    const again: unknown[] = [];
    for await (const result of rq.attach(runId)) again.push(result);
    expect(again).toEqual([]);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('completed');
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.endedAt)).not.toBeNull();
    expect(await fx.redis.pttl(keys.run(runId))).toBeGreaterThan(0);
  });
});

// Fresh-user report: Ctrl-C during the enqueue said "10 not yet" and the resume that followed
// said 9 were never enqueued: the run's record was read while its last batch was still being
// added and recorded (the session's end did not wait for the enqueuer).
it('a consumer that breaks out while a batch is being recorded: status() comes after that batch, the record counts every job', async () => {
  const queue = fx.queueName();
  const keys = queueKeys(TEST_PREFIX, queue);
  const rq = await fx.open(queue, { maxInFlight: 1 });
  await fx.worker(queue);
  const runId = fx.runId();
  // The second batch's record (its job is added by then) waits for the gate.
  const { reached, open } = gateRunStore('recordLeases', 2);
  for await (const result of rq.mapRollouts(Array.from({ length: 5 }, (_, i) => draft({ id: `t${i}` })), { runId })) {
    expect(result.kind).toBe('ok');
    await reached;
    break;
  }
  let read = false;
  const status = rq.status(runId).then((view) => ((read = true), view));
  // Round trips enough for a status that did not wait (its own reads are a few).
  for (let i = 0; i < 20; i++) await fx.redis.ping();
  expect(read).toBe(false);
  open();
  const { run } = await status;
  const jobs = (await fx.redis.keys(`${TEST_PREFIX}:${queue}:${runId}.*`)).filter((key) => !/:(lock|logs)$/.test(key));
  expect(jobs).toHaveLength(2);
  expect(run).toMatchObject({ enqueued: 2, delivered: 1 });
  expect(await fx.redis.zcard(keys.runLeases(runId))).toBe(2);
});

describe('session start', () => {
  it('takes the lease, reads the head and makes the run record of a draft list in one script call', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    // No reconciliation pass (it reads the head) within the test: events deliver the Result.
    const rq = await fx.open(queue, { reconcileMs: 60_000 });
    await fx.worker(queue);
    const runId = fx.runId();
    const ensure = vi.spyOn(RunStore.prototype, 'ensureRun');
    const readHead = vi.spyOn(RunStore.prototype, 'readHead');
    const check = vi.spyOn(RunStore.prototype, 'checkAndStamp');
    const add = vi.spyOn(Queue.prototype, 'add');
    const addBulk = vi.spyOn(Queue.prototype, 'addBulk');
    const result = await rq.rollout(draft({ id: 'a' }), { runId });
    expect(result.kind).toBe('ok');
    expect(ensure).not.toHaveBeenCalled();
    expect(readHead).not.toHaveBeenCalled();
    // The new run's first batch was checked and its enqueue clock stamped by that same script;
    // its one job went by Queue.add, carrying the time stamped.
    expect(check).not.toHaveBeenCalled();
    expect([add.mock.calls.length, addBulk.mock.calls.length]).toEqual([1, 0]);
    const [stampedAt] = JSON.parse((await fx.redis.hget(keys.runEnqueuedAt(runId), result.leaseId)) ?? 'null') as [number];
    expect(enqueuedAtOf(add.mock.calls[0]?.[2])).toBe(stampedAt);
    await rq.settled(runId);
    const record = await fx.redis.hgetall(keys.run(runId));
    expect(record).toMatchObject({ [RUN_FIELDS.status]: 'completed', [RUN_FIELDS.specCount]: '1', [RUN_FIELDS.enqueued]: '1' });
    expect(record[RUN_FIELDS.createdAt]).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(record[RUN_FIELDS.runAttemptId]).toBeTruthy();
    expect(await fx.redis.sismember(keys.runs(), runId)).toBe(1);
  });

  it('a streamed draft list still makes its run record on its first draft', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    const ensure = vi.spyOn(RunStore.prototype, 'ensureRun');
    async function* stream(): AsyncGenerator<ReturnType<typeof draft>> {
      yield draft({ id: 'a' });
      yield draft({ id: 'b' });
    }
    const kinds: string[] = [];
    for await (const result of rq.mapRollouts(stream(), { runId })) kinds.push(result.kind);
    expect(kinds).toEqual(['ok', 'ok']);
    expect(ensure).toHaveBeenCalledTimes(1);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.specCount)).toBe('2');
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('completed');
  });

  it('a completed run run again with new drafts is running again and no longer expires', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    await rq.rollout(draft({ id: 'a' }), { runId });
    await rq.settled(runId);
    expect(await fx.redis.pttl(keys.run(runId))).toBeGreaterThan(0);
    // The run exists: the opening script checks nothing, the enqueuer checks its drafts itself.
    const check = vi.spyOn(RunStore.prototype, 'checkAndStamp');
    const next = rq.mapRollouts([draft({ id: 'a' }), draft({ id: 'b', delayMs: 300 })], { runId });
    const first = await next.next();
    // Only b is new: it is yielded while the run is running again, its records persistent.
    expect(first.value).toMatchObject({ leaseId: `${runId}.b` });
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('running');
    expect(await fx.redis.pttl(keys.run(runId))).toBe(-1);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.endedAt)).toBeNull();
    expect((await next.next()).done).toBe(true);
    expect(await fx.redis.hget(keys.run(runId), RUN_FIELDS.status)).toBe('completed');
    expect(check).toHaveBeenCalledTimes(1);
    expect(check.mock.calls[0]?.[1].leaseIds).toEqual([`${runId}.a`, `${runId}.b`]);
  });
});

describe('applyRetention', () => {
  it('over several script calls (more than 500 leases) and for a run without leases: every key expires, the end is recorded once', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const bull = { toKey: (type: string) => `${TEST_PREFIX}:${queue}:${type}` };
    const runId = fx.runId();
    const leaseIds = Array.from({ length: 1203 }, (_, i) => `${runId}.t${i}`);
    const delivered = leaseIds.filter((_, i) => i % 2 === 0);
    const setup = fx.redis.multi().hset(keys.run(runId), RUN_FIELDS.status, 'completed').sadd(keys.runDelivered(runId), ...delivered);
    leaseIds.forEach((leaseId, i) => setup.zadd(keys.runLeases(runId), i, leaseId).hset(bull.toKey(leaseId), 'name', 'rollout').hset(keys.lease(leaseId), 'x', '1'));
    setup.zadd(bull.toKey('completed'), ...leaseIds.flatMap((leaseId, i) => [i, leaseId]));
    await setup.exec();

    await applyRetention(fx.redis, bull, keys, runId, 600_000);
    const ttls = await Promise.all([keys.run(runId), keys.runLeases(runId), keys.runDelivered(runId), ...leaseIds.flatMap((id) => [bull.toKey(id), keys.lease(id)])].map((key) => fx.redis.pttl(key)));
    expect(ttls.filter((ttl) => !(ttl > 0 && ttl <= 600_000))).toEqual([]);
    // Delivered leases left BullMQ's completed set; the others stay.
    expect(await fx.redis.zcard(bull.toKey('completed'))).toBe(leaseIds.length - delivered.length);
    expect(await fx.redis.hmget(keys.run(runId), RUN_FIELDS.endedAt, RUN_FIELDS.retainMs)).toEqual([expect.stringMatching(/^\d{13}$/), '600000']);

    const empty = fx.runId();
    await fx.redis.hset(keys.run(empty), RUN_FIELDS.status, 'completed');
    await applyRetention(fx.redis, bull, keys, empty, 600_000);
    expect(await fx.redis.hget(keys.run(empty), RUN_FIELDS.endedAt)).toMatch(/^\d{13}$/);
    expect(await fx.redis.pttl(keys.run(empty))).toBeGreaterThan(0);
  });
});
