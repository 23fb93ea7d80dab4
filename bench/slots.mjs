#!/usr/bin/env node
// Issue 32: slots are not processes. The worker's memory idle at --concurrency 50 and 200 (PSS
// from /proc/<pid>/smaps_rollup summed over its process tree, RSS beside it), and 5 000 rollouts
// each awaiting 200 ms on one worker at --concurrency 500 against an in-process pool (wall, CPU,
// the worker tree's peak PSS sampled every 250 ms). Same method as suite.mjs: each trial a fresh
// Node process, sides interleaved, REPS trials each, min / median / max, ratio of medians.
// Timings belong here, never in `npm test`.
// Usage: node bench/slots.mjs [REPS=3] [--only idle,burst] [--rows-json]   (part of npm run bench)
// RQ_BENCH_DIST=<other checkout>/dist measures that build's worker (the idle rows' "before").
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare as compareSides, fmt, startBenchRedis, stats } from './interleave.mjs';
import { descendantsOf, statCpuMs, treeCpuMs } from './proc-cpu.mjs';
import { treeMemory } from './proc-mem.mjs';

const here = fileURLToPath(import.meta.url);
const WORKER = path.join(path.dirname(here), 'fixtures', 'bench-worker.mjs');
const echo = { $ref: 'rq-fixtures/failures:echo', config: {} };
const constant = { $ref: 'rq-fixtures/failures:constant', config: {} };

/** Starts a worker process (bench-worker.mjs) and resolves once it consumes. */
function startWorker(url, queue, options) {
  const proc = spawn(process.execPath, [WORKER, JSON.stringify({ redisUrl: url, queue, allow: ['rq-fixtures/*'], ...options })], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      if (/^ready/m.test(out)) resolve({ proc, stop: () => new Promise((done) => { proc.once('exit', done); proc.kill('SIGTERM'); }) });
    });
    proc.once('exit', (code) => reject(new Error(`bench worker exited ${code} before it was ready: ${out}`)));
  });
}

const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function drain(rq, drafts, runId) {
  let count = 0;
  for await (const result of rq.mapRollouts(drafts, { runId })) {
    if (result.kind !== 'ok') throw new Error(`unexpected ${result.kind}: ${result.error?.type} ${result.error?.message}`);
    count++;
  }
  if (count !== drafts.length) throw new Error(`expected ${drafts.length} results, got ${count}`);
}

const TRIALS = {
  /** The worker tree's memory right after it started (children warm), three samples 500 ms apart, the last kept. */
  async 'idle-rq'(url, { concurrency, ...options }) {
    const worker = await startWorker(url, `idle-${process.pid}`, { concurrency, ...options });
    await settle(1000);
    let memory;
    for (let i = 0; i < 3; i++) {
      memory = treeMemory(worker.proc.pid);
      await settle(500);
    }
    await worker.stop();
    return memory;
  },
  async 'burst-rq'(url, { n, concurrency, delayMs }) {
    const queue = `burst-${process.pid}`;
    const worker = await startWorker(url, queue, { concurrency });
    const { RolloutQueue } = await import('../dist/producer/index.js');
    const { createLogger } = await import('../dist/platform/logger.js');
    const rq = await RolloutQueue.create({ redisUrl: url, queue, logger: createLogger({}, { write: () => true }), maxInFlight: n });
    // Warm-up, as a long-lived worker is: every child has imported the run's Refs, the JIT has run.
    await drain(rq, Array.from({ length: concurrency }, (_, i) => ({ rendered: 'x', task: { id: `w-${i}`, delayMs: 30 }, run: echo, reward: constant })), `warm-${process.pid}`);
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: 'x', task: { id: `t-${i}`, delayMs }, run: echo, reward: constant }));
    let peak = treeMemory(worker.proc.pid);
    const sampler = setInterval(() => {
      const now = treeMemory(worker.proc.pid);
      if (now.pssMb > peak.pssMb) peak = now;
    }, 250);
    const split = () => ({ trial: statCpuMs(process.pid), main: statCpuMs(worker.proc.pid), children: descendantsOf(worker.proc.pid).reduce((sum, pid) => sum + statCpuMs(pid), 0) });
    const s0 = split();
    const c0 = treeCpuMs();
    const t0 = performance.now();
    await drain(rq, drafts, `burst-${process.pid}`);
    const wallMs = performance.now() - t0;
    const cpuMs = treeCpuMs() - c0;
    const s1 = split();
    const cpuSplitMs = { trial: s1.trial - s0.trial, main: s1.main - s0.main, children: s1.children - s0.children };
    clearInterval(sampler);
    await rq.close();
    await worker.stop();
    return { wallMs, cpuMs, cpuSplitMs, peakPssMb: peak.pssMb, peakRssMb: peak.rssMb, processes: peak.processes };
  },
  async 'burst-inproc'(_url, { n, concurrency, delayMs }) {
    let next = 0;
    const c0 = treeCpuMs();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next++ < n) await settle(delayMs);
    }));
    return { wallMs: performance.now() - t0, cpuMs: treeCpuMs() - c0, peakPssMb: treeMemory(process.pid).pssMb };
  },
};

