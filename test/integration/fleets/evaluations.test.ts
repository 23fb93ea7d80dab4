import { describe, expect, it } from 'vitest';
import { placementQueueName, queueKeys } from '../../../src/lease/index.js';
import { evaluationHash } from '../../../src/producer/evaluation-cache.js';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import { parseRolloutSpec } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { all, fleetFixture } from './fleet-fixture.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Evaluations: queues of their own served at --eval-concurrency, and a cache by content hash.
const fx = fleetFixture();
const { workers, closers, silent } = fx;

const evaluation = (id: string, task: Record<string, unknown> = {}): RolloutDraft => ({
  rendered: 'candidate-v1', task: { id, ...task }, run: fixture('echo'), reward: fixture('constant'), class: 'evaluation',
});

describe('evaluations', () => {
  it('keep running at their own concurrency while rollouts saturate theirs', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    workers.push(await startWorkerProcess(raw.workerOptions({ name: 'mixed', concurrency: 1, evalConcurrency: 2, placementPollMs: 100 })));
    const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: silent });
    closers.push(() => rq.close());
    const slow: RolloutDraft[] = ['r1', 'r2'].map((id) => ({ rendered: 'x', task: { id, delayMs: 60_000 }, run: fixture('echo'), reward: fixture('constant') }));
    const rollouts = rq.mapRollouts(slow, { runId: 'saturate' });
    const pending = rollouts.next();
    pending.catch(() => undefined);
    await waitFor(async () => (await raw.queue.getActiveCount()) === 1, 'the rollout slot to be busy', 20_000);
    const evals = await all(rq.mapRollouts(['e1', 'e2', 'e3', 'e4'].map((id) => evaluation(id, { delayMs: 300 })), { runId: 'evals' }));
    expect(evals.map((r) => [r.taskId, r.kind, r.worker]).sort()).toEqual([['e1', 'ok', 'mixed'], ['e2', 'ok', 'mixed'], ['e3', 'ok', 'mixed'], ['e4', 'ok', 'mixed']]);
    // The rollouts still hold their one slot and the second waits: evaluations never queued behind them.
    expect(await raw.queue.getActiveCount()).toBe(1);
    expect(await raw.queue.getJobCountByTypes('waiting', 'prioritized')).toBe(1);
    // Evaluations ran in their own queue, two at a time: their runs overlapped.
    const spans = evals.map((r) => [Date.parse(r.finishedAt) - (r.runMs ?? 0), Date.parse(r.finishedAt)] as const).sort((a, b) => a[0] - b[0]);
    expect(spans.some(([start], i) => i > 0 && start < (spans[i - 1]?.[1] ?? 0))).toBe(true);
    const evalQueue = new RawQueue(fx.redis.url, placementQueueName(raw.name, {}, 'evaluation'));
    closers.push(() => evalQueue.close());
    for (const id of ['e1', 'e2', 'e3', 'e4']) expect(await evalQueue.queue.getJob(`evals.${id}`)).toBeDefined();
    await rq.cancel('saturate');
    await pending.catch(() => undefined);
  });

  it('a repeated evaluation is answered from the cache: cached true, no worker, no cost, no job', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    workers.push(await startWorkerProcess(raw.workerOptions({ name: 'evaluator', placementPollMs: 100 })));
    const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: silent });
    closers.push(() => rq.close());
    const [first] = await all(rq.mapRollouts([evaluation('q1')], { runId: 'eval-a' }));
    expect(first).toMatchObject({ kind: 'ok', worker: 'evaluator', reward: 1 });
    expect(first?.cached).toBeUndefined();
    // Same content, another run (and keys in another order): a hit. A changed task is not.
    const again = await all(rq.mapRollouts([
      { class: 'evaluation', reward: fixture('constant'), run: fixture('echo'), task: { id: 'q1' }, rendered: 'candidate-v1' },
      evaluation('q2'),
    ], { runId: 'eval-b' }));
    const byTask = new Map(again.map((r) => [r.taskId, r]));
    expect(byTask.get('q1')).toMatchObject({ leaseId: 'eval-b.q1', runId: 'eval-b', kind: 'ok', reward: 1, cached: true, worker: null, cost: [], output: first?.output });
    expect(byTask.get('q2')).toMatchObject({ kind: 'ok', worker: 'evaluator' });
    expect(byTask.get('q2')?.cached).toBeUndefined();
    const evalQueue = new RawQueue(fx.redis.url, placementQueueName(raw.name, {}, 'evaluation'));
    closers.push(() => evalQueue.close());
    expect(await evalQueue.queue.getJob('eval-b.q1')).toBeUndefined();
    expect(await evalQueue.queue.getJob('eval-b.q2')).toBeDefined();
    expect((await rq.status('eval-b')).run).toMatchObject({ status: 'completed' });
  });

  // Fresh-user report: an evaluation whose coordinator was killed and whose Result `resume`
  // delivered never entered the cache, so the next identical run ran and paid for it again.
  it('an evaluation delivered by a later session of its run (attach) is cached too', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    workers.push(await startWorkerProcess(raw.workerOptions({ name: 'evaluator', placementPollMs: 100 })));
    const evalQueue = new RawQueue(fx.redis.url, placementQueueName(raw.name, {}, 'evaluation'));
    closers.push(() => evalQueue.close());
    const first = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: silent });
    const results = first.mapRollouts([evaluation('s1', { delayMs: 1500 })], { runId: 'eval-crashed' });
    const pending = results.next();
    pending.catch(() => undefined);
    await waitFor(async () => (await evalQueue.queue.getActiveCount()) === 1, 'the evaluation to run', 20_000);
    // The coordinator goes away with the evaluation running; nothing of it was delivered.
    await first.close();
    await pending.catch(() => undefined);

    const second = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: silent });
    closers.push(() => second.close());
    const [delivered] = await all(second.attach('eval-crashed'));
    expect(delivered).toMatchObject({ leaseId: 'eval-crashed.s1', kind: 'ok', worker: 'evaluator' });
    // The cache is written after the delivery, without holding it up.
    const cacheKey = queueKeys(TEST_PREFIX, raw.name).evalCache(evaluationHash(parseRolloutSpec({ ...evaluation('s1', { delayMs: 1500 }), v: 1, runId: 'r', leaseId: 'r.s1', runAttemptId: 'a' }).data!));
    await waitFor(async () => (await raw.redis.exists(cacheKey)) === 1, 'the evaluation in the cache', 20_000);
    const [again] = await all(second.mapRollouts([evaluation('s1', { delayMs: 1500 })], { runId: 'eval-again' }));
    expect(again).toMatchObject({ leaseId: 'eval-again.s1', kind: 'ok', cached: true, worker: null, output: delivered?.output });
  });
});
