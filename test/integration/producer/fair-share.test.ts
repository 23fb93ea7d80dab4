import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../../src/cli/status-format.js';
import type { Result } from '../../../src/spec/index.js';
import { collect, useProducerFixture } from '../../helpers/producer-fixture.js';
import { drafts } from '../../helpers/rollout-drafts.js';
import { waitFor } from '../../helpers/wait-for.js';

const fx = useProducerFixture();

/** Consumes a run in the background; the promise settles when the run ends. */
function drain(results: AsyncIterable<Result>): Promise<{ items: Result[]; error: unknown }> {
  return collect(results);
}

describe('fair share between runs on one queue', () => {
  // Issue 33: a 150-task run started after a large one waited behind the large run's whole
  // in-flight window (500 jobs). Here the big run's window (200) is full and running when the
  // small run arrives: the small run's first job must start within a few starts, not after
  // the 150+ big jobs that were waiting ahead of it.
  it('starts a small run right after it arrives beside a big run whose window is full', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { maxInFlight: 200 });
    const inspect = fx.inspect(queue);
    const worker = await fx.worker(queue, { concurrency: 2 });
    const bigId = fx.runId('big');
    const smallId = fx.runId('small');
    const big = drain(rq.mapRollouts(drafts(600, { delayMs: 5 }), { runId: bigId }));
    // The big run is running, and its window is full (what the small run would queue behind).
    await waitFor(async () => worker.started.length >= 10 && (await inspect.getJobCountByTypes('waiting', 'prioritized')) >= 150, 'the big run to run with its window full', 60_000);
    const small = drain(rq.mapRollouts(drafts(20, { delayMs: 5 }), { runId: smallId }));
    // Count from the moment every small job is in the queue (or one already started).
    await waitFor(async () => worker.started.some((id) => id.startsWith(`${smallId}.`)) || (await fx.jobHashes(queue, smallId)) === 20, 'the small run\'s 20 jobs', 60_000);
    const startsAtArrival = worker.started.length;
    const bigWaitingAtArrival = (await inspect.getJobCountByTypes('waiting', 'prioritized')) - 20;
    await waitFor(() => worker.started.some((id) => id.startsWith(`${smallId}.`)), 'the small run to start', 120_000);
    const firstSmall = worker.started.findIndex((id) => id.startsWith(`${smallId}.`));
    // First-in first-out would start every big job waiting at arrival first (≥ 130 here).
    expect(bigWaitingAtArrival).toBeGreaterThan(100);
    expect(firstSmall - startsAtArrival).toBeLessThanOrEqual(4);
    const { items: smallItems, error: smallError } = await small;
    expect(smallError).toBeUndefined();
    expect(smallItems).toHaveLength(20);
    const { items: bigItems, error: bigError } = await big;
    expect(bigError).toBeUndefined();
    expect(bigItems).toHaveLength(600);
    // The small run finished long before the big one: its last job started before the big run's window drained.
    const lastSmall = worker.started.reduce((last, id, i) => (id.startsWith(`${smallId}.`) ? i : last), -1);
    expect(lastSmall - startsAtArrival).toBeLessThan(bigWaitingAtArrival);
  }, 240_000);

  it('gives runs slots in proportion to their weights, and status shows each run\'s share', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { maxInFlight: 200 });
    const inspect = fx.inspect(queue);
    const lightId = fx.runId('light');
    const heavyId = fx.runId('heavy');
    const light = drain(rq.mapRollouts(drafts(200), { runId: lightId }));
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === 200, 'the light run\'s 200 jobs', 60_000);
    const heavy = drain(rq.mapRollouts(drafts(200), { runId: heavyId, weight: 3 }));
    await waitFor(async () => (await inspect.getJobCountByTypes('waiting', 'prioritized')) === 400, 'both runs\' 400 jobs', 60_000);

    const status = await rq.status();
    const byRun = Object.fromEntries(status.shares.map((share) => [share.runId, share]));
    expect(byRun[lightId]).toMatchObject({ weight: 1, waiting: 200, active: 0, fairShare: 0.25 });
    expect(byRun[heavyId]).toMatchObject({ weight: 3, waiting: 200, active: 0, fairShare: 0.75 });
    const text = formatStatus({ counts: status.counts, run: undefined, workers: [], shares: status.shares }, { queue, prefix: 'rqt', address: 'test', runs: [] });
    expect(text).toContain('Runs sharing the workers: 2');
    expect(text).toMatch(new RegExp(`${heavyId}\\s+weight=3 waiting=200 active=0 share=0%/75%`));

    const worker = await fx.worker(queue, { concurrency: 1 });
    await waitFor(() => worker.started.length >= 80, '80 starts', 60_000);
    const heavyStarts = worker.started.slice(0, 80).filter((id) => id.startsWith(`${heavyId}.`)).length;
    // Weight 3 against 1 while both wait: three heavy starts for each light one.
    expect(heavyStarts).toBeGreaterThanOrEqual(58);
    expect(heavyStarts).toBeLessThanOrEqual(62);
    expect((await light).items).toHaveLength(200);
    expect((await heavy).items).toHaveLength(200);
  }, 240_000);

  it('refuses a weight outside 0.01–100, naming the option', async () => {
    const rq = await fx.open(fx.queueName());
    expect(() => rq.mapRollouts(drafts(1), { runId: fx.runId(), weight: 0 })).toThrow(/mapRollouts option weight must be a number from 0\.01 to 100.*got 0/);
    expect(() => rq.mapRollouts(drafts(1), { runId: fx.runId(), weight: Number.NaN })).toThrow(/weight must be a number/);
  });

  it('cancel removes a run\'s prioritized jobs', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const inspect = fx.inspect(queue);
    const runId = fx.runId();
    const controller = new AbortController();
    const run = drain(rq.mapRollouts(drafts(30), { runId, signal: controller.signal }));
    await waitFor(async () => (await inspect.getJobCounts('prioritized')).prioritized === 30, '30 prioritized jobs', 60_000);
    controller.abort('test');
    const { error } = await run;
    expect((error as Error).name).toBe('AbortError');
    expect((await inspect.getJobCounts('prioritized')).prioritized).toBe(0);
  });
});
