import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue, type RolloutDraft, type RunReuse } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';
import { all, fleetFixture } from './fleet-fixture.js';

// Issue 30: a draft's meta comes back untouched on its Result, whoever writes the Result (a real
// worker, the producer for a refused draft, the evaluation cache, the coordinator's deadline), and
// a run id used again says so instead of yielding nothing without a word.
const fx = fleetFixture();
const { workers, closers } = fx;

const byTask = (results: readonly Result[]): Record<string, Result> => Object.fromEntries(results.map((r) => [r.taskId, r]));

async function queueWithWorker(): Promise<{ raw: RawQueue; rq: RolloutQueue; logs: string[] }> {
  const raw = new RawQueue(fx.redis.url);
  closers.push(() => raw.close());
  workers.push(await startWorkerProcess(raw.workerOptions({ concurrency: 4, evalConcurrency: 2 })));
  const logs: string[] = [];
  const logger = createLogger({ component: 'meta-test' }, { write: (line: string) => void logs.push(line) });
  const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger, stopOnCaller: false });
  closers.push(() => rq.close());
  return { raw, rq, logs };
}

describe('meta on drafts and Results (library, real workers)', () => {
  it('comes back untouched on ok, model and caller Results, on a refused draft\'s, and never mixes candidates', async () => {
    const { rq } = await queueWithWorker();
    const meta = (k: number): Record<string, unknown> => ({ candidate: k, generation: 3, parents: [k - 1, k + 1], note: `cand-${k}`, nested: { ok: true, score: null } });
    const drafts: RolloutDraft[] = [
      { rendered: 'a', task: { id: 'ok-1', delayMs: 30 }, run: fixture('echo'), reward: fixture('constant'), meta: meta(1) },
      { rendered: 'b', task: { id: 'ok-2' }, run: fixture('echo'), reward: fixture('constant'), meta: 'a plain string tag' },
      { rendered: 'c', task: { id: 'throws' }, run: fixture('throws', { name: 'ValueError' }), reward: fixture('constant'), meta: meta(3) },
      { rendered: 'd', task: { id: 'denied' }, run: { $ref: 'not-allowed-pkg/x:run', config: {} }, reward: fixture('constant'), meta: meta(4) },
      { rendered: 'e', task: { id: 'refused', bad: Number.POSITIVE_INFINITY }, run: fixture('echo'), reward: fixture('constant'), meta: meta(5) },
      { rendered: 'f', task: { id: 'untagged' }, run: fixture('echo'), reward: fixture('constant') },
    ];
    const results = byTask(await all(rq.mapRollouts(drafts, { runId: 'meta-kinds' })));
    expect(results['ok-1']).toMatchObject({ kind: 'ok', meta: meta(1) });
    expect(results['ok-2']).toMatchObject({ kind: 'ok', meta: 'a plain string tag' });
    expect(results.throws).toMatchObject({ kind: 'model', meta: meta(3) });
    expect(results.denied).toMatchObject({ kind: 'caller', worker: expect.any(String), meta: meta(4) });
    // Refused by the producer, never enqueued: its caller Result still carries the tag.
    expect(results.refused).toMatchObject({ kind: 'caller', worker: null, error: { type: 'InvalidSpec' }, meta: meta(5) });
    expect(results.untagged?.kind).toBe('ok');
    expect(results.untagged && 'meta' in results.untagged).toBe(false);
  });

  it('a cached evaluation carries its own draft\'s meta, not the one stored with the cached Result', async () => {
    const { rq } = await queueWithWorker();
    const evaluation = (meta: unknown): RolloutDraft => ({ rendered: 'incumbent', task: { id: 'e1' }, run: fixture('echo'), reward: fixture('constant'), class: 'evaluation', meta });
    const [first] = await all(rq.mapRollouts([evaluation({ candidate: 'incumbent', generation: 1 })], { runId: 'rescore-g1' }));
    expect(first).toMatchObject({ kind: 'ok', meta: { candidate: 'incumbent', generation: 1 } });
    expect(first?.cached).toBeUndefined();
    const [again] = await all(rq.mapRollouts([evaluation({ candidate: 'incumbent', generation: 2 })], { runId: 'rescore-g2' }));
    expect(again).toMatchObject({ kind: 'ok', cached: true, meta: { candidate: 'incumbent', generation: 2 } });
    const { meta: _none, ...plain } = evaluation(undefined);
    const [untagged] = await all(rq.mapRollouts([plain], { runId: 'rescore-g3' }));
    expect(untagged?.cached).toBe(true);
    expect(untagged && 'meta' in untagged).toBe(false);
  });

  it('a lease the coordinator ends (NoWorker: no worker serves its placement) carries its meta', async () => {
    const { rq } = await queueWithWorker();
    const [result] = await all(rq.mapRollouts([{
      rendered: 'x', task: { id: 'nobody' }, run: fixture('echo'), reward: fixture('constant'),
      placement: { gpu: 'none-here' }, timeouts: { scheduleToStartMs: 1000 }, meta: { candidate: 'stranded' },
    }], { runId: 'meta-noworker' }));
    expect(result).toMatchObject({ kind: 'infrastructure', error: { type: 'NoWorker' }, meta: { candidate: 'stranded' } });
  });
});

