import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue } from '../../../src/producer/index.js';
import type { RolloutDraft } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// A first attempt of a job the producer added has nothing for the lease ledger to count: the
// worker takes its queuedMs and finishedAt from the extrapolated Redis clock and sends the
// ledger no script. Attempts after a crash still go through the ledger (re-dispatch counts).
let redis: TestRedis;
let raw: RawQueue;
let worker: WorkerProcess;
let monitor: ChildProcess;
/** Commands the worker's ledger connection sent, in order: [command]. */
const ledgerCommands: string[][] = [];

beforeAll(async () => {
  redis = await startRedis({ private: true });
  raw = new RawQueue(redis.url);
  worker = await startWorkerProcess(raw.workerOptions({ concurrency: 2 }));
  const clients = (await raw.redis.client('LIST')) as string;
  const ledger = clients.split('\n').find((line) => line.includes(`name=${TEST_PREFIX}:rollout-queue:ledger`));
  const address = /addr=(\S+)/.exec(ledger ?? '')?.[1];
  if (!address) throw new Error(`no ledger connection among the clients:\n${clients}`);
  // redis-cli's MONITOR, not ioredis' monitor(): under load the latter's duplicated connection
  // took MONITOR output for the reply to its ready check ("Command queue state error", seen in CI).
  // Ready once redis-cli prints MONITOR's OK.
  monitor = spawn('redis-cli', ['-u', redis.url, 'monitor'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    monitor.once('exit', (code) => reject(new Error(`redis-cli monitor exited with ${code}`)));
    createInterface({ input: monitor.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line === 'OK') resolve();
      const seen = /^\d+\.\d+ \[\d+ (\S+)\] "([^"]+)"/.exec(line);
      if (seen?.[1] === address) ledgerCommands.push([seen[2] as string]);
    });
  });
});
afterAll(async () => {
  monitor?.kill();
  worker.signal('SIGTERM');
  await worker.exited();
  await raw.close();
  await redis.stop();
});

const scriptCalls = (): string[][] => ledgerCommands.filter(([command]) => /^eval(sha)?$/i.test(command ?? ''));

async function run(runId: string, drafts: RolloutDraft[]): Promise<Result[]> {
  const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: createLogger({}, { write: () => true }) });
  const results: Result[] = [];
  try {
    for await (const result of rq.mapRollouts(drafts, { runId })) results.push(result);
  } finally {
    await rq.close();
  }
  return results;
}

describe('the lease ledger on the hot path', () => {
  it('is not called for clean first attempts, whose timings still come from the Redis clock', async () => {
    ledgerCommands.length = 0;
    const drafts = Array.from({ length: 20 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}`, delayMs: i % 2 ? 20 : 0 }, run: fixture('echo'), reward: fixture('constant') }));
    const results = await run('clean', drafts);
    const [seconds] = await raw.redis.time();
    expect(results.map((result) => result.kind)).toEqual(Array(20).fill('ok'));
    for (const result of results) {
      expect(result.redispatched).toBe(0);
      expect(result.queuedMs).not.toBeNull();
      expect(result.queuedMs as number).toBeGreaterThanOrEqual(0);
      expect(Math.abs(Date.parse(result.finishedAt) - Number(seconds) * 1000)).toBeLessThan(60_000);
    }
    expect(scriptCalls()).toEqual([]);
  });

  it('is called again once a lease was re-dispatched, and counts it', async () => {
    ledgerCommands.length = 0;
    const results = await run('crashy', [{ rendered: 'x', task: { id: 'c' }, run: fixture('crashesUntilAttempt', { succeedOnAttempt: 2 }), reward: fixture('constant') }]);
    expect(results.map((result) => [result.kind, result.redispatched])).toEqual([['ok', 1]]);
    expect(results[0]?.queuedMs).not.toBeNull();
    expect(scriptCalls().length).toBeGreaterThan(0);
  });
});
