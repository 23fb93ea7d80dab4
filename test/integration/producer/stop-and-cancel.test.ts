import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { AbortError, RunNotFoundError, RunStoppedError } from '../../../src/producer/index.js';
import { CoordinatorLease } from '../../../src/producer/coordinator-lease.js';
import { DeliveryFence } from '../../../src/producer/delivery-fence.js';
import { PlacementQueues } from '../../../src/producer/placement-queues.js';
import { RunStore } from '../../../src/producer/run-store.js';
import { RunEnding } from '../../../src/producer/run-ending.js';
import type { Result } from '../../../src/spec/index.js';
import { TEST_PREFIX, collect, useProducerFixture } from '../../helpers/producer-fixture.js';
import { draft, drafts } from '../../helpers/rollout-drafts.js';
import { waitFor } from '../../helpers/wait-for.js';

const fx = useProducerFixture();

/** Resolves once `count` calls were made to the returned hook. */
function countdown(count: number): { hook: () => void; reached: Promise<void> } {
  let resolve!: () => void;
  const reached = new Promise<void>((r) => (resolve = r));
  let seen = 0;
  return { hook: () => void (++seen === count && resolve()), reached };
}

/**
 * A run of `count` 30 s drafts whose first two rollouts run (worker concurrency 2), delivered by
 * `coordinator` (reconciling every 100 ms); `rq` is a second RolloutQueue on the same queue.
 */
async function twoRunning(count: number) {
  const queue = fx.queueName();
  const coordinator = await fx.open(queue, { reconcileMs: 100 });
  const rq = await fx.open(queue);
  const twoStarted = countdown(2);
  await fx.worker(queue, { concurrency: 2, onStart: twoStarted.hook });
  const runId = fx.runId();
  const run = collect(coordinator.mapRollouts(drafts(count, { delayMs: 30_000 }), { runId }));
  await twoStarted.reached;
  return { queue, rq, runId, run };
}