if (process.argv[2] === '--trial') {
  const [, , , name, url, params] = process.argv;
  const result = await TRIALS[name](url, JSON.parse(params));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

const REPS = Number(process.argv[2] ?? 3);
const onlyAt = process.argv.indexOf('--only');
const ONLY = onlyAt > 0 ? new Set(process.argv[onlyAt + 1].split(',')) : undefined;

const compare = (redis, sides, params) => compareSides(here, redis, sides, params, REPS);

const rows = [];
const row = (measure, ours, anchor, ratio, goal) => rows.push([measure, ours, anchor, ratio, goal]);

const redis = await startBenchRedis();
const started = performance.now();
try {
  if (!ONLY || ONLY.has('idle')) {
    for (const [concurrency, goal] of [[50, '≤ 150 MB'], [200, '≤ 250 MB']]) {
      const t = (await compare(redis, ['idle-rq'], { concurrency }))['idle-rq'];
      const processes = stats(t.map((x) => x.processes));
      row(`worker PSS, --concurrency ${concurrency}, idle, MB`, `${fmt(stats(t.map((x) => x.pssMb)), 0)} (RSS ${fmt(stats(t.map((x) => x.rssMb)), 0)}; ${processes.median} processes)`, '—', '', goal);
    }
  }
  if (!ONLY || ONLY.has('burst')) {
    const params = { n: 5000, concurrency: 500, delayMs: 200 };
    const t = await compare(redis, ['burst-rq', 'burst-inproc'], params);
    const ow = stats(t['burst-rq'].map((x) => x.wallMs / 1000));
    const iw = stats(t['burst-inproc'].map((x) => x.wallMs / 1000));
    row('5 000 rollouts awaiting 200 ms, --concurrency 500, one worker, wall s', fmt(ow, 2), `in-process pool ${fmt(iw, 2)}`, `${(ow.median / iw.median).toFixed(2)}×`, '≤ 1.3×');
    const processes = stats(t['burst-rq'].map((x) => x.processes));
    row('  same, worker peak PSS, MB', `${fmt(stats(t['burst-rq'].map((x) => x.peakPssMb)), 0)} (RSS ${fmt(stats(t['burst-rq'].map((x) => x.peakRssMb)), 0)}; ${processes.median} processes)`, '—', '', '≤ 600 MB');
    row('  same, CPU ms per rollout (trial + worker tree)', fmt(stats(t['burst-rq'].map((x) => x.cpuMs / params.n)), 2), `in-process ${fmt(stats(t['burst-inproc'].map((x) => x.cpuMs / params.n)), 3)}`, '', '');
  }
} finally {
  await redis.stop();
}

if (process.argv.includes('--rows-json')) {
  // For suite.mjs, which prints these rows in its own table.
  process.stdout.write(`${JSON.stringify(rows)}\n`);
  process.exit(0);
}
console.log(`rollout-queue slots bench: node ${process.version}, ${os.cpus().length} cores, ${REPS} trials per side (interleaved, fresh process each), min / median / max; ratio of medians; ${((performance.now() - started) / 1000).toFixed(0)} s`);
console.log('| measure | rollout-queue | anchor | ratio | goal |');
console.log('|---|---|---|---|---|');
for (const line of rows) console.log(`| ${line.join(' | ')} |`);
