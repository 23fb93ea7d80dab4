import { describe, expect, it } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { PRUNE_EVERY_RUNS } from '../../../src/producer/run-list-pruner.js';
import { TEST_PREFIX, useProducerFixture } from '../../helpers/producer-fixture.js';
import { draft } from '../../helpers/rollout-drafts.js';

const fx = useProducerFixture();

describe('the run list (status) forgets runs whose retention ended', () => {
  it(`takes expired runs out after ${PRUNE_EVERY_RUNS} wrap-ups, and keeps the ones still retained`, async () => {
    const queue = fx.queueName();
    const runs = queueKeys(TEST_PREFIX, queue).runs();
    await fx.worker(queue);
    const kept = await fx.open(queue);
    const keptRunId = fx.runId('kept');
    await kept.rollout(draft({ id: 'k' }), { runId: keptRunId });
    await kept.settled();

    // Every rollout() call is a run of its own; with retainMs 1 each record expires at its end.
    const rq = await fx.open(queue, { retainMs: 1 });
    for (let i = 0; i < PRUNE_EVERY_RUNS - 1; i++) await rq.rollout(draft({ id: `t${i}` }), { runId: fx.runId() });
    await rq.settled();
    expect(await fx.redis.scard(runs)).toBe(PRUNE_EVERY_RUNS);

    await rq.rollout(draft({ id: 'last' }), { runId: fx.runId() });
    await rq.settled();
    const left = await fx.redis.smembers(runs);
    expect(left).toContain(keptRunId);
    // Besides the retained run, at most the last one is left: its record may not have expired yet (1 ms).
    expect(left.length).toBeLessThanOrEqual(2);
  });
});
