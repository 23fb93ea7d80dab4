#!/usr/bin/env node
// Throughput of trivial rollouts through three stacks on the same Redis, in one run:
//   1. raw BullMQ: in-process processor (no isolation at all);
//   2. BullMQ sandboxed processor (its child pool, what docs/design.md's alternative would use);
//   3. rollout-queue: RolloutQueue.mapRollouts → RolloutWorker → supervised child per slot.
// Prints rollouts/s of each and the ratios. Usage: node bench/throughput.mjs [N] [CONCURRENCY]
// Redis: REDIS_URL, else a private redis-server on a free loopback port (removed afterwards).
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { RolloutQueue } from '../dist/producer/index.js';
import { RolloutWorker } from '../dist/consumer/index.js';
import { createLogger } from '../dist/platform/logger.js';
import { benchRedis } from './bench-redis.mjs';

const N = Number(process.argv[2] ?? 500);
const CONCURRENCY = Number(process.argv[3] ?? 4);
const here = path.dirname(fileURLToPath(import.meta.url));
const quiet = createLogger({}, { write: () => true });

async function bullmq(url, processor, label) {
  const name = `bench-${label}-${Date.now()}`;
  const connection = { url };
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  await events.waitUntilReady();
  const worker = new Worker(name, processor, { connection, concurrency: CONCURRENCY });
  await worker.waitUntilReady();
  let done = 0;
  const finished = new Promise((resolve) => events.on('completed', () => ++done === N && resolve()));
  const started = performance.now();
  await queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'r', data: { i }, opts: { jobId: `j-${i}` } })));
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await events.close();
  await queue.obliterate({ force: true });
  await queue.close();
  return N / seconds;
}

async function rolloutQueue(url) {
  const name = `bench-rq-${Date.now()}`;
  const worker = await RolloutWorker.create({ redisUrl: url, queue: name, concurrency: CONCURRENCY, allow: ['rq-fixtures/*'], logger: quiet });
  const rq = await RolloutQueue.create({ redisUrl: url, queue: name, logger: quiet, maxInFlight: 1000 });
  const drafts = Array.from({ length: N }, (_, i) => ({
    rendered: 'x',
    task: { id: `t-${i}` },
    run: { $ref: 'rq-fixtures/failures:echo', config: {} },
    reward: { $ref: 'rq-fixtures/failures:constant', config: {} },
  }));
  const started = performance.now();
  let count = 0;
  for await (const result of rq.mapRollouts(drafts, { runId: `bench-${Date.now()}` })) {
    if (result.kind !== 'ok') throw new Error(`unexpected ${result.kind}: ${result.error?.message}`);
    count++;
  }
  const seconds = (performance.now() - started) / 1000;
  if (count !== N) throw new Error(`expected ${N} results, got ${count}`);
  await rq.close();
  await worker.close();
  return N / seconds;
}

const redis = await benchRedis();
try {
  const raw = await bullmq(redis.url, async (job) => ({ id: job.id }), 'inproc');
  const sandboxed = await bullmq(redis.url, path.join(here, 'fixtures', 'bullmq-sandboxed-processor.mjs'), 'sandboxed');
  const ours = await rolloutQueue(redis.url);
  console.log(`rollouts: ${N}, concurrency: ${CONCURRENCY}, node ${process.version}, ${os.cpus().length} cores`);
  console.log(`raw BullMQ, in-process processor : ${raw.toFixed(0)} rollouts/s`);
  console.log(`BullMQ sandboxed processor       : ${sandboxed.toFixed(0)} rollouts/s`);
  console.log(`rollout-queue (supervised pool)  : ${ours.toFixed(0)} rollouts/s`);
  console.log(`ratio rollout-queue / raw BullMQ        : ${(ours / raw).toFixed(2)}`);
  console.log(`ratio rollout-queue / BullMQ sandboxed  : ${(ours / sandboxed).toFixed(2)}`);
} finally {
  await redis.stop();
}
