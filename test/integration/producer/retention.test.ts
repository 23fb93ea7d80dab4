import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { ResultDeliveredError, RolloutQueue, RunActiveError, UndeliveredResultsError, type RolloutDraft } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { waitFor } from '../../helpers/wait-for.js';

// Retention, purge and the once-per-run artifact, against one private Redis and a real worker process.
let redis: TestRedis;
let raw: RawQueue;
let worker: WorkerProcess;
let rq: RolloutQueue;
const RETAIN_MS = 600_000;

const draft = (id: string, extra: Partial<RolloutDraft> = {}): RolloutDraft => ({ rendered: 'x', task: { id }, run: fixture('echo'), reward: fixture('constant'), ...extra });

async function collect(iterable: AsyncIterable<Result>): Promise<Result[]> {
  const results: Result[] = [];
  for await (const result of iterable) results.push(result);
  return results;
}

/** Every key whose name holds `runId` (SCAN, as an operator would look). */
async function keysOf(runId: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await raw.redis.scan(cursor, 'MATCH', `*${runId}*`, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found.sort();
}

beforeAll(async () => {
  redis = await startRedis({ private: true });
  raw = new RawQueue(redis.url);
  worker = await startWorkerProcess(raw.workerOptions({ concurrency: 2 }));
  rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, retainMs: RETAIN_MS, logger: createLogger({}, { write: () => true }) });
});
afterAll(async () => {
  await rq.close();
  worker.signal('SIGTERM');
  await worker.exited();
  await raw.close();
  await redis.stop();
});

describe('retention of a delivered run', () => {
  it('once every Result is delivered, every key of the run expires within retainMs and its jobs leave the completed set', async () => {
    const results = await collect(rq.mapRollouts([draft('a'), draft('b'), draft('c')], { runId: 'kept' }));
    expect(results.map((r) => r.kind)).toEqual(['ok', 'ok', 'ok']);
    const keys = await keysOf('kept');
    // Job hashes and the run's records exist, none without an expiry.
    expect(keys).toContain(raw.queue.toKey('kept.a'));
    expect(keys).toContain(raw.keys.run('kept'));
    const ttls = await Promise.all(keys.map((key) => raw.redis.pttl(key)));
    expect(keys.filter((_, i) => !((ttls[i] as number) > 0 && (ttls[i] as number) <= RETAIN_MS))).toEqual([]);
    expect(await raw.redis.zrange(raw.queue.toKey('completed'), 0, -1)).toEqual([]);
    const run = (await rq.status('kept')).run;
    expect(run).toMatchObject({ status: 'completed', delivered: 3 });
  });

  /** Keys with `runId` in their name that would never expire, or expire later than retainMs. */
  async function lasting(runId: string): Promise<string[]> {
    const keys = await keysOf(runId);
    const ttls = await Promise.all(keys.map((key) => raw.redis.pttl(key)));
    return keys.filter((_, i) => !((ttls[i] as number) > 0 && (ttls[i] as number) <= RETAIN_MS));
  }

  it('a rollout() run (one retention call with its release): its stored artifact and every key expire, its coordinator lease is gone', async () => {
    const artifact = `// ${'artifact line\n'.repeat(200)}`;
    expect((await rq.rollout(draft('one', { rendered: artifact }), { runId: 'single-kept' })).kind).toBe('ok');
    await rq.settled('single-kept');
    const keys = await keysOf('single-kept');
    expect(keys.filter((key) => key.includes(':artifact:'))).toHaveLength(1);
    expect(keys).toContain(raw.queue.toKey('single-kept.one'));
    expect(await lasting('single-kept')).toEqual([]);
    expect(await raw.redis.exists(raw.keys.runCoordinator('single-kept'))).toBe(0);
    expect(await raw.redis.zscore(raw.queue.toKey('completed'), 'single-kept.one')).toBeNull();
    // The lease was released: another session of the run starts at once (it finds nothing
    // undelivered) and says so with a typed error (fresh-user report: a plain Error, after the
    // caller's process was SIGKILLed right after rollout() returned).
    const again = await rq.rollout(draft('one', { rendered: artifact }), { runId: 'single-kept' }).catch((err: unknown) => err);
    expect(again).toBeInstanceOf(ResultDeliveredError);
    expect(again).toMatchObject({ name: 'ResultDeliveredError', runId: 'single-kept', message: expect.stringContaining('use a new runId') });
  });

  it('a run finished by a second session (it did not make the run): every key expires, the first session\'s leases included', async () => {
    for await (const result of rq.mapRollouts([draft('a'), draft('b'), draft('c')], { runId: 'resumed-kept' })) {
      expect(result.kind).toBe('ok');
      break;
    }
    await rq.settled('resumed-kept');
    const rest = await collect(rq.mapRollouts([draft('a'), draft('b'), draft('c')], { runId: 'resumed-kept' }));
    expect(rest).toHaveLength(2);
    await rq.settled('resumed-kept');
    expect(await lasting('resumed-kept')).toEqual([]);
    expect((await rq.status('resumed-kept')).run).toMatchObject({ status: 'completed', delivered: 3 });
    expect(await raw.redis.exists(raw.keys.runCoordinator('resumed-kept'))).toBe(0);
  });

  it('says a run expires at info for a run of several specs, at debug for each rollout() call', async () => {
    const lines: { level: number; msg: string; runId?: string }[] = [];
    const logger = createLogger({}, { write: (line: string) => (lines.push(JSON.parse(line) as { level: number; msg: string }), true) });
    logger.level = 'debug';
    const logged = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, retainMs: RETAIN_MS, logger });
    try {
      expect((await collect(logged.mapRollouts([draft('a'), draft('b')], { runId: 'logged-many' }))).length).toBe(2);
      await logged.rollout(draft('a'), { runId: 'logged-one' });
      await logged.settled();
      const expiring = lines.filter((line) => line.msg.includes('the run expires from Redis'));
      // pino levels: 20 debug, 30 info.
      expect(expiring.map(({ runId, level }) => ({ runId, level }))).toEqual([{ runId: 'logged-many', level: 30 }, { runId: 'logged-one', level: 20 }]);
    } finally {
      await logged.close();
    }
  });

});