describe('stop on a caller Result', () => {
  it('refuses an invalid draft: caller Result, RunStoppedError, nothing after it enqueued', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const inspect = fx.inspect(queue);
    await fx.worker(queue);
    const runId = fx.runId();
    const list = [draft({ id: 't0' }), { ...draft({ id: 't1' }), run: { $ref: 'no-colon-here', config: {} } }, ...drafts(5).slice(2)];
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));

    expect(error).toBeInstanceOf(RunStoppedError);
    const stopped = error as RunStoppedError;
    expect(stopped.name).toBe('RunStoppedError');
    expect(stopped.leaseId).toBe(`${runId}.t1`);
    expect(stopped.message).toContain(`${runId}.t1`);
    expect(stopped.message).toContain('InvalidSpec');
    const refused = items.find((r) => r.leaseId === `${runId}.t1`);
    expect(refused).toMatchObject({ kind: 'caller', error: { type: 'InvalidSpec' }, attempts: 0 });
    expect(refused?.error?.message).toMatch(/spec field "run\.\$ref".*module:export/);
    expect(stopped.result).toEqual(refused);

    for (const id of ['t1', 't2', 't3', 't4']) expect(await inspect.getJob(`${runId}.${id}`)).toBeUndefined();
    const record = (await rq.status(runId)).run;
    expect(record).toMatchObject({ status: 'stopped', enqueued: 1, kinds: { caller: 1 } });
    expect(record?.stopReason).toContain(`${runId}.t1`);
  });

  it('names the field and the limit for a bad field or an oversized spec, without values', async () => {
    const rq = await fx.open(fx.queueName(), { stopOnCaller: false, maxSpecBytes: 4096, maxTaskBytes: 1024 });
    const list = [
      draft({ id: 'big' }, { rendered: 'x'.repeat(8192) }),
      draft({ id: 'bigtask', text: 'y'.repeat(2000) }),
      draft({ id: 'field' }, { placement: { gpu: 12345 as unknown as string } }),
      { ...draft({ id: 'env' }), sandbox: { env: ['lower-case-value'] } },
    ];
    const { items } = await collect(rq.mapRollouts(list, { runId: fx.runId() }));
    const byTask = Object.fromEntries(items.map((r) => [r.taskId, r.error?.message ?? ''])) as Record<string, string>;
    expect(byTask.big).toMatch(/the spec is \d+ bytes as JSON, over maxSpecBytes 4096/);
    expect(byTask.bigtask).toMatch(/the task is \d+ bytes as JSON, over maxTaskBytes 1024/);
    expect(byTask.bigtask).not.toContain('yyyy');
    expect(byTask.field).toMatch(/spec field "placement\.gpu"/);
    expect(byTask.field).not.toContain('12345');
    expect(byTask.env).toMatch(/spec field "sandbox\.env\[0\]".*NAMES/);
    expect(byTask.env).not.toContain('lower-case-value');
  });

  // Fresh-user report: the loop sometimes ended normally after the caller Result (t-2 caller,
  // then t-1 and t-3 ok, "loop ended normally after 4 results for 5 drafts"), the run stopped in
  // Redis and one draft without a Result. The iterator had read the run's stop before awaiting an
  // acknowledgement; the caller Result that arrived meanwhile was yielded as an ordinary one.
  // Here the first acknowledgement waits until the caller Result has stopped the run.
  it('throws RunStoppedError right after a caller Result that arrived while an acknowledgement was in flight', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    await fx.worker(queue, { concurrency: 4 });
    const runId = fx.runId();
    let stopped!: () => void;
    const stopCalled = new Promise<void>((resolve) => (stopped = resolve));
    const stopAt = vi.spyOn(RunEnding.prototype, 'stopAt');
    stopAt.mockImplementation(function (this: RunEnding, result: Result) {
      stopAt.mockRestore();
      RunEnding.prototype.stopAt.call(this, result);
      stopped();
    });
    const acknowledge = vi.spyOn(DeliveryFence.prototype, 'acknowledge');
    acknowledge.mockImplementationOnce(async function (this: DeliveryFence, ...args: Parameters<DeliveryFence['acknowledge']>) {
      await stopCalled;
      acknowledge.mockRestore();
      return DeliveryFence.prototype.acknowledge.apply(this, args);
    });
    try {
      const list = [draft({ id: 't0' }), draft({ id: 't1', kind: 'caller', delayMs: 300 }), draft({ id: 't2', delayMs: 1500 })];
      const { items, error } = await collect(rq.mapRollouts(list, { runId }));
      expect(items.map((r) => r.taskId)).toEqual(['t0', 't1']);
      expect(error).toBeInstanceOf(RunStoppedError);
      expect((error as RunStoppedError).leaseId).toBe(`${runId}.t1`);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('stops at a caller Result from a worker: waiting jobs removed, nothing more enqueued', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { maxInFlight: 3 });
    const inspect = fx.inspect(queue);
    await fx.worker(queue, { concurrency: 1 });
    const runId = fx.runId();
    const list = [draft({ id: 't0', kind: 'caller', errorType: 'RefNotAllowed' }), ...drafts(10, { delayMs: 300 }).slice(1)];
    const { items, error } = await collect(rq.mapRollouts(list, { runId }));

    expect(error).toBeInstanceOf(RunStoppedError);
    expect((error as RunStoppedError).leaseId).toBe(`${runId}.t0`);
    expect((error as RunStoppedError).result?.error?.type).toBe('RefNotAllowed');
    expect(items.at(-1)?.leaseId).toBe(`${runId}.t0`);
    const counts = await inspect.getJobCounts('waiting', 'prioritized', 'active', 'completed');
    expect((counts.waiting ?? 0) + (counts.prioritized ?? 0)).toBe(0);
    expect((counts.active ?? 0) + (counts.completed ?? 0)).toBeLessThanOrEqual(3);
    expect(await inspect.getJob(`${runId}.t9`)).toBeUndefined();
    expect((await rq.status(runId)).run?.status).toBe('stopped');
  });
});

