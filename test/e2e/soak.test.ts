import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readRunRecord } from '../../src/lease/index.js';
import type { Result } from '../../src/spec/index.js';
import { startRedis } from '../helpers/redis.js';
import { RawQueue, TEST_PREFIX } from '../helpers/raw-queue.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

const COORDINATOR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'coordinator-main.mjs');
const TOTAL = 2000;
const FAST = { lockDurationMs: 2000, stalledIntervalMs: 1000, concurrency: 4 };

function startCoordinator(env: NodeJS.ProcessEnv): { proc: ChildProcess; results: () => number; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [COORDINATOR], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = 0;
  let stderr = '';
  proc.stdout?.on('data', (chunk: Buffer) => {
    const last = /result (\d+)\n(?![\s\S]*result)/.exec(chunk.toString());
    if (last) seen = Number(last[1]);
  });
  proc.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      if (code !== 0 && code !== null) console.error(stderr);
      resolve(code);
    }),
  );
  return { proc, results: () => seen, exited };
}

describe('soak: 2,000 rollouts, 3 workers, a worker SIGKILLed and replaced every few seconds, one coordinator SIGKILL', () => {
  it('delivers exactly 2,000 Results, each lease once', async () => {
    const redis = await startRedis();
    const raw = new RawQueue(redis.url);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-soak-'));
    const out = path.join(dir, 'results.jsonl');
    const env = { REDIS_URL: redis.url, RQ_QUEUE: raw.name, RQ_PREFIX: TEST_PREFIX, RQ_RUN_ID: 'soak', RQ_COUNT: String(TOTAL), RQ_OUT: out, RQ_DELAY_MS: '15' };
    let workers: WorkerProcess[] = await Promise.all([0, 1, 2].map(() => startWorkerProcess(raw.workerOptions(FAST))));
    let kills = 0;
    /** Kills that left rollouts of the victim active (BullMQ's processedBy): each re-dispatches. */
    let hits = 0;
    let chaos = true;
    const activeOn = async (name: string): Promise<boolean> => (await raw.queue.getActive()).some((job) => job.processedBy === name);
    const chaosLoop = (async () => {
      for (let round = 0; chaos && round < 60; round++) {
        await new Promise((r) => setTimeout(r, 2500));
        if (!chaos) break;
        const victim = workers[round % workers.length] as WorkerProcess;
        // A kill between runs (the coordinator restarting, the queue drained) re-dispatches
        // nothing: the victim must hold a rollout first. No event says so: looked at every 20 ms.
        const until = Date.now() + 5_000;
        while (chaos && Date.now() < until && !(await activeOn(victim.name))) await new Promise((r) => setTimeout(r, 20));
        if (!chaos) break;
        await victim.kill();
        kills++;
        if (await activeOn(victim.name)) hits++;
        const replacement = await startWorkerProcess(raw.workerOptions(FAST));
        workers = workers.map((w) => (w === victim ? replacement : w));
      }
    })();
    try {
      const first = startCoordinator(env);
      const until = Date.now() + 120_000;
      while (first.results() < TOTAL / 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      first.proc.kill('SIGKILL');
      await first.exited;
      const second = startCoordinator(env);
      expect(await second.exited).toBe(0);
      chaos = false;
      await chaosLoop;

      const lines = readFileSync(out, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Result);
      const leases = lines.map((r) => r.leaseId);
      expect(leases).toHaveLength(TOTAL);
      expect(new Set(leases).size).toBe(TOTAL);
      for (const result of lines) expect(['ok', 'infrastructure']).toContain(result.kind);
      const record = await readRunRecord(raw.redis, raw.keys, 'soak');
      expect(record).toMatchObject({ status: 'completed', delivered: TOTAL, enqueued: TOTAL });
      expect(kills).toBeGreaterThan(0);
      expect(hits).toBeGreaterThan(0);
      expect(record?.redispatched).toBeGreaterThanOrEqual(hits);
    } finally {
      chaos = false;
      await chaosLoop;
      for (const w of workers) w.signal('SIGTERM');
      await Promise.all(workers.map((w) => w.exited()));
      await raw.close();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
