import { describe, expect, it } from 'vitest';
import { useProducerFixture } from '../../helpers/producer-fixture.js';
import { draft } from '../../helpers/rollout-drafts.js';

const fx = useProducerFixture();

// Second fresh-user pass: `status` of a run whose run command was interrupted said "running",
// the same as a run being delivered. `delivering` tells them apart (the run's coordinator lease).
describe('QueueStatus.delivering', () => {
  it('is true while a coordinator delivers the run, false once it is gone, absent without a run id', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('deliv');
    const coordinator = await fx.open(queue);
    // No worker: the run stays running with its lease waiting.
    const iterator = coordinator.mapRollouts([draft({ id: 'a' })], { runId })[Symbol.asyncIterator]();
    const pending = iterator.next().catch(() => undefined); // it throws once its queue is closed
    const observer = await fx.open(queue);
    await expect.poll(async () => (await observer.status(runId)).delivering, { timeout: 10_000 }).toBe(true);
    await coordinator.close(); // the coordinator goes; its lease is released
    await pending;
    const after = await observer.status(runId);
    expect(after.run?.status).toBe('running');
    expect(after.delivering).toBe(false);
    expect((await observer.status()).delivering).toBeUndefined();
  });
});
