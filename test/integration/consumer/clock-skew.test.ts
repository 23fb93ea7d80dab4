import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// Case BR-55: a worker whose wall clock is 10 min off hands a lease back (MissingSecret, with the
// transient back-off in BullMQ's delayed set). The lease's due time must be on the Redis clock,
// which every worker shares: before, it came from the skewed worker's Date.now(), so a worker
// 10 min ahead parked the lease for 10 min for every right-clock worker (and one behind gave
// no back-off at all). The worker runs under libfaketime; its monotonic clock stays real
// (FAKETIME_DONT_FAKE_MONOTONIC), as an NTP-skewed host's does.
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';
const SKEW_MS = 10 * 60_000;
/** A secret name the test process never sets: only the right-clock worker gets it. */
const SECRET = 'RQ_CLOCK_SKEW_TEST_SECRET';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** Redis time (ms) of a stream entry id `<ms>-<seq>`. */
const streamMs = (id: string): number => Number(id.split('-')[0]);

describe('one clock: a back-off is due by the Redis clock whatever the worker clock says (BR-55)', () => {
  it('libfaketime is installed (the skewed worker needs it)', () => {
    expect(existsSync(LIBFAKETIME), `install faketime (Debian: apt-get install faketime); expected ${LIBFAKETIME}`).toBe(true);
  });

  for (const [skew, skewMs] of [['+10m', SKEW_MS], ['-10m', -SKEW_MS]] as const) {
    it(`a worker ${skew} hands a lease back (MissingSecret): due one back-off after the hand-back by Redis TIME; a right-clock worker with the secret then runs it`, async () => {
      const q = new RawQueue(redis.url);
      // A budget of re-dispatches large enough that a hand-back more (the stop below landing
      // after the back-off under load) never ends the lease.
      const skewed = await startWorkerProcess(q.workerOptions({ name: `skewed${skew}`, concurrency: 1, transientBackoffMs: 2000, maxRedispatches: 10 }), {
        LD_PRELOAD: LIBFAKETIME, FAKETIME: skew, FAKETIME_DONT_FAKE_MONOTONIC: '1', DONT_FAKE_MONOTONIC: '1',
      });
      let right: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
      try {
        const spec = makeSpec(`skew${skewMs > 0 ? 'ahead' : 'behind'}`, 's1', { sandbox: { env: [SECRET], memoryMb: 1024 } });
        await q.add([spec]);
        await waitFor(() => skewed.output().includes('"lease re-dispatched"'), 'the skewed worker handing the lease back');
        skewed.signal('SIGTERM');
        expect((await skewed.exited()).code).toBe(0);

        // Each hand-back's own record: BullMQ's `delayed` event, XADDed by the script that scored
        // the job, so its stream id is the Redis time of the hand-back and `delay` its due time.
        const events = await q.redis.xrange(`${TEST_PREFIX}:${q.name}:events`, '-', '+');
        const handBacks = events
          .map(([id, fields]) => ({ id, fields: Object.fromEntries(fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1]]] : []))) as Record<string, string> }))
          .filter(({ fields }) => fields.event === 'delayed' && fields.jobId === spec.leaseId)
          .map(({ id, fields }) => ({ atMs: streamMs(id), dueMs: Number(fields.delay) }));
        expect(handBacks.length).toBeGreaterThanOrEqual(1);

        // The worker's clock really was off: its log line of the first hand-back (pino `time`,
        // its Date.now()) against the Redis time of the same hand-back.
        const line = skewed.output().split('\n').find((l) => l.includes('"lease re-dispatched"')) as string;
        const loggedMs = (JSON.parse(line) as { time: number }).time;
        const first = handBacks[0] as { atMs: number; dueMs: number };
        expect(Math.abs(loggedMs - first.atMs - skewMs)).toBeLessThan(SKEW_MS / 2);
        expect(JSON.parse(line)).toMatchObject({ reason: 'MissingSecret', attempt: 1 });

        // Each due one back-off (≤ 4 s here) after its hand-back on the Redis clock, not ±10 min.
        for (const { atMs, dueMs } of handBacks) expect(Math.abs(dueMs - atMs)).toBeLessThan(SKEW_MS / 2);

        // A right-clock worker with the secret runs it (after 10 min, had the due time been skewed ahead).
        right = await startWorkerProcess(q.workerOptions({ name: 'right-clock', concurrency: 1 }), { [SECRET]: 'not-a-real-secret' });
        const { results, failed } = await q.waitForAll([spec.leaseId]);
        expect(failed.size).toBe(0);
        expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', worker: 'right-clock' });
        expect(results.get(spec.leaseId)?.redispatched).toBe(handBacks.length);
      } finally {
        await skewed.kill();
        if (right) {
          right.signal('SIGTERM');
          await right.exited();
        }
        await q.close();
      }
    });
  }
});
