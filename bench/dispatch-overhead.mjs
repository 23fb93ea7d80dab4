#!/usr/bin/env node
// Per-call overhead of queueDispatch: a no-op Dispatch called in-process vs the same no-op
// through queueDispatch → durable queue → a worker process (child per slot) → back, and vs the
// hand-written adapter it replaces (a RolloutQueue created, used for one rollout() and closed per
// call: connection and QueueEvents start-up every time; it runs CALLS/10 calls).
// Each trial is a fresh Node process (no warm JIT or connection carried over), trials of the two
// modes interleaved, REPS repetitions; each trial makes WARMUP calls, then CALLS timed sequential
// calls and reports their p50. Prints min/median/max of the trials' p50 per mode, the added ms
// and the ratio. Goal (issue 12): ≤ 10 ms p50 added.
// Usage: node bench/dispatch-overhead.mjs [CALLS=200] [REPS=3]
// Redis: REDIS_URL, else a private redis-server on a free loopback port (removed afterwards).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchRedis } from './bench-redis.mjs';

const here = fileURLToPath(import.meta.url);
const WARMUP = 20;

async function trial(mode, calls, url, queue) {
  const { createLogger } = await import('../dist/platform/logger.js');
  const quiet = createLogger({}, { write: () => true });
  let call;
  let close = async () => {};
  if (mode === 'in-process') {
    const { noop } = await import('../test/fixtures/rq-fixtures/dispatches.js');
    const dispatch = noop();
    call = (i) => dispatch({ i }, { cellId: `c${i}`, runAttemptId: 'bench', rep: 0, seed: 0 });
  } else if (mode === 'adapter-per-call') {
    const { RolloutQueue } = await import('../dist/producer/index.js');
    call = async (i) => {
      const rq = await RolloutQueue.create({ redisUrl: url, queue, logger: quiet });
      try {
        const result = await rq.rollout({
          rendered: '',
          task: { id: `c${i}`, scenario: { i }, cellId: `c${i}`, runAttemptId: 'bench', rep: 0, seed: 0 },
          run: { $ref: 'rollout-queue/dispatch:dispatchRunner', config: { dispatch: { $ref: 'rq-fixtures/dispatches:noop', config: {} } } },
          reward: { $ref: 'rollout-queue/dispatch:noReward', config: {} },
        }, { runId: `adapter-${process.pid}-${i}` });
        return result.output.artifact;
      } finally {
        await rq.close();
      }
    };
  } else {
    const { queueDispatch } = await import('../dist/harness/coordinator/index.js');
    const dispatch = queueDispatch({ dispatch: { $ref: 'rq-fixtures/dispatches:noop', config: {} }, producerOptions: { redisUrl: url, queue, logger: quiet } });
    await dispatch.ready();
    const attempt = `bench-${process.pid}`;
    call = (i) => dispatch({ i }, { cellId: `c${i}`, runAttemptId: attempt, rep: 0, seed: 0 });
    close = () => dispatch.close();
  }
  const ms = [];
  for (let i = 0; i < WARMUP + calls; i++) {
    const started = performance.now();
    const artifact = await call(i);
    if (artifact?.i !== i) throw new Error(`call ${i} returned ${JSON.stringify(artifact)}`);
    if (i >= WARMUP) ms.push(performance.now() - started);
  }
  await close();
  ms.sort((a, b) => a - b);
  process.stdout.write(`${JSON.stringify({ p50: ms[Math.floor(ms.length / 2)], p90: ms[Math.floor(ms.length * 0.9)] })}\n`);
}

function run(args, env = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
    let out = '';
    proc.stdout.on('data', (chunk) => (out += chunk));
    proc.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}`))));
  });
}

const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0], median: sorted[Math.floor(sorted.length / 2)], max: sorted[sorted.length - 1] };
};
const f = (n) => n.toFixed(3).padStart(9);

async function main() {
  const calls = Number(process.argv[2] ?? 200);
  const reps = Number(process.argv[3] ?? 3);
  const redis = await benchRedis();
  const { url } = redis;
  const queue = `bench-dispatch-${Date.now()}`;
  const { RolloutWorker } = await import('../dist/consumer/index.js');
  const { createLogger } = await import('../dist/platform/logger.js');
  const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency: 1, allow: ['rq-fixtures/*'], logger: createLogger({}, { write: () => true }) });
  const p50 = { 'in-process': [], queueDispatch: [], 'adapter-per-call': [] };
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const mode of Object.keys(p50)) {
        const n = mode === 'adapter-per-call' ? Math.max(5, Math.floor(calls / 10)) : calls;
        const out = await run([here, '--trial', mode, String(n), url, queue]);
        p50[mode].push(JSON.parse(out.trim().split('\n').pop()).p50);
      }
    }
  } finally {
    await worker.close();
    await redis.stop();
  }
  const base = stats(p50['in-process']);
  const queued = stats(p50.queueDispatch);
  const adapter = stats(p50['adapter-per-call']);
  console.log(`dispatch overhead: ${reps} trials × ${calls} sequential calls per mode (fresh process each, interleaved), worker concurrency 1`);
  console.log(`mode            p50 ms: min       median    max`);
  console.log(`in-process no-op       ${f(base.min)} ${f(base.median)} ${f(base.max)}`);
  console.log(`queueDispatch no-op    ${f(queued.min)} ${f(queued.median)} ${f(queued.max)}`);
  console.log(`adapter per call       ${f(adapter.min)} ${f(adapter.median)} ${f(adapter.max)}   (RolloutQueue.create + rollout + close per call)`);
  console.log(`added p50 (median of trials): ${(queued.median - base.median).toFixed(3)} ms; ratio queueDispatch / in-process: ${(queued.median / base.median).toFixed(0)}×; goal ≤ 10 ms added: ${queued.median - base.median <= 10 ? 'met' : 'NOT met'}; the per-call adapter is ${(adapter.median / queued.median).toFixed(1)}× slower`);
}

if (process.argv[2] === '--trial') await trial(process.argv[3], Number(process.argv[4]), process.argv[5], process.argv[6]);
else await main();
