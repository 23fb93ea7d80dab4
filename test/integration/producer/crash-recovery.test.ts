import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Result } from '../../../src/spec/index.js';
import { ProducerFixture, TEST_PREFIX, collect } from '../../helpers/producer-fixture.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { drafts } from '../../helpers/rollout-drafts.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

let redis: TestRedis;
let fx: ProducerFixture;
let dir: string;

beforeAll(async () => {
  // Private, with AOF: the second test restarts Redis mid-run and needs the data back.
  redis = await startRedis({ private: true, appendfsync: 'always' });
  fx = new ProducerFixture(redis.url);
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-producer-'));
});
afterEach(async () => fx.cleanup());
afterAll(async () => {
  await fx.end();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('coordinator crash', () => {
  it.each([1, 3])('SIGKILL mid-run (maxUnacknowledged %i), then a new coordinator with the same runId: every lease delivered, none enqueued twice', async (maxUnacknowledged) => {
    const queue = fx.queueName();
    const inspect = fx.inspect(queue);
    await fx.worker(queue, { concurrency: 2 });
    const runId = fx.runId();
    const out = path.join(dir, `${runId}.jsonl`);
    const count = 20;
    const child = spawn(process.execPath, ['--import', './test/helpers/ts-loader.mjs', 'test/helpers/producer-child.ts'], {
      cwd: repo,
      env: {
        ...process.env, REDIS_URL: redis.url, RQ_QUEUE: queue, RQ_PREFIX: TEST_PREFIX, RQ_RUN_ID: runId,
        RQ_COUNT: String(count), RQ_OUT: out, RQ_MAX_IN_FLIGHT: '4', RQ_DELAY_MS: '40', RQ_MAX_UNACKNOWLEDGED: String(maxUnacknowledged),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    let lines = 0;
    for await (const line of createInterface({ input: child.stdout })) {
      if (line.startsWith('result ') && ++lines === 8) {
        child.kill('SIGKILL');
        break;
      }
    }
    expect(await exited, stderr).toBe('SIGKILL');

    const before = (await readFile(out, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Result);
    expect(before.length).toBeGreaterThanOrEqual(8);
    expect(before.length).toBeLessThan(count);

    const rq = await fx.open(queue);
    const { items, error } = await collect(rq.mapRollouts(drafts(count, { delayMs: 40 }), { runId }));
    expect(error).toBeUndefined();
    const all = [...before, ...items];
    const perLease = new Map<string, number>();
    for (const r of all) perLease.set(r.leaseId, (perLease.get(r.leaseId) ?? 0) + 1);
    expect(perLease.size).toBe(count);
    // At least once towards the consumer: only Results the child printed but had not yet
    // acknowledged (killed between the two) may come twice, never more than maxUnacknowledged.
    expect([...perLease.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(maxUnacknowledged);
    const record = (await rq.status(runId)).run;
    expect(record).toMatchObject({ status: 'completed', enqueued: count, delivered: count, kinds: { ok: count } });
    // Delivered jobs leave BullMQ's completed set at once (retention); their hashes stay until they expire.
    expect(await fx.jobHashes(queue, runId)).toBe(count);
  });
});

describe('Redis restart', () => {
  it('a live mapRollouts survives Redis going away and coming back (AOF), and completes', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue, { reconcileMs: 100 });
    // A completion in flight when Redis died is lost on the worker side; the job stays active
    // until BullMQ's stalled check re-dispatches it, so keep that short (defaults take 30-60 s).
    await fx.worker(queue, { concurrency: 2, workerOptions: { lockDuration: 1000, stalledInterval: 500, maxStalledCount: 2 } });
    let seen = 0;
    const runId = fx.runId();
    const { items, error } = await collect(rq.mapRollouts(drafts(12, { delayMs: 30 }), { runId }), async () => {
      if (++seen === 4) {
        await redis.kill();
        await redis.restart();
      }
    });
    expect(error).toBeUndefined();
    expect(new Set(items.map((r) => r.leaseId)).size).toBe(12);
    expect((await rq.status(runId)).run).toMatchObject({ status: 'completed', delivered: 12, kinds: { ok: 12 } });
  });
});