describe('a run id used again (no silent empties)', () => {
  it('says how many drafts were delivered before: a warning and onDeliveredBefore, with nothingNew when the call yields nothing', async () => {
    const { rq, logs } = await queueWithWorker();
    const draft = (id: string): RolloutDraft => ({ rendered: 'x', task: { id }, run: fixture('echo'), reward: fixture('constant'), meta: { id } });
    expect(await all(rq.mapRollouts([draft('a'), draft('b')], { runId: 'reused' }))).toHaveLength(2);

    const told: RunReuse[] = [];
    // The evolution loop's mistake: the same run id for the incumbent's re-scoring.
    expect(await all(rq.mapRollouts([draft('a'), draft('b')], { runId: 'reused', onDeliveredBefore: (reuse) => void told.push(reuse) }))).toEqual([]);
    expect(told).toEqual([{ runId: 'reused', deliveredBefore: 2, leases: 2, nothingNew: true }]);
    expect(logs.join('\n')).toContain('run \\"reused\\": every one of this call\'s 2 drafts named a lease the run delivered before, neither run nor yielded again (even if changed), so this call yields no Result; use a new runId to run them again, or give the drafts class \\"evaluation\\"');

    // A run grown by a new draft: the new one runs and is yielded, the old one is counted.
    const grown = await all(rq.mapRollouts([draft('a'), draft('c')], { runId: 'reused', onDeliveredBefore: (reuse) => void told.push(reuse) }));
    expect(grown.map((r) => [r.taskId, r.meta])).toEqual([['c', { id: 'c' }]]);
    expect(told[1]).toEqual({ runId: 'reused', deliveredBefore: 1, leases: 2, nothingNew: false });

    // Throwing from it ends the iteration with that error: the Python client's default, in the library.
    class Reused extends Error {}
    const iteration = all(rq.mapRollouts([draft('a')], { runId: 'reused', onDeliveredBefore: (reuse) => { throw new Reused(`${reuse.deliveredBefore} delivered before`); } }));
    await expect(iteration).rejects.toThrow(Reused);
    await expect(iteration).rejects.toThrow('1 delivered before');
    expect(() => rq.mapRollouts([draft('a')], { runId: 'reused', onDeliveredBefore: 'warn' as never })).toThrow('mapRollouts option onDeliveredBefore must be a function');
  });

  // The CLI's `run --run-id` re-attach after a crash: the expected path, not a mistake to warn about.
  it('reattach: true logs the reuse at info as progress, not the warning pointing at a new runId; onDeliveredBefore is still told', async () => {
    const { rq, logs } = await queueWithWorker();
    const draft = (id: string): RolloutDraft => ({ rendered: 'x', task: { id }, run: fixture('echo'), reward: fixture('constant') });
    expect(await all(rq.mapRollouts([draft('a')], { runId: 'again' }))).toHaveLength(1);
    const told: RunReuse[] = [];
    const rest = await all(rq.mapRollouts([draft('a'), draft('b')], { runId: 'again', reattach: true, onDeliveredBefore: (reuse) => void told.push(reuse) }));
    expect(rest.map((r) => r.taskId)).toEqual(['b']);
    expect(told).toEqual([{ runId: 'again', deliveredBefore: 1, leases: 2, nothingNew: false }]);
    const reuseLines = logs.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((line) => line.msg.includes('"again"'));
    expect(reuseLines).toEqual([expect.objectContaining({ level: 30, msg: 're-attached to run "again": 1 of 2 already delivered, collecting the other 1' })]);
    expect(() => rq.mapRollouts([draft('a')], { runId: 'again', reattach: 'yes' as never })).toThrow('mapRollouts option reattach must be true or false');
  });
});