describe('secrets', () => {
  it('refuses a spec holding the value of a secret-looking or sandbox.env variable, naming only the variable', async () => {
    const secret = 's3cr3t-value-123';
    const url = 'https://user:hunter22@svc.internal:9000';
    process.env.TEST_API_KEY = secret;
    process.env.TEST_SERVICE_URL = url;
    try {
      const queue = fx.queueName();
      const rq = await fx.open(queue, { stopOnCaller: false });
      const inspect = fx.inspect(queue);
      const runId = fx.runId();
      const list = [
        draft({ id: 'key', prompt: `use ${secret} please` }),
        draft({ id: 'named', endpoint: url }, { sandbox: { env: ['TEST_SERVICE_URL'] } }),
        draft({ id: 'nested' }, { run: { $ref: 'rollout-queue/runners:codeRunner', config: { headers: { auth: secret } } } }),
      ];
      const { items, error } = await collect(rq.mapRollouts(list, { runId }));
      expect(error).toBeUndefined();
      const byTask = Object.fromEntries(items.map((r) => [r.taskId, r])) as Record<string, Result>;
      expect(byTask.key).toMatchObject({ kind: 'caller', error: { type: 'SecretInSpec' } });
      expect(byTask.key?.error?.message).toContain('TEST_API_KEY');
      expect(byTask.named?.error?.message).toContain('TEST_SERVICE_URL');
      expect(byTask.nested?.error?.message).toContain('TEST_API_KEY');
      const everything = JSON.stringify(items) + fx.logs.join('') + JSON.stringify(await rq.status(runId));
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain('hunter22');
      expect((await inspect.getJobCountByTypes('waiting', 'prioritized'))).toBe(0);
    } finally {
      delete process.env.TEST_API_KEY;
      delete process.env.TEST_SERVICE_URL;
    }
  });
});

