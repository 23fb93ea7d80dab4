import { describe, expect, it } from 'vitest';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';
import { all, fleetFixture } from './fleet-fixture.js';

// Fresh-user reports, with their exact inputs, through the library and a real worker process:
// 1. a model-written file name in rendered.files ("../evil.py", draft 2 of 6) ended `caller` and
//    stopped the run (stopOnCaller): it is the model's fault (`model`, BadRenderedFile), the run goes on;
// 2. worker SHORT=4, `sandbox.env: ["SHORT"]`, the program prints 42: the reward scored the redacted
//    "[secret SHORT]2" (reward 0); it scores the raw output, the stored Result stays redacted.
const fx = fleetFixture();
const { workers, closers } = fx;

const byTask = (results: readonly Result[]): Record<string, Result> => Object.fromEntries(results.map((r) => [r.taskId, r]));

function solve(id: string, rendered: RolloutDraft['rendered'], extra: Partial<RolloutDraft> = {}): RolloutDraft {
  return {
    rendered,
    task: { id, answer: 42 },
    run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py', command: ['python3', 'main.py'] } },
    reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'answer' } },
    ...extra,
  };
}

async function queueWithWorker(env: NodeJS.ProcessEnv = {}): Promise<{ rq: RolloutQueue; output: () => string }> {
  const raw = new RawQueue(fx.redis.url);
  closers.push(() => raw.close());
  const worker = await startWorkerProcess(raw.workerOptions({ concurrency: 2 }), env);
  workers.push(worker);
  // stopOnCaller left at its default (true): a caller Result would stop the run.
  const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: fx.silent });
  closers.push(() => rq.close());
  return { rq, output: worker.output };
}

describe('a bad file inside rendered.files is the model\'s fault (library, real worker)', () => {
  it('ends that rollout model/BadRenderedFile and every other draft of the run still runs', async () => {
    const { rq } = await queueWithWorker();
    const drafts = [
      solve('d1', { files: { 'main.py': 'print(42)' } }),
      solve('d2', { files: { 'main.py': 'print(42)', '../evil.py': 'x' } }),
      solve('d3', { files: { 'main.py': 'print(42)', 'data.bin': 5 as unknown as string } }),
      solve('d4', { files: { 'solve.py': 'print(42)' } }),
      solve('d5', 'print(42)'),
      solve('d6', { files: { 'main.py': 'print(42)' } }),
    ];
    const results = byTask(await all(rq.mapRollouts(drafts, { runId: 'model-files' })));
    expect(Object.keys(results).sort()).toEqual(['d1', 'd2', 'd3', 'd4', 'd5', 'd6']);
    for (const id of ['d1', 'd5', 'd6']) expect(results[id]).toMatchObject({ kind: 'ok', reward: 1 });
    // Run by the worker's codeRunner, which refused the file before writing anything.
    expect(results.d2).toMatchObject({ kind: 'model', error: { type: 'BadRenderedFile', message: expect.stringContaining('"../evil.py" leaves the artifact directory') }, attempts: 1 });
    expect(results.d4).toMatchObject({ kind: 'model', error: { type: 'BadRenderedFile', message: expect.stringContaining('no entrypoint "main.py"') } });
    // Refused by the producer (not text): never enqueued, a model Result, no value quoted.
    expect(results.d3).toMatchObject({ kind: 'model', worker: null, attempts: 0, error: { type: 'BadRenderedFile', message: expect.stringContaining('rendered.files entry #1 (of 2) is not text (number)') } });
    const run = (await rq.status('model-files')).run;
    expect(run).toMatchObject({ status: 'completed' });
  });
});

describe('a secret value the output also holds by chance (library, real worker)', () => {
  it('worker SHORT=4, program prints 42: reward 1 on the raw output, stored stdout "[secret SHORT]2", one warning naming SHORT', async () => {
    const { rq, output } = await queueWithWorker({ SHORT: '4' });
    const drafts = [solve('s1', 'print(42)', { sandbox: { env: ['SHORT'] } }), solve('s2', 'print(42)', { sandbox: { env: ['SHORT'] } })];
    const results = byTask(await all(rq.mapRollouts(drafts, { runId: 'short-secret' })));
    for (const id of ['s1', 's2']) {
      expect(results[id]).toMatchObject({ kind: 'ok', reward: 1 });
      expect((results[id]?.output as { stdout: string }).stdout).toBe('[secret SHORT]2\n');
    }
    const warnings = output().split('\n').filter((line) => line.includes('"secretName":"SHORT"'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string)).toMatchObject({ level: 40, secretName: 'SHORT', minChars: 8, msg: expect.stringContaining('give SHORT a longer value') });
  });
});
