import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { queueDispatch } from '../../../src/harness/coordinator/index.js';
import { fixture, makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Issue 28 item 1 through a real worker: the task the run side receives (a codeRunner program's
// stdin, a run function's `task`, a Dispatch's scenario) holds no key the reward scores
// against; the reward receives the whole task; `goldVisibleToRun` is the one way to hand it over.
let redis: TestRedis;
let q: RawQueue;
let worker: WorkerProcess;
beforeAll(async () => {
  redis = await startRedis();
  q = new RawQueue(redis.url);
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 4 }));
});
afterAll(async () => {
  worker.signal('SIGTERM');
  expect((await worker.exited()).code).toBe(0);
  await q.close();
  await redis.stop();
});

/** A python program that prints the keys it read on stdin, then the sum of `a` and `b`. */
const KEYS_AND_SUM = 'import json, sys\ntask = json.load(sys.stdin)\nprint("keys:", ",".join(sorted(task)))\nprint("Answer:", task["a"] + task["b"])\n';
const codeRun = { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py', timeoutMs: 20_000 } };

describe('the gold stays with the reward, on a real worker', () => {
  it("codeRunner's stdin lacks the reward's goldKey, and the reward still scores with it", async () => {
    const run = 'gold-stdin';
    const right = makeSpec(run, 'right', { rendered: { files: { 'main.py': KEYS_AND_SUM } }, run: codeRun, reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } }, task: { id: 'right', a: 2, b: 3, gold: 5 } });
    const wrong = makeSpec(run, 'wrong', { rendered: { files: { 'main.py': KEYS_AND_SUM } }, run: codeRun, reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } }, task: { id: 'wrong', a: 2, b: 3, gold: 6 } });
    await q.add([right, wrong]);
    const { results } = await q.waitForAll([right.leaseId, wrong.leaseId]);
    expect(results.get(right.leaseId)).toMatchObject({ kind: 'ok', reward: 1, output: { stdout: 'keys: a,b,id\nAnswer: 5\n' }, goldVisibleToRun: false });
    expect(results.get(wrong.leaseId)).toMatchObject({ kind: 'ok', reward: 0, output: { stdout: 'keys: a,b,id\nAnswer: 5\n' }, goldVisibleToRun: false });
  });

  it("a run function's task lacks every declared gold key: built-in default, gold_key in a nested Ref, a runtime declaration, the spec's goldKeys", async () => {
    const run = 'gold-runfn';
    const task = { id: 'x', question: 'q', answer: 1, gold: 2, rubric: 3, solution: 4, notes: 5 };
    const specs = {
      // lastNumber without config: its default goldKey "answer", declared by the function itself.
      builtin: makeSpec(run, 'builtin', { run: fixture('reportsTask'), reward: { $ref: 'rollout-queue/rewards:lastNumber', config: {} }, task: { ...task, id: 'builtin' } }),
      // The evolution engine's convention, in the reward's config and in a Ref nested in it.
      engine: makeSpec(run, 'engine', {
        run: fixture('reportsTask'),
        reward: fixture('seesKeys', { needs: ['gold', 'rubric'], gold_key: 'gold', judge: fixture('constant', { gold_keys: ['rubric'] }) }),
        task: { ...task, id: 'engine' },
      }),
      // A reward function of the user's own that declares its gold at run time.
      declared: makeSpec(run, 'declared', { run: fixture('reportsTask'), reward: fixture('seesKeys', { needs: ['solution'], declares: ['solution'] }), task: { ...task, id: 'declared' } }),
      // Keys the spec lists as private to the reward.
      spec: makeSpec(run, 'spec', { run: fixture('reportsTask'), reward: fixture('seesKeys', { needs: ['notes', 'answer'] }), goldKeys: ['notes', 'answer'], task: { ...task, id: 'spec' } }),
    };
    await q.add(Object.values(specs));
    const { results } = await q.waitForAll(Object.values(specs).map((spec) => spec.leaseId));
    const seen = (key: keyof typeof specs): unknown => results.get(specs[key].leaseId)?.output;
    expect(seen('engine')).toEqual({ taskKeys: ['id', 'question', 'answer', 'solution', 'notes'], goldKeys: ['gold', 'rubric'] });
    expect(seen('declared')).toEqual({ taskKeys: ['id', 'question', 'answer', 'gold', 'rubric', 'notes'], goldKeys: ['solution'] });
    expect(seen('spec')).toEqual({ taskKeys: ['id', 'question', 'gold', 'rubric', 'solution'], goldKeys: ['notes', 'answer'] });
    expect(seen('builtin')).toEqual({ taskKeys: ['id', 'question', 'gold', 'rubric', 'solution', 'notes'], goldKeys: ['answer'] });
    // The rewards saw the whole task: each found the keys it needs.
    for (const key of ['engine', 'declared', 'spec'] as const) expect(results.get(specs[key].leaseId), key).toMatchObject({ kind: 'ok', reward: 1, goldVisibleToRun: false });
  });

  it('goldVisibleToRun: true hands the run the whole task, and the Result says so', async () => {
    const opted = makeSpec('gold-optin', 'opted', { rendered: { files: { 'main.py': KEYS_AND_SUM } }, run: codeRun, reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } }, goldVisibleToRun: true, task: { id: 'opted', a: 2, b: 3, gold: 5 } });
    const runFn = makeSpec('gold-optin', 'runfn', { run: fixture('reportsTask'), reward: { $ref: 'rollout-queue/rewards:lastNumber', config: {} }, goldVisibleToRun: true, task: { id: 'runfn', answer: 1 } });
    await q.add([opted, runFn]);
    const { results } = await q.waitForAll([opted.leaseId, runFn.leaseId]);
    expect(results.get(opted.leaseId)).toMatchObject({ kind: 'ok', reward: 1, output: { stdout: 'keys: a,b,gold,id\nAnswer: 5\n' }, goldVisibleToRun: true });
    expect(results.get(runFn.leaseId)?.output).toEqual({ taskKeys: ['id', 'answer'], goldKeys: [] });
    expect(results.get(runFn.leaseId)?.goldVisibleToRun).toBe(true);
  });

  it("a Dispatch's scenario lacks the keys queueDispatch's goldKeys names", async () => {
    const dispatch = queueDispatch({
      dispatch: { $ref: 'rq-fixtures/dispatches:noop', config: {} },
      goldKeys: ['expected'],
      producerOptions: { redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX, logger: createLogger({}, { write: () => true }) },
    });
    try {
      const scenario = { prompt: 'two plus two', expected: '4' };
      const artifact = await dispatch(scenario, { cellId: 'cell-gold', runAttemptId: 'gold-eval', rep: 0, seed: 0 });
      // noop returns the scenario it was called with.
      expect(artifact).toEqual({ prompt: 'two plus two' });
      expect(scenario).toEqual({ prompt: 'two plus two', expected: '4' });
    } finally {
      await dispatch.close();
    }
  });
});
