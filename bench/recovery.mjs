#!/usr/bin/env node
// How long a SIGKILLed worker's lease takes to be re-dispatched and started elsewhere, with
// the worker's default lockDuration (5 s) and stalledInterval (2 s). Real processes, real
// signal, one private Redis. Usage: node bench/recovery.mjs [TRIALS]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Queue } from 'bullmq';
import { RolloutSpecSchema } from '../dist/spec/index.js';
import { startLocalRedis } from '../dist/cli/local-redis.js';

const TRIALS = Number(process.argv[2] ?? 3);
const bin = path.join(import.meta.dirname, '..', 'bin', 'rollout-queue.js');

function startWorker(url, queue) {
  const proc = spawn(process.execPath, [bin, 'worker', '--queue', queue, '--allow', 'rq-fixtures/*', '--concurrency', '1'], {
    env: { ...process.env, REDIS_URL: url, LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  return proc;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Its own Redis always: the trials SIGKILL workers, never a shared server's clients.
const redis = await startLocalRedis();
const { url } = redis;
const samples = [];
try {
  for (let trial = 0; trial < TRIALS; trial++) {
    const name = `recovery-${trial}`;
    const queue = new Queue(name, { connection: { url }, prefix: 'rq' });
    const first = startWorker(url, name);
    await sleep(1500);
    const spec = RolloutSpecSchema.parse({
      v: 1, leaseId: `r${trial}.long`, runId: `r${trial}`, runAttemptId: 'a', rendered: 'x', task: { id: 'long', delayMs: 120_000 },
      run: { $ref: 'rq-fixtures/failures:echo', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} },
    });
    await queue.add('rollout', spec, { jobId: spec.leaseId });
    while ((await queue.getJobState(spec.leaseId)) !== 'active') await sleep(20);
    const second = startWorker(url, name);
    await sleep(1500);
    const killedAt = performance.now();
    first.kill('SIGKILL');
    for (;;) {
      const job = await queue.getJob(spec.leaseId);
      if (job && job.attemptsStarted >= 2 && (await job.getState()) === 'active') break;
      await sleep(20);
    }
    samples.push((performance.now() - killedAt) / 1000);
    second.kill('SIGKILL');
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
  }
  samples.sort((a, b) => a - b);
  console.log(`SIGKILL → lease running on another worker, defaults (lockDuration 5 s, stalledInterval 2 s), ${TRIALS} trials:`);
  console.log(`min ${samples[0].toFixed(1)} s, median ${samples[Math.floor(samples.length / 2)].toFixed(1)} s, max ${samples.at(-1).toFixed(1)} s`);
} finally {
  await redis.stop();
}
