#!/usr/bin/env node
// Where the CPU of a no-op rollout goes, per process: the trial's main process (coordinator and
// worker), its rollout children, and Redis, for rollout-queue and for BullMQ's sandboxed
// processor, c=8. A diagnostic beside bench/suite.mjs (whose row gives the sum): each trial is a
// fresh process, the sides interleaved A B A B; CPU is summed over every thread of a process from
// /proc/<pid>/task/*/schedstat (ns, not the 10 ms ticks of /proc/<pid>/stat, which at 8 children
// and 800 rollouts would blur a child's share by ±0.1 ms per rollout), over the timed section only.
// The main process is also split into its JS thread and its other threads: V8's background
// TurboFan compiles and GC helpers, libuv's pool (with --no-concurrent-recompilation the other
// threads fell to ~12 ms per 800 rollouts on both sides, so there they are mostly compiles).
// Usage: node bench/cpu-split.mjs [N=8000] [REPS=3]   (REDIS_URL, else a private redis-server)
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRedis } from './bench-redis.mjs';
import { threadCpuMs, threadsCpuMs } from './proc-cpu.mjs';

const here = fileURLToPath(import.meta.url);

/** This process' direct children (the rollout children / BullMQ's sandbox children). */
function children() {
  const found = [];
  for (const tid of readdirSync('/proc/self/task')) {
    for (const part of readFileSync(`/proc/self/task/${tid}/children`, 'utf8').split(' ')) if (part) found.push(Number(part));
  }
  return found;
}

async function redisCpuMs(redis) {
  const info = await redis.info('cpu');
  const field = (key) => Number(new RegExp(`${key}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_sys') + field('used_cpu_user')) * 1000;
}

/** Runs `body` as the timed section; returns CPU ms per rollout of each process kind. */
async function split(redis, n, body) {
  const kids = children();
  const k0 = kids.map(threadsCpuMs);
  const m0 = threadsCpuMs(process.pid);
  const j0 = threadCpuMs(process.pid);
  const r0 = await redisCpuMs(redis);
  await body();
  const m1 = threadsCpuMs(process.pid);
  const j1 = threadCpuMs(process.pid);
  const r1 = await redisCpuMs(redis);
  const k1 = kids.map(threadsCpuMs);
  const childMs = k1.reduce((sum, value, i) => sum + value - k0[i], 0);
  const js = (j1 - j0) / n;
  return { main: (m1 - m0) / n, 'main: JS thread': js, 'main: other threads': (m1 - m0) / n - js, children: childMs / n, redis: (r1 - r0) / n };
}

const echo = { $ref: 'rq-fixtures/failures:echo', config: {} };
const constant = { $ref: 'rq-fixtures/failures:constant', config: {} };

const TRIALS = {
  async ours(url, n) {
    const { RolloutQueue } = await import('../dist/producer/index.js');
    const { RolloutWorker } = await import('../dist/consumer/index.js');
    const { createLogger } = await import('../dist/platform/logger.js');
    const { Redis } = await import('ioredis');
    const logger = createLogger({}, { write: () => true });
    const queue = `split-${process.pid}`;
    const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency: 8, allow: ['rq-fixtures/*'], logger });
    const rq = await RolloutQueue.create({ redisUrl: url, queue, logger, maxInFlight: 2000 });
    const drain = async (drafts) => {
      for await (const result of rq.mapRollouts(drafts, { runId: `split-${process.pid}-${drafts.length}` })) if (result.kind !== 'ok') throw new Error(`${result.kind}: ${result.error?.message}`);
    };
    // One rollout per child first, as bench/suite.mjs warms its slots.
    await drain(Array.from({ length: 8 }, (_, i) => ({ rendered: 'x', task: { id: `w-${i}`, delayMs: 30 }, run: echo, reward: constant })));
    const probe = new Redis(url);
    const out = await split(probe, n, () => drain(Array.from({ length: n }, (_, i) => ({ rendered: 'x', task: { id: `t-${i}` }, run: echo, reward: constant }))));
    probe.disconnect();
    await rq.close();
    await worker.close();
    return out;
  },
  async sandboxed(url, n) {
    const { Queue, QueueEvents, Worker } = await import('bullmq');
    const { Redis } = await import('ioredis');
    const name = `split-bull-${process.pid}`;
    const connection = { url };
    const queue = new Queue(name, { connection });
    const events = new QueueEvents(name, { connection });
    await events.waitUntilReady();
    const worker = new Worker(name, path.join(path.dirname(here), 'fixtures', 'bullmq-sandboxed-processor.mjs'), { connection, concurrency: 8 });
    await worker.waitUntilReady();
    await Promise.all(Array.from({ length: 8 }, (_, i) => queue.add('w', {}, { jobId: `warm-${i}` }).then((job) => job.waitUntilFinished(events))));
    const probe = new Redis(url);
    const out = await split(probe, n, async () => {
      let done = 0;
      const finished = new Promise((resolve) => events.on('completed', ({ jobId }) => !jobId.startsWith('warm-') && ++done === n && resolve()));
      await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'r', data: { i }, opts: { jobId: `j-${i}` } })));
      await finished;
    });
    probe.disconnect();
    await worker.close();
    await events.close();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    return out;
  },
};

if (process.argv[2] === '--trial') {
  const [, , , side, url, n] = process.argv;
  process.stdout.write(`${JSON.stringify(await TRIALS[side](url, Number(n)))}\n`);
  process.exit(0);
}

const N = Number(process.argv[2] ?? 8000);
const REPS = Number(process.argv[3] ?? 3);

function runTrial(side, url) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [here, '--trial', side, url, String(N)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`trial ${side} exited ${code}`))));
  });
}

const redis = await benchRedis();
const { Redis } = await import('ioredis');
const flusher = redis.private ? new Redis(redis.url) : undefined;
const trials = { ours: [], sandboxed: [] };
try {
  for (let rep = 0; rep < REPS; rep++) {
    for (const side of Object.keys(trials)) {
      await flusher?.flushall();
      trials[side].push(await runTrial(side, redis.url));
    }
  }
} finally {
  flusher?.disconnect();
  await redis.stop();
}
const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted[0].toFixed(3)} / ${sorted[Math.floor(sorted.length / 2)].toFixed(3)} / ${sorted.at(-1).toFixed(3)}`;
};
console.log(`CPU ms per no-op rollout by process, c=8, ${N} rollouts per trial, ${REPS} trials per side (min / median / max)`);
console.log('| process | rollout-queue | BullMQ sandboxed |');
console.log('|---|---|---|');
for (const kind of ['main', 'main: JS thread', 'main: other threads', 'children', 'redis']) console.log(`| ${kind} | ${stats(trials.ours.map((t) => t[kind]))} | ${stats(trials.sandboxed.map((t) => t[kind]))} |`);
