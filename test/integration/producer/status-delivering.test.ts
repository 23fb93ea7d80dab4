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

// The CLI's resume hints name the results file of the coordinator that delivers a run (fresh-user
// report: they named the default file). `coordinatorNote` is stored once a session holds the run,
// so a coordinator refused as busy never overwrites it; `pendingResults` counts what `attach`
// would still deliver, without the waiting jobs a cancel removed.
describe('MapRolloutsOptions.coordinatorNote and RolloutQueue.pendingResults', () => {
  it('keep the delivering coordinator\'s note, and count only leases whose job is still there', async () => {
    const queue = fx.queueName();
    const runId = fx.runId('note');
    const coordinator = await fx.open(queue);
    const iterator = coordinator.mapRollouts([draft({ id: 'a' }), draft({ id: 'b' })], { runId, coordinatorNote: '/data/first.jsonl' })[Symbol.asyncIterator]();
    const pending = iterator.next().catch(() => undefined);
    const observer = await fx.open(queue);
    await expect.poll(async () => (await observer.status(runId)).run?.coordinatorNote, { timeout: 10_000 }).toBe('/data/first.jsonl');
    expect((await observer.pendingResults(runId)).sort()).toEqual([`${runId}.a`, `${runId}.b`]);
    // A second coordinator of the live run is refused (RunBusyError) and leaves the note alone.
    const second = await fx.open(queue);
    await expect(second.attach(runId, { coordinatorNote: '/data/second.jsonl' })[Symbol.asyncIterator]().next()).rejects.toMatchObject({ name: 'RunBusyError' });
    expect((await observer.status(runId)).run?.coordinatorNote).toBe('/data/first.jsonl');
    // Cancelled with no worker: its waiting jobs are removed, and no Result will come for them.
    await observer.cancel(runId);
    await pending;
    expect(await observer.pendingResults(runId)).toEqual([]);
    expect(() => observer.attach(runId, { coordinatorNote: '' })).toThrow('option coordinatorNote must be a string of 1 to 4096 characters');
  }, 60_000);
});
