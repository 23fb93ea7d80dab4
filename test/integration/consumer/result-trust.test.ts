import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { fixture, makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

// Issue 11 on the worker side: what a Result says is true, and a reward's failure costs one
// rollout. Real worker processes, real children, real sockets.
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** Polls `check` every 50 ms until it is true; throws after `timeoutMs`. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An HTTP judge on `port` answering `{ score: 1 }`, or the given status for the first `failFirst` requests. */
function startJudge(port: number, failFirst = 0, status = 503): Promise<http.Server> {
  let seen = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen += 1;
      res.statusCode = seen <= failFirst ? status : 200;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ score: 1 }));
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

describe('secret values never leave the worker', () => {
  it('an ok Result, its stored return value and the worker log carry [secret NAME], never the value', async () => {
    const q = new RawQueue(redis.url);
    const value = 'sk-test-REPLY-PATH-0123456789';
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 1 }), { MY_API_KEY: value });
    try {
      const spec = makeSpec('leak', 'k1', { run: fixture('leaksSecret'), task: { id: 'k1', secretName: 'MY_API_KEY' }, sandbox: { env: ['MY_API_KEY'] } });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      const result = results.get(spec.leaseId);
      expect(result?.kind).toBe('ok');
      expect(result?.output).toEqual({
        text: 'Bearer [secret MY_API_KEY]',
        nested: [{ deep: '[secret MY_API_KEY]' }],
        '[secret MY_API_KEY]': 'as a key',
        stdout: 'key=[secret MY_API_KEY]\n',
        stdoutTruncated: false,
      });
      const stored = await q.redis.hget(q.queue.toKey(spec.leaseId), 'returnvalue');
      expect(stored).toContain('[secret MY_API_KEY]');
      expect(stored).not.toContain(value);
      expect(worker.output()).toContain('calling with [secret MY_API_KEY]');
      expect(worker.output()).not.toContain(value);
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });
});

describe('meta on the worker side (issue 30)', () => {
  it('a job\'s meta comes back on its Result untouched, a secret value a foreign client put in it redacted', async () => {
    const q = new RawQueue(redis.url);
    const value = 'sk-test-META-PATH-0123456789';
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2 }), { MY_API_KEY: value });
    try {
      // Written by a raw BullMQ client, as a coordinator in another language would: no producer's secret scan.
      const tagged = makeSpec('meta', 'm1', { meta: { candidate: 3, parents: [1, 2], note: null } });
      const leaky = makeSpec('meta', 'm2', { sandbox: { env: ['MY_API_KEY'] }, meta: { candidate: 4, key: `Bearer ${value}` } });
      await q.add([tagged, leaky]);
      const { results } = await q.waitForAll([tagged.leaseId, leaky.leaseId]);
      expect(results.get(tagged.leaseId)).toMatchObject({ kind: 'ok', meta: { candidate: 3, parents: [1, 2], note: null } });
      expect(results.get(leaky.leaseId)).toMatchObject({ kind: 'ok', meta: { candidate: 4, key: 'Bearer [secret MY_API_KEY]' } });
      expect(await q.redis.hget(q.queue.toKey(leaky.leaseId), 'returnvalue')).not.toContain(value);
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });
});

describe('reward semantics of the executor contract', () => {
  it('a reward that blocks the event loop is killed at timeouts.runMs: one model RewardTimeout, first attempt', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 1 }));
    try {
      const spec = makeSpec('hang', 'r1', { reward: fixture('spinsForever'), timeouts: { runMs: 1500, hangMs: 120_000 } });
      const run = makeSpec('hang', 'r2', { run: fixture('spins', { ms: 600_000 }), timeouts: { runMs: 1000, hangMs: 120_000 } });
      await q.add([spec, run]);
      const { results } = await q.waitForAll([spec.leaseId, run.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'model', attempts: 1, redispatched: 0, error: { type: 'RewardTimeout' } });
      expect(results.get(spec.leaseId)?.error?.message).toContain('timeouts.runMs = 1500 ms');
      expect(results.get(run.leaseId)).toMatchObject({ kind: 'model', attempts: 1, redispatched: 0, error: { type: 'RunTimeout' } });
      expect(results.get(run.leaseId)?.error?.message).toContain('timeouts.runMs = 1000 ms');
      expect(await q.counters('hang')).toMatchObject({ redispatched: 0 });
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });

  it('a reward past its own timeouts.rewardMs is model RewardTimeout with the output kept', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 1 }));
    try {
      const spec = makeSpec('slowreward', 'r1', { reward: fixture('blocksForever'), timeouts: { runMs: 60_000, rewardMs: 300, hangMs: 120_000 } });
      await q.add([spec]);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'model', redispatched: 0, error: { type: 'RewardTimeout' }, output: { taskId: 'r1' } });
      expect(results.get(spec.leaseId)?.error?.message).toContain('timeouts.rewardMs = 300 ms');
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });

  it('a judge that refuses the first connection, then answers: ok, redispatched 1', async () => {
    const q = new RawQueue(redis.url);
    // A long back-off leaves time to start the judge between the two attempts.
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 1, transientBackoffMs: 4000 }));
    const port = await freePort();
    let judge: http.Server | undefined;
    try {
      const spec = makeSpec('judge', 'j1', { reward: fixture('fetchesJudge'), task: { id: 'j1', judgePort: port } });
      await q.add([spec]);
      await until(async () => (await q.counters('judge')).redispatched === 1, 'the first re-dispatch');
      expect(await q.queue.getJobState(spec.leaseId)).toBe('delayed');
      judge = await startJudge(port);
      const { results } = await q.waitForAll([spec.leaseId]);
      expect(results.get(spec.leaseId)).toMatchObject({ kind: 'ok', reward: 1, redispatched: 1, attempts: 2 });
      expect(worker.output()).toContain('ECONNREFUSED');
    } finally {
      judge?.close();
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });

  it('HTTP 503 once is transient (ok after one re-dispatch); refused on every try ends infrastructure with the cause chain', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2, transientBackoffMs: 50 }));
    const port = await freePort();
    const dead = await freePort();
    const judge = await startJudge(port, 1, 503);
    try {
      const flaky = makeSpec('judge2', 'flaky', { reward: fixture('fetchesJudge'), task: { id: 'flaky', judgePort: port } });
      const gone = makeSpec('judge2', 'gone', { reward: fixture('fetchesJudge'), task: { id: 'gone', judgePort: dead } });
      await q.add([flaky, gone]);
      const { results } = await q.waitForAll([flaky.leaseId, gone.leaseId]);
      expect(results.get(flaky.leaseId)).toMatchObject({ kind: 'ok', reward: 1, redispatched: 1 });
      expect(results.get(gone.leaseId)).toMatchObject({ kind: 'infrastructure', redispatched: 2, error: { type: 'RedispatchLimit' } });
      expect(results.get(gone.leaseId)?.error?.message).toContain(`fetch failed: connect ECONNREFUSED 127.0.0.1:${dead}`);
    } finally {
      judge.close();
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });
});
