import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { isAlive, startWorkerProcess } from '../../helpers/worker-process.js';

const pexecFile = promisify(execFile);
const COORDINATOR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'coordinator-big-output.mjs');
const MIB = 1024 * 1024;

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

// Issue 33 item 6: sizes bounded on both sides.
describe('sizes bounded on both sides', () => {
  it('a 100 MB job written straight into Redis by another client ends caller / SpecTooLarge at the worker, not run; the worker goes on', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2 }));
    try {
      const huge = makeSpec('sizes', 'huge', { rendered: 'x'.repeat(100 * 1000 * 1000) });
      const small = makeSpec('sizes', 'small');
      // BullMQ's own Queue.add, as any other client would write it: no producer-side limit.
      await q.add([huge, small]);
      const { results, failed } = await q.waitForAll([huge.leaseId, small.leaseId], 120_000);
      expect(failed.size).toBe(0);
      const refused = results.get(huge.leaseId);
      expect(refused).toMatchObject({ kind: 'caller', output: null, reward: null, error: { type: 'SpecTooLarge' } });
      expect(refused?.error?.message).toMatch(/over this worker's maxSpecBytes = 67108864 bytes of JSON data, so it was not run; .*--max-spec-bytes/);
      expect(results.get(small.leaseId)?.kind).toBe('ok');
      expect(isAlive(worker.pid)).toBe(true);
      expect(worker.output()).toContain('job over maxSpecBytes = 67108864 reported as caller Result');
    } finally {
      await worker.kill();
      await q.close();
    }
  }, 180_000);

  it('a run function returning 60 MiB: the coordinator (library + the CLI results file) stays within 300 MiB of its RSS before the run', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 1 }));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-sizes-'));
    try {
      const out = path.join(dir, 'results.jsonl');
      const { stdout } = await pexecFile(process.execPath, [COORDINATOR], {
        env: { ...process.env, REDIS_URL: redis.url, RQ_QUEUE: q.name, RQ_PREFIX: TEST_PREFIX, RQ_RUN_ID: 'bigout', RQ_COUNT: '1', RQ_OUTPUT_BYTES: String(60 * MIB), RQ_OUT: out },
        maxBuffer: MIB,
      });
      const { results, baseMb, peakMb } = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { results: number; baseMb: number; peakMb: number };
      expect(results).toBe(1);
      // Before issue 33 the same run peaked 430–550 MiB above its start (527–643 MiB RSS); one copy of the output is 60 MiB.
      expect(peakMb - baseMb).toBeLessThan(300);
      const line = JSON.parse((await readFile(out, 'utf8')).trim()) as { kind: string; output: { answer: number; text: string } };
      expect(line.kind).toBe('ok');
      expect(line.output.text.length).toBe(60 * MIB);
    } finally {
      await worker.kill();
      await q.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