describe('cancellation', () => {
  it('aborting the signal throws AbortError, removes waiting jobs, publishes the cancel, stops active rollouts', async () => {
    const queue = fx.queueName();
    const keys = queueKeys(TEST_PREFIX, queue);
    const rq = await fx.open(queue, { maxInFlight: 6 });
    const inspect = fx.inspect(queue);
    const twoStarted = countdown(2);
    const worker = await fx.worker(queue, { concurrency: 2, onStart: twoStarted.hook });
    const subscriber = new Redis(fx.url);
    try {
      const heard = new Promise<string>((resolve) => subscriber.on('message', (_channel: string, message: string) => resolve(message)));
      await subscriber.subscribe(keys.cancelChannel());
      const runId = fx.runId();
      const controller = new AbortController();
      const run = collect(rq.mapRollouts(drafts(10, { delayMs: 30_000 }), { runId, signal: controller.signal }));
      await twoStarted.reached;
      controller.abort(new Error('operator pressed ^C'));
      const { items, error } = await run;

      expect(items).toEqual([]);
      expect(error).toBeInstanceOf(AbortError);
      expect((error as Error).name).toBe('AbortError');
      expect((error as Error).message).toContain('operator pressed ^C');
      expect(await heard).toBe(runId);
      expect((await inspect.getJobCountByTypes('waiting', 'prioritized'))).toBe(0);
      expect((await rq.status(runId)).run?.status).toBe('cancelled');

      // The two active rollouts end with caller "Cancelled" Results, still deliverable to attach.
      const later = await collect(rq.attach(runId));
      expect(later.items.map((r) => r.error?.type)).toEqual(['Cancelled', 'Cancelled']);
      expect(later.error).toBeInstanceOf(RunStoppedError);
      expect((later.error as Error).message).toMatch(/was cancelled earlier/);
      expect(worker.cancelled).toHaveLength(2);
    } finally {
      await subscriber.quit();
    }
  });

  it('cancel(runId) from another RolloutQueue ends a live iterator with AbortError', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { reconcileMs: 100 });
    const cli = await fx.open(queue);
    const started = countdown(1);
    await fx.worker(queue, { concurrency: 1, onStart: started.hook });
    const runId = fx.runId();
    const inspect = fx.inspect(queue);
    const run = collect(rq.mapRollouts(drafts(4, { delayMs: 30_000 }), { runId }));
    await started.reached;
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === 3);
    const outcome = await cli.cancel(runId, 'cancelled from the CLI');
    expect(outcome.removed).toHaveLength(3);
    expect(outcome.workersNotified).toBeGreaterThanOrEqual(1);
    const { error } = await run;
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).message).toContain('cancelled from the CLI');
    expect((await inspect.getJobCountByTypes('waiting', 'prioritized'))).toBe(0);
    await expect(cli.cancel('no-such-run')).rejects.toThrow(/no run "no-such-run"/);
    await expect(cli.cancel('no-such-run')).rejects.toBeInstanceOf(RunNotFoundError);
  });

  // CI under load (gateway runs API): the gateway's pump, whose session ended on the cancel,
  // attached to list the running rollouts' Results; `cancel()` then told that opening session the
  // run was cancelled, and it ended with AbortError before the second Cancelled Result.
  it('cancel(runId) on a RolloutQueue whose attach of the run is still opening: the attach lists the running Results, then ends as an ended run', async () => {
    const { rq, runId, run } = await twoRunning(4);
    // The attach waits for the run's coordinator lease, which the live iterator holds.
    const acquiring = countdown(1);
    const acquire = CoordinatorLease.acquire.bind(CoordinatorLease);
    const spy = vi.spyOn(CoordinatorLease, 'acquire').mockImplementation((...args: Parameters<typeof acquire>) => {
      acquiring.hook();
      return acquire(...args);
    });
    try {
      const drain = collect(rq.attach(runId));
      await acquiring.reached;
      await rq.cancel(runId, 'cancelled while an attach opened');
      const live = await run;
      expect(live.error).toBeInstanceOf(AbortError);
      const { items, error } = await drain;
      // Each Result once: what the live iterator took before it ended, the attach does not list again.
      expect([...live.items, ...items].map((r) => [r.kind, r.error?.type])).toEqual([['caller', 'Cancelled'], ['caller', 'Cancelled']]);
      expect(error).toBeInstanceOf(RunStoppedError);
      expect((error as Error).message).toMatch(/was cancelled earlier \(cancelled while an attach opened\)/);
    } finally {
      spy.mockRestore();
    }
  });

  // CI under load (gateway runs API): the drain's attach tracked the cancelled run's running
  // leases, and a Cancelled Result that arrived while it still removed the waiting jobs was taken
  // as a new caller stop: the attach ended with AbortError, one Result unlisted.
  it('attach of a cancelled run lists a Cancelled Result that arrives while it is resuming, then ends as an ended run', async () => {
    const { queue, rq, runId, run } = await twoRunning(3);
    const inspect = fx.inspect(queue);
    // Cancelled as `cancel` does, the workers told only once the attach is resuming.
    const store = new RunStore(fx.redis, queueKeys(TEST_PREFIX, queue));
    await store.setStatus(runId, 'cancelled', ['running'], 'cancelled mid-resume');
    expect((await run).error).toBeInstanceOf(AbortError);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const resuming = countdown(1);
    const known = PlacementQueues.prototype.knownQueueNames;
    const spy = vi.spyOn(PlacementQueues.prototype, 'knownQueueNames').mockImplementation(async function (this: PlacementQueues) {
      resuming.hook();
      await released;
      return known.call(this);
    });
    try {
      const drain = collect(rq.attach(runId));
      await resuming.reached;
      await store.publishCancel(runId);
      await waitFor(async () => (await inspect.getJobCountByTypes('completed', 'failed')) === 2, 'the two running rollouts answering Cancelled');
      release();
      const { items, error } = await drain;
      expect(items.map((r) => [r.kind, r.error?.type])).toEqual([['caller', 'Cancelled'], ['caller', 'Cancelled']]);
      expect(error).toBeInstanceOf(RunStoppedError);
      expect((error as Error).message).toMatch(/was cancelled earlier \(cancelled mid-resume\)/);
    } finally {
      release();
      spy.mockRestore();
    }
  });
});
