import { describe, expect, it } from 'vitest';
import { discoverQueues } from '../../../src/dashboard/discover-queues.js';
import { placementQueueName, queueKeys } from '../../../src/lease/index.js';
import { RolloutQueue, type ProducerOptions, type RolloutDraft } from '../../../src/producer/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { all, fleetFixture } from './fleet-fixture.js';
import { waitFor } from '../../helpers/wait-for.js';

// Heterogeneous fleets: one BullMQ queue per distinct placement; workers (real processes) serve
// the base queue and every placement queue their labels satisfy, found as producers announce them.
const fx = fleetFixture();
const { workers, closers, silent } = fx;

async function open(raw: RawQueue, extra: Partial<ProducerOptions> = {}): Promise<RolloutQueue> {
  const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: silent, ...extra });
  closers.push(() => rq.close());
  return rq;
}

async function worker(raw: RawQueue, extra: Record<string, unknown>): Promise<WorkerProcess> {
  const w = await startWorkerProcess(raw.workerOptions({ placementPollMs: 100, ...extra }));
  workers.push(w);
  return w;
}

const spec = (id: string, extra: Partial<RolloutDraft> = {}): RolloutDraft => ({ rendered: 'x', task: { id }, run: fixture('echo'), reward: fixture('constant'), ...extra });

describe('placement routing', () => {
  it('two pools with different labels: each placed lease runs only on a matching worker, unplaced ones anywhere', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    const eu = await worker(raw, { name: 'pool-eu', placement: { region: 'eu-west', gpu: 'h100' } });
    const us = await worker(raw, { name: 'pool-us', placement: { region: 'us-east' } });
    const rq = await open(raw);
    const drafts = [
      ...['e1', 'e2', 'e3'].map((id) => spec(id, { placement: { region: 'eu-west' } })),
      ...['h1', 'h2'].map((id) => spec(id, { placement: { gpu: 'h100', region: 'eu-west' } })),
      ...['u1', 'u2', 'u3'].map((id) => spec(id, { placement: { region: 'us-east' } })),
      ...['n1', 'n2'].map((id) => spec(id)),
    ];
    const items = await all(rq.mapRollouts(drafts, { runId: 'mixed' }));
    expect(items).toHaveLength(10);
    const byTask = new Map(items.map((r) => [r.taskId, r]));
    for (const id of ['e1', 'e2', 'e3', 'h1', 'h2']) expect(byTask.get(id)).toMatchObject({ kind: 'ok', worker: eu.name });
    for (const id of ['u1', 'u2', 'u3']) expect(byTask.get(id)).toMatchObject({ kind: 'ok', worker: us.name });
    for (const id of ['n1', 'n2']) expect([eu.name, us.name]).toContain(byTask.get(id)?.worker);
    // One queue per distinct placement (key order does not matter), announced for discovery.
    const known = await raw.redis.hkeys(queueKeys(TEST_PREFIX, raw.name).placements());
    expect(known.sort()).toEqual([
      placementQueueName(raw.name, { region: 'eu-west' }),
      placementQueueName(raw.name, { region: 'eu-west', gpu: 'h100' }),
      placementQueueName(raw.name, { region: 'us-east' }),
    ].sort());
    // The dashboard's discovery (BullMQ meta keys) lists the placement queues.
    expect(await discoverQueues(raw.redis, TEST_PREFIX)).toEqual(expect.arrayContaining(known));
    // Retention (one script call over all four queues) took each delivered job out of its own
    // queue's completed set and gave its job hash (and lease hash, where one is left) an expiry.
    for (const name of [raw.name, ...known]) expect(await raw.redis.zcard(`${TEST_PREFIX}:${name}:completed`)).toBe(0);
    const keys = queueKeys(TEST_PREFIX, raw.name);
    for (const r of items) {
      const name = r.taskId.startsWith('n') ? raw.name : placementQueueName(raw.name, drafts.find((d) => d.task.id === r.taskId)?.placement ?? {});
      expect(await raw.redis.pttl(`${TEST_PREFIX}:${name}:${r.leaseId}`)).toBeGreaterThan(0);
      expect(await raw.redis.pttl(keys.lease(r.leaseId))).not.toBe(-1);
    }
    // Purge finds the jobs in their placement queues: afterwards no key holds the run id.
    expect(await rq.purge('mixed')).toMatchObject({ found: true, leases: 10 });
    const left: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await raw.redis.scan(cursor, 'MATCH', '*mixed*', 'COUNT', 1000);
      cursor = next;
      left.push(...found);
    } while (cursor !== '0');
    expect(left).toEqual([]);
  });

  it('cancel from another process removes the waiting jobs of placement queues too', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    const rq = await open(raw);
    const run = rq.mapRollouts([spec('w1', { placement: { gpu: 'none-here' } }), spec('w2', { placement: { gpu: 'none-here' } })], { runId: 'cancelme' });
    const first = run.next();
    first.catch(() => undefined);
    const queueName = placementQueueName(raw.name, { gpu: 'none-here' });
    const placed = new RawQueue(fx.redis.url, queueName);
    closers.push(() => placed.close());
    await waitFor(async () => (await placed.queue.getJobCountByTypes('waiting', 'prioritized')) === 2, 'both leases waiting in their placement queue', 20_000);
    const other = await open(raw);
    const outcome = await other.cancel('cancelme');
    expect([...outcome.removed].sort()).toEqual(['cancelme.w1', 'cancelme.w2']);
    expect(await placed.queue.getJobCountByTypes('waiting', 'prioritized')).toBe(0);
    await expect(first).rejects.toThrow(/cancelled/);
  });

  it('a placement no worker satisfies ends infrastructure / NoWorker at scheduleToStartMs, though other workers serve the queue', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    await worker(raw, { name: 'pool-cpu', placement: { region: 'eu-west' } });
    const rq = await open(raw);
    const items = await all(rq.mapRollouts([
      spec('gpu', { placement: { gpu: 'h100' }, timeouts: { scheduleToStartMs: 1000 } as RolloutDraft['timeouts'] }),
      spec('cpu', { placement: { region: 'eu-west' }, timeouts: { scheduleToStartMs: 1000 } as RolloutDraft['timeouts'] }),
    ], { runId: 'nogpu' }));
    const byTask = new Map(items.map((r) => [r.taskId, r]));
    expect(byTask.get('cpu')).toMatchObject({ kind: 'ok', worker: 'pool-cpu' });
    expect(byTask.get('gpu')).toMatchObject({ kind: 'infrastructure', error: { type: 'NoWorker', message: expect.stringMatching(/placement queue .* --placement KEY=VALUE/) } });
  });

  it('placementFor(task) places drafts whose spec names no placement; a spec\'s own placement wins', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    const eu = await worker(raw, { name: 'hook-eu', placement: { region: 'eu-west' } });
    const us = await worker(raw, { name: 'hook-us', placement: { region: 'us-east' } });
    const rq = await open(raw, { placementFor: (task) => ({ region: (task as { region: string }).region }) });
    const items = await all(rq.mapRollouts([
      { ...spec('a'), task: { id: 'a', region: 'eu-west' } },
      { ...spec('b'), task: { id: 'b', region: 'us-east' } },
      { ...spec('c', { placement: { region: 'us-east' } }), task: { id: 'c', region: 'eu-west' } },
    ], { runId: 'hook' }));
    const byTask = new Map(items.map((r) => [r.taskId, r.worker]));
    expect(Object.fromEntries(byTask)).toEqual({ a: eu.name, b: us.name, c: us.name });
  });
});

