import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DispatchCleanups } from '../../../src/harness/coordinator/dispatch-cleanups.js';
import type { Plane } from '../../../src/harness/coordinator/dispatch-planes.js';
import type { RolloutQueue } from '../../../src/producer/index.js';
import { RawQueue } from '../../helpers/raw-queue.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The cleanups of queueDispatch against a real Redis: the lease's incarnation count (receipts are
 * replayed once per callId of an incarnation) and the one retry chain per lease. CI under load: a
 * cell re-run after an abort delivered its receipt under the aborted run's incarnation, and the
 * shared ledger got one receipt of two.
 */
describe('DispatchCleanups', () => {
  let raw: RawQueue;
  let plane: Plane;

  beforeAll(() => {
    raw = new RawQueue(url);
    // The run's wrap-up is the producer's: none is pending here.
    const rq = { settled: async () => undefined } as unknown as RolloutQueue;
    plane = { rq, owned: false, queue: raw.queue, keys: raw.keys };
  });
  afterAll(async () => {
    await raw.close();
  });

  it('an incarnation read while the last one is being deleted is read after the deletion counted', async () => {
    const cleanups = new DispatchCleanups(async () => raw.redis, undefined);
    await raw.redis.hset(raw.keys.run('cell-run'), 'status', 'cancelled');
    const deleting = cleanups.forget({ plane, runId: 'cell-run', leaseId: 'cell-run.cell' });
    // Read in the same tick the deletion started: before, it said 0 and the re-run's receipts were skipped.
    expect(await cleanups.incarnation(raw.name, 'cell-run')).toBe(1);
    expect(await deleting).toBe(true);
    expect(await raw.redis.exists(raw.keys.run('cell-run'))).toBe(0);
  });

  it('cleanups asked again for a lease with one pending keep the one retry chain (a second outlived the deletion)', async () => {
    const cleanups = new DispatchCleanups(async () => raw.redis, undefined);
    const forget = vi.spyOn(cleanups, 'forget');
    cleanups.later(plane, 'again-run', 'again-run.cell');
    cleanups.later(plane, 'again-run', 'again-run.cell');
    cleanups.later(plane, 'other-run', 'other-run.cell');
    expect(forget.mock.calls.map(([pending]) => pending.runId)).toEqual(['again-run', 'other-run']);
    await cleanups.finish();
    expect(await cleanups.incarnation(raw.name, 'again-run')).toBe(1);
  });
});
