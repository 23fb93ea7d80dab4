import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(tmpdir(), 'rq-skew-'));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('sandbox.requires: version skew (real worker process)', () => {
  it('a range the worker cannot satisfy ends infrastructure/VersionSkew and never runs; a satisfiable one runs ok', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions());
    try {
      const run = 'skew';
      const skewMarker = path.join(dir, 'skew.txt');
      const okMarker = path.join(dir, 'ok.txt');
      const skewed = makeSpec(run, 'skewed', { run: fixture('writesMarker', { path: skewMarker }), sandbox: { env: [], memoryMb: 1024, requires: { 'rollout-queue': '>=99' } } });
      const satisfied = makeSpec(run, 'satisfied', {
        run: fixture('writesMarker', { path: okMarker }),
        sandbox: { env: [], memoryMb: 1024, requires: { 'rollout-queue': '>=0.1.0 <1.0.0', semver: '^7.0.0' } },
      });
      const missing = makeSpec(run, 'missing', { run: fixture('writesMarker', { path: skewMarker }), sandbox: { env: [], memoryMb: 1024, requires: { 'no-such-package-rq': '^1.0.0' } } });
      const specs = [skewed, satisfied, missing];
      await q.add(specs);
      const { results, failed } = await q.waitForAll(specs.map((s) => s.leaseId));
      expect(failed.size).toBe(0);

      const skew = results.get(skewed.leaseId);
      expect(skew).toMatchObject({ kind: 'infrastructure', error: { type: 'VersionSkew' }, redispatched: 2, attempts: 3, runMs: null });
      expect(skew?.error?.message).toContain('rollout-queue 0.1.0');
      expect(skew?.error?.message).toContain('sandbox.requires["rollout-queue"] = ">=99"');
      expect(results.get(missing.leaseId)).toMatchObject({ kind: 'infrastructure', error: { type: 'VersionSkew' } });
      expect(results.get(missing.leaseId)?.error?.message).toContain('no-such-package-rq (not installed)');
      // Never ran: the fixture would have written the marker.
      expect(existsSync(skewMarker)).toBe(false);

      expect(results.get(satisfied.leaseId)).toMatchObject({ kind: 'ok', output: { marked: true } });
      expect(readFileSync(okMarker, 'utf8')).toBe('ran satisfied\n');

      // Loud: one error line per refused attempt naming package, range and installed version.
      const lines = worker.output().split('\n').filter((line) => line.includes('"version skew') && line.includes('"leaseId":"skew.skewed"'));
      expect(lines).toHaveLength(3);
      expect(JSON.parse(lines[0] as string)).toMatchObject({ package: 'rollout-queue', range: '>=99', installed: '0.1.0' });
      expect(await q.counters(run)).toEqual({ redispatched: 4, duplicatesDropped: 0 });
    } finally {
      worker.signal('SIGTERM');
      expect((await worker.exited()).code).toBe(0);
      await q.close();
    }
  });
});