describe('an artifact stored once per run', () => {
  it('jobs carry its content hash, Redis holds one copy, and the worker runs the whole artifact', async () => {
    const artifact = `// ${'big artifact line\n'.repeat(4000)}`;
    const results = await collect(rq.mapRollouts(Array.from({ length: 6 }, (_, i) => draft(`t${i}`, { rendered: artifact })), { runId: 'hashed' }));
    expect(results.map((r) => r.kind)).toEqual(Array(6).fill('ok'));
    for (const result of results) expect((result.output as { rendered: unknown }).rendered).toBe(artifact);
    const data = (await raw.queue.getJob('hashed.t0'))?.data as { rendered: unknown };
    expect(data.rendered).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: Buffer.byteLength(JSON.stringify(artifact)) });
    const stored = (await keysOf('hashed')).filter((key) => key.includes(':artifact:'));
    expect(stored).toHaveLength(1);
    expect(await raw.redis.strlen(stored[0] as string)).toBe(Buffer.byteLength(JSON.stringify(artifact)));
  });
});

describe('purge', () => {
  it('refuses while the run is running, then removes every key with its run id', async () => {
    const iterator = rq.mapRollouts([draft('slow', { task: { id: 'slow', delayMs: 1500 } }), draft('quick')], { runId: 'purged', signal: undefined });
    const first = await iterator.next();
    expect(first.done).toBe(false);
    // Still running (one lease left): refused, nothing removed.
    await expect(rq.purge('purged')).rejects.toBeInstanceOf(RunActiveError);
    const other = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, logger: createLogger({}, { write: () => true }) });
    try {
      await expect(other.purge('purged')).rejects.toThrow(/still running/);
    } finally {
      await other.close();
    }
    for await (const _ of iterator) void _;
    expect((await keysOf('purged')).length).toBeGreaterThan(0);
    expect(await rq.purge('purged')).toEqual({ found: true, leases: 2, undelivered: 0 });
    expect(await keysOf('purged')).toEqual([]);
    await expect(rq.purge('purged')).rejects.toThrow(/no run "purged"/);
  });

  // Fresh-user report: a cancelled run whose coordinator had delivered 16 of 60 Results (all 60
  // finished) was purged with only "60 lease(s) … removed": 44 Results nobody had collected, gone.
  it('refuses a run whose finished Results were never delivered, unless discardUndelivered', async () => {
    const drafts = ['u1', 'u2', 'u3', 'u4'].map((id) => draft(id));
    for await (const _ of rq.mapRollouts(drafts, { runId: 'undelivered' })) break; // one taken, the coordinator gone
    const finished = async (): Promise<number> => (await Promise.all(drafts.map((d) => raw.redis.hexists(`${TEST_PREFIX}:${raw.name}:undelivered.${d.task.id}`, 'finishedOn')))).filter((n) => n === 1).length;
    await waitFor(async () => (await finished()) === 4, 'every job of the run to finish');
    await rq.cancel('undelivered');
    const refused = await rq.purge('undelivered').catch((err: Error) => err);
    expect(refused).toBeInstanceOf(UndeliveredResultsError);
    expect((refused as Error).message).toContain('run "undelivered" has 3 Result(s) that finished but were never delivered');
    expect((await rq.purgeOlderThan(0)).skipped.map((s) => s.runId)).toContain('undelivered');
    expect(await finished()).toBe(4); // nothing removed
    expect(await rq.purge('undelivered', { discardUndelivered: true })).toEqual({ found: true, leases: 4, undelivered: 3 });
    expect(await keysOf('undelivered')).toEqual([]);
  });

  it('purgeOlderThan removes finished runs that ended long enough ago and skips running ones', async () => {
    await collect(rq.mapRollouts([draft('x')], { runId: 'old1' }));
    const outcome = await rq.purgeOlderThan(0);
    expect(outcome.purged).toContain('old1');
    expect(await keysOf('old1')).toEqual([]);
    expect((await rq.purgeOlderThan(86_400_000)).purged).toEqual([]);
  });
});