describe('fingerprints', () => {
  it('a spec naming sandbox.fingerprint runs only on a worker with that fingerprint; a mismatch never runs and ends NoWorker', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    const pinned = await worker(raw, { name: 'fp-pinned', fingerprint: 'sha256:aaaa' });
    await worker(raw, { name: 'fp-computed' });
    const rq = await open(raw);
    const items = await all(rq.mapRollouts([
      spec('match', { sandbox: { fingerprint: 'sha256:aaaa' } as RolloutDraft['sandbox'] }),
      spec('match2', { sandbox: { fingerprint: 'sha256:aaaa' } as RolloutDraft['sandbox'] }),
      spec('skew', { sandbox: { fingerprint: 'sha256:bbbb' } as RolloutDraft['sandbox'], timeouts: { scheduleToStartMs: 1000 } as RolloutDraft['timeouts'] }),
    ], { runId: 'fp' }));
    const byTask = new Map(items.map((r) => [r.taskId, r]));
    expect(byTask.get('match')).toMatchObject({ kind: 'ok', worker: pinned.name });
    expect(byTask.get('match2')).toMatchObject({ kind: 'ok', worker: pinned.name });
    expect(byTask.get('skew')).toMatchObject({ kind: 'infrastructure', error: { type: 'NoWorker' }, worker: null });
    // Never started anywhere: no worker saw the lease, and its job was removed.
    for (const w of workers) expect(w.output()).not.toContain('fp.skew');
    expect(await raw.redis.exists(`${TEST_PREFIX}:${placementQueueName(raw.name, { fingerprint: 'sha256:bbbb' })}:fp.skew`)).toBe(0);
  });
});
