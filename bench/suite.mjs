#!/usr/bin/env node
// The issue 8 comparisons, measured in one run on one private Redis, printed as one table.
// Each trial is a fresh Node process (no warm JIT, connection or child carried over); the two
// sides of a comparison run interleaved A B A B, REPS times; every figure is min/median/max
// over the trials. Per trial, beside wall time:
//   - CPU ms per rollout: the trial process and everything it starts, from a cpuacct cgroup of
//     its own where the host has one (bench/cgroup-cpu.mjs: programs at the sealed level die
//     inside PID namespaces, which /proc alone misses), else utime+stime (+ reaped children's)
//     of the trial process and every live descendant (/proc/<pid>/stat); plus Redis `INFO cpu`,
//     over the timed section only;
//   - client requests to Redis per rollout: `INFO stats` total_commands_processed delta.
// Timings belong here, never in `npm test`.
// Usage: node bench/suite.mjs [REPS=3] [--only noop,code,wait,p50,bytes,slots,recovery]   (npm run bench)
// Redis: REDIS_URL, else a private redis-server on a free loopback port (removed afterwards).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare as compareSides, fmt, startBenchRedis, stats } from './interleave.mjs';
import { trialCpuMeter } from './cgroup-cpu.mjs';
import { treeCpuMs } from './proc-cpu.mjs';

/** Set in a trial process: the CPU of its whole tree (see cgroup-cpu.mjs), else undefined. */
let meter;
const trialCpuMs = () => (meter ? meter.read() : treeCpuMs());

const here = fileURLToPath(import.meta.url);

// ---------- measurement (inside a trial) ----------

async function redisSample(redis) {
  if (!redis) return { cpuMs: 0, commands: 0 };
  const info = await redis.info();
  const num = (key) => Number(new RegExp(`^${key}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return { cpuMs: (num('used_cpu_sys') + num('used_cpu_user')) * 1000, commands: num('total_commands_processed'), memory: num('used_memory') };
}

/** Runs `body` as the timed section; returns wall ms, CPU ms (tree + Redis) and Redis commands. */
async function measure(redis, body) {
  const r0 = await redisSample(redis);
  const c0 = trialCpuMs();
  const s0 = sent.count;
  const t0 = performance.now();
  const extra = (await body()) ?? {};
  const wallMs = performance.now() - t0;
  const s1 = sent.count;
  const c1 = trialCpuMs();
  const r1 = await redisSample(redis);
  // The INFO call itself is one command.
  return { wallMs, cpuMs: c1 - c0 + (r1.cpuMs - r0.cpuMs), requests: s1 - s0, redisCommands: Math.max(0, r1.commands - r0.commands - 1), ...extra };
}

// ---------- trial bodies ----------

const quietLogger = async () => (await import('../dist/platform/logger.js')).createLogger({}, { write: () => true });

async function rqStack(url, concurrency, extra = {}) {
  const { RolloutQueue } = await import('../dist/producer/index.js');
  const { RolloutWorker } = await import('../dist/consumer/index.js');
  const logger = await quietLogger();
  const queue = `bench-${process.pid}`;
  const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency, allow: ['rq-fixtures/*'], logger });
  const rq = await RolloutQueue.create({ redisUrl: url, queue, logger, maxInFlight: 2000, ...extra });
  return { rq, close: async () => { await rq.close(); await worker.close(); } };
}

/**
 * Warms every child slot as bullmqStack warms BullMQ's child pool: one rollout per slot before
 * timing, each held 30 ms so they spread over the children, each of which then has imported the
 * run's Refs (a long-lived worker pays that first import once per child).
 */
async function warmSlots(rq, concurrency) {
  const drafts = Array.from({ length: concurrency }, (_, i) => ({ rendered: 'x', task: { id: `warm-${i}`, delayMs: 30 }, run: echo, reward: constant }));
  await drain(rq, drafts);
}

async function drain(rq, drafts) {
  let count = 0;
  for await (const result of rq.mapRollouts(drafts, { runId: `bench-${process.pid}-${Date.now()}` })) {
    if (result.kind !== 'ok') throw new Error(`unexpected ${result.kind}: ${result.error?.type} ${result.error?.message}`);
    count++;
  }
  if (count !== drafts.length) throw new Error(`expected ${drafts.length} results, got ${count}`);
}

const echo = { $ref: 'rq-fixtures/failures:echo', config: {} };
const constant = { $ref: 'rq-fixtures/failures:constant', config: {} };
const lastNumber = { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } };

async function bullmqStack(url, concurrency, processor) {
  const { Queue, QueueEvents, Worker } = await import('bullmq');
  const name = `bench-bull-${process.pid}`;
  const connection = { url };
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  await events.waitUntilReady();
  const worker = new Worker(name, processor, { connection, concurrency });
  await worker.waitUntilReady();
  if (typeof processor === 'string') {
    // BullMQ's sandbox pipes every child's stdout and stderr into ours, and each warm-up wait
    // below listens on the queue: 50 children are not a leak (Node warns past 10 listeners).
    for (const emitter of [queue, process.stdout, process.stderr]) emitter.setMaxListeners(concurrency + 10);
    // Let BullMQ's child pool fork its children before timing (as our warm pool does).
    await Promise.all(Array.from({ length: concurrency }, (_, i) => queue.add('w', {}, { jobId: `warm-${i}` }).then((job) => job.waitUntilFinished(events))));
  }
  return { queue, events, close: async () => { await worker.close(); await events.close(); await queue.obliterate({ force: true }).catch(() => {}); await queue.close(); } };
}

async function bullmqDrain(stack, n) {
  let done = 0;
  const finished = new Promise((resolve) => stack.events.on('completed', ({ jobId }) => !jobId.startsWith('warm-') && ++done === n && resolve()));
  await stack.queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'r', data: { i }, opts: { jobId: `j-${i}` } })));
  await finished;
}

/**
 * The plain spawn pool: one temp directory and one process per rollout, `concurrency` at once,
 * each process started the way codeRunner starts an artifact, so the comparison measures the
 * plane's overhead and nothing else:
 * - the environment codeRunner gives an artifact (`PATH`, `HOME` and `TMPDIR` = the directory,
 *   `LANG=C.UTF-8`), not the trial's: inherited, a variable such as `NODE_EXTRA_CA_CERTS` (set
 *   on many hosts; node then parses the whole CA bundle at every start, ~80 ms CPU per start
 *   for the 220 KB bundle on the bench machine) makes the anchor pay for work the artifact never does;
 * - `detached` (a session and process group of its own, as codeRunner's sandbox does to kill the
 *   group): with the kernel's autogroup scheduling on (`/proc/sys/kernel/sched_autogroup_enabled`),
 *   every session is one scheduling group, so on a shared machine processes left in the trial's
 *   session share one group's CPU while each artifact gets a group of its own (measured: same
 *   CPU, 1.7–2.2× the wall time).
 */
async function spawnPool(n, concurrency, file, source, command) {
  // The program codeRunner's sandbox would run: its PATH puts the interpreters' own bin
  // directories first (a pyenv shim on the worker's PATH adds ~80 ms to every start it makes).
  const { currentContainment } = await import('../dist/sandbox/index.js');
  const programPath = currentContainment().tenant?.programPath ?? process.env.PATH ?? '/usr/bin:/bin';
  let next = 0;
  const one = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-bench-plain-'));
    try {
      await writeFile(path.join(dir, file), source);
      await new Promise((resolve, reject) => {
        const env = { PATH: programPath, HOME: dir, LANG: 'C.UTF-8', TMPDIR: dir };
        const proc = spawn(command[0], command.slice(1), { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        proc.stdout.on('data', (d) => (out += d));
        proc.on('error', reject);
        proc.on('close', (code) => (code === 0 && out.trim() === '42' ? resolve() : reject(new Error(`exit ${code}: ${out}`))));
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) await one();
  }));
}

const JS = 'console.log(42)\n';
const PY = 'print(42)\n';

const TRIALS = {
  // no-op rollouts, concurrency 8
  async 'noop-rq'(url, { n }) {
    const stack = await rqStack(url, 8);
    await warmSlots(stack.rq, 8);
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: 'x', task: { id: `t-${i}` }, run: echo, reward: constant }));
    const m = await measure(stack.redis ?? (await redisClient(url)), () => drain(stack.rq, drafts));
    await stack.close();
    return m;
  },
  async 'noop-sandboxed'(url, { n }) {
    const stack = await bullmqStack(url, 8, path.join(path.dirname(here), 'fixtures', 'bullmq-sandboxed-processor.mjs'));
    const m = await measure(await redisClient(url), () => bullmqDrain(stack, n));
    await stack.close();
    return m;
  },
  async 'noop-raw'(url, { n }) {
    const stack = await bullmqStack(url, 8, async (job) => ({ id: job.id }));
    const m = await measure(await redisClient(url), () => bullmqDrain(stack, n));
    await stack.close();
    return m;
  },
  // codeRunner 300 × c=4 vs a plain spawn pool
  async 'code-rq'(url, { n, lang }) {
    const stack = await rqStack(url, 4);
    const run = lang === 'py'
      ? { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py', command: ['python3', 'main.py'], timeoutMs: 60_000 } }
      : { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', timeoutMs: 60_000 } };
    const file = lang === 'py' ? 'main.py' : 'main.js';
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: { files: { [file]: lang === 'py' ? PY : JS } }, task: { id: `t-${i}`, gold: 42 }, run, reward: lastNumber }));
    const m = await measure(await redisClient(url), () => drain(stack.rq, drafts));
    await stack.close();
    return m;
  },
  async 'code-plain'(_url, { n, lang }) {
    return measure(null, () => (lang === 'py' ? spawnPool(n, 4, 'main.py', PY, ['python3', 'main.py']) : spawnPool(n, 4, 'main.js', JS, [process.execPath, 'main.js'])));
  },
  // 1 000 rollouts awaiting 50 ms, c=50
  async 'wait-rq'(url, { n }) {
    const stack = await rqStack(url, 50);
    await warmSlots(stack.rq, 50);
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: 'x', task: { id: `t-${i}`, delayMs: 50 }, run: echo, reward: constant }));
    const m = await measure(await redisClient(url), () => drain(stack.rq, drafts));
    await stack.close();
    return m;
  },
  async 'wait-sandboxed'(url, { n }) {
    const stack = await bullmqStack(url, 50, path.join(path.dirname(here), 'fixtures', 'bullmq-sandboxed-wait.mjs'));
    const m = await measure(await redisClient(url), () => bullmqDrain(stack, n));
    await stack.close();
    return m;
  },
  async 'wait-inproc'(_url, { n }) {
    let next = 0;
    return measure(null, () => Promise.all(Array.from({ length: 50 }, async () => {
      while (next++ < n) await new Promise((r) => setTimeout(r, 50));
    })));
  },
  // submit → Result, one at a time
  async 'p50-rq'(url, { n }) {
    const stack = await rqStack(url, 2);
    const one = (i) => stack.rq.rollout({ rendered: 'x', task: { id: `t-${i}` }, run: echo, reward: constant }, { runId: `p50-${process.pid}-${i}` });
    for (let i = 0; i < 10; i++) await one(`w${i}`);
    const samples = [];
    const m = await measure(await redisClient(url), async () => {
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await one(i);
        samples.push(performance.now() - t);
      }
      samples.sort((a, b) => a - b);
      return { p50Ms: samples[Math.floor(samples.length / 2)] };
    });
    await stack.close();
    return m;
  },
  async 'p50-sandboxed'(url, { n }) {
    const stack = await bullmqStack(url, 2, path.join(path.dirname(here), 'fixtures', 'bullmq-sandboxed-processor.mjs'));
    const samples = [];
    const m = await measure(await redisClient(url), async () => {
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        const job = await stack.queue.add('r', { i }, { jobId: `p-${i}` });
        await job.waitUntilFinished(stack.events);
        samples.push(performance.now() - t);
      }
      samples.sort((a, b) => a - b);
      return { p50Ms: samples[Math.floor(samples.length / 2)] };
    });
    await stack.close();
    return m;
  },
  // Redis bytes kept per rollout, one 1 MB artifact shared by the run
  async 'bytes-rq'(url, { n }) {
    const stack = await rqStack(url, 4, { maxSpecBytes: 4 * 1024 * 1024 });
    const redis = await redisClient(url);
    const big = 'a'.repeat(1000 * 1000);
    // A run whose output is small (echo would copy the artifact into every Result).
    const run = { $ref: 'rq-fixtures/failures:reportsEnv', config: {} };
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: big, task: { id: `t-${i}` }, run, reward: constant }));
    const before = (await redisSample(redis)).memory;
    const m = await measure(redis, () => drain(stack.rq, drafts));
    await stack.close();
    const after = (await redisSample(redis)).memory;
    return { ...m, bytesPerRollout: (after - before) / n, bytesPerRolloutBeyondOneCopy: (after - before - big.length) / n };
  },
};

const clients = [];
const sent = { count: 0 };
async function redisClient(url) {
  const { Redis } = await import('ioredis');
  const client = new Redis(url);
  clients.push(client);
  return client;
}

if (process.argv[2] === '--trial') {
  const [, , , name, url, params] = process.argv;
  // Client requests: every command any ioredis client of this process sends (BullMQ's, ours),
  // pipelined or not. Redis' own counters also count the commands a script runs inside.
  const { Redis } = await import('ioredis');
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, stream) {
    if (!clients.includes(this)) sent.count++;
    return send.call(this, command, stream);
  };
  meter = trialCpuMeter();
  const result = await TRIALS[name](url, JSON.parse(params));
  for (const client of clients) client.disconnect();
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

// ---------- orchestration ----------

const REPS = Number(process.argv[2] ?? 3);
const onlyAt = process.argv.indexOf('--only');
/** The row groups to run (all by default): a part of the table, on a shared machine. */
const ONLY = onlyAt > 0 ? new Set(process.argv[onlyAt + 1]?.split(',')) : undefined;
const want = (group) => !ONLY || ONLY.has(group);

const startRedis = startBenchRedis;
/** Runs the sides of one comparison interleaved, REPS times each (interleave.mjs). */
const compare = (redis, sides, params) => compareSides(here, redis, sides, params, REPS);

const rows = [];
const row = (measureName, ours, anchor, ratio, goal) => rows.push({ measureName, ours, anchor, ratio, goal });
const perRollout = (trials, n, key) => stats(trials.map((t) => t[key] / n));
const rate = (trials, n) => stats(trials.map((t) => n / (t.wallMs / 1000)));
const ratioOfMedians = (a, b) => a.median / b.median;

const redis = await startRedis();
const started = performance.now();
try {
  if (want('noop')) {
    const n = 800;
    const t = await compare(redis, ['noop-rq', 'noop-sandboxed', 'noop-raw'], { n });
    const ours = rate(t['noop-rq'], n);
    const sb = rate(t['noop-sandboxed'], n);
    row('no-op rollouts/s, c=8', fmt(ours, 0), `sandboxed ${fmt(sb, 0)}`, `${ratioOfMedians(ours, sb).toFixed(2)}×`, '≥ 0.8×');
    const oc = perRollout(t['noop-rq'], n, 'cpuMs');
    const sc = perRollout(t['noop-sandboxed'], n, 'cpuMs');
    row('CPU ms per no-op rollout (all processes + redis)', fmt(oc, 2), `sandboxed ${fmt(sc, 2)}`, `${ratioOfMedians(oc, sc).toFixed(2)}×`, '≤ 1.3×');
    const oq = perRollout(t['noop-rq'], n, 'requests');
    const rq = perRollout(t['noop-raw'], n, 'requests');
    row('client requests to Redis per no-op rollout', fmt(oq, 2), `raw BullMQ ${fmt(rq, 2)}`, `${ratioOfMedians(oq, rq).toFixed(2)}×`, '≤ 2×');
    const oi = perRollout(t['noop-rq'], n, 'redisCommands');
    const ri = perRollout(t['noop-raw'], n, 'redisCommands');
    row('  Redis commands run per rollout (incl. inside scripts)', fmt(oi, 1), `raw BullMQ ${fmt(ri, 1)}`, `${ratioOfMedians(oi, ri).toFixed(2)}×`, '');
  }
  if (want('noop')) {
    // The same after warm-up: in a fresh process most of 800 rollouts' CPU is JIT warm-up and
    // each child's first import (~10 ms per child); a long-lived worker pays that once.
    const n = 8000;
    const t = await compare(redis, ['noop-rq', 'noop-sandboxed'], { n });
    const ours = rate(t['noop-rq'], n);
    const sb = rate(t['noop-sandboxed'], n);
    row(`  same, ${n} rollouts per trial: rollouts/s`, fmt(ours, 0), `sandboxed ${fmt(sb, 0)}`, `${ratioOfMedians(ours, sb).toFixed(2)}×`, '');
    const oc = perRollout(t['noop-rq'], n, 'cpuMs');
    const sc = perRollout(t['noop-sandboxed'], n, 'cpuMs');
    row(`  same, ${n} rollouts per trial: CPU ms per rollout`, fmt(oc, 2), `sandboxed ${fmt(sc, 2)}`, `${ratioOfMedians(oc, sc).toFixed(2)}×`, '');
  }
  for (const lang of want('code') ? ['js', 'py'] : []) {
    const n = 300;
    const t = await compare(redis, ['code-rq', 'code-plain'], { n, lang });
    const ow = stats(t['code-rq'].map((x) => x.wallMs / 1000));
    const pw = stats(t['code-plain'].map((x) => x.wallMs / 1000));
    const oc = perRollout(t['code-rq'], n, 'cpuMs');
    const pc = perRollout(t['code-plain'], n, 'cpuMs');
    const label = lang === 'py' ? '`python3 main.py`' : '`node main.js`';
    const level = (await import('../dist/sandbox/index.js')).currentContainment().level;
    row(`codeRunner ${label} 300 × c=4 (level ${level}), wall s`, fmt(ow, 2), `spawn pool ${fmt(pw, 2)}`, `${ratioOfMedians(ow, pw).toFixed(2)}×`, '≤ 1.10×');
    row(`  same, CPU ms per rollout`, fmt(oc, 1), `spawn pool ${fmt(pc, 1)}`, `${ratioOfMedians(oc, pc).toFixed(2)}×`, '≤ 1.10×');
  }
  if (want('wait')) {
    const n = 1000;
    const t = await compare(redis, ['wait-rq', 'wait-inproc', 'wait-sandboxed'], { n });
    const ow = stats(t['wait-rq'].map((x) => x.wallMs / 1000));
    const iw = stats(t['wait-inproc'].map((x) => x.wallMs / 1000));
    const sw = stats(t['wait-sandboxed'].map((x) => x.wallMs / 1000));
    row('1 000 rollouts awaiting 50 ms, c=50, wall s (warm)', fmt(ow, 2), `in-process pool ${fmt(iw, 2)}`, `${ratioOfMedians(ow, iw).toFixed(2)}×`, '≤ 1.3×');
    row('  same, against BullMQ sandboxed (50 children), wall s', fmt(ow, 2), `sandboxed ${fmt(sw, 2)} (${ratioOfMedians(sw, iw).toFixed(2)}× in-process)`, `${ratioOfMedians(ow, sw).toFixed(2)}×`, '');
    row('  same, CPU ms per rollout', fmt(perRollout(t['wait-rq'], n, 'cpuMs'), 2), `in-process ${fmt(perRollout(t['wait-inproc'], n, 'cpuMs'), 2)}, sandboxed ${fmt(perRollout(t['wait-sandboxed'], n, 'cpuMs'), 2)}`, '', '');
  }
  if (want('p50')) {
    const n = 100;
    const t = await compare(redis, ['p50-rq', 'p50-sandboxed'], { n });
    const op = stats(t['p50-rq'].map((x) => x.p50Ms));
    const sp = stats(t['p50-sandboxed'].map((x) => x.p50Ms));
    row('submit→Result p50, one at a time, ms', fmt(op, 2), `sandboxed ${fmt(sp, 2)}`, `${ratioOfMedians(op, sp).toFixed(2)}×`, '≤ 1.5×');
  }
  if (want('bytes')) {
    const n = 40;
    const t = await compare(redis, ['bytes-rq'], { n });
    const beyond = stats(t['bytes-rq'].map((x) => x.bytesPerRolloutBeyondOneCopy / 1024));
    const all = stats(t['bytes-rq'].map((x) => x.bytesPerRollout / 1024));
    row(`Redis KiB kept per rollout, 1 MB artifact, ${n} rollouts`, `${fmt(all, 1)} (beyond one copy: ${fmt(beyond, 1)})`, '—', '', '≤ 5 KB + one copy per run');
  }
} finally {
  await redis.stop();
}
if (want('slots')) {
  // Issue 32's rows (worker memory idle, 5 000 rollouts awaiting 200 ms at c=500): their own Redis and worker processes.
  const out = execFileSync(process.execPath, [path.join(path.dirname(here), 'slots.mjs'), String(REPS), '--rows-json'], { stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim().split('\n');
  for (const [measureName, ours, anchor, ratio, goal] of JSON.parse(out.at(-1) ?? '[]')) row(measureName, ours, anchor, ratio, goal);
}
if (want('recovery')) {
  // Its own Redis and worker processes; prints its own lines.
  const out = execFileSync(process.execPath, [path.join(path.dirname(here), 'recovery.mjs'), String(REPS)]).toString().trim().split('\n');
  const m = /min ([\d.]+) s, median ([\d.]+) s, max ([\d.]+) s/.exec(out.at(-1) ?? '');
  row('worker SIGKILL → lease running elsewhere, s', m ? `${m[1]} / ${m[2]} / ${m[3]}` : out.join(' '), '—', '', 'max ≤ 10 s');
}

console.log(`rollout-queue bench: node ${process.version}, ${os.cpus().length} cores, ${REPS} trials per side (interleaved, fresh process each), min / median / max; ratio of medians; ${((performance.now() - started) / 1000).toFixed(0)} s`);
const header = ['measure', 'rollout-queue', 'anchor', 'ratio', 'goal'];
const lines = [header, ...rows.map((r) => [r.measureName, r.ours, r.anchor, r.ratio, r.goal])];
console.log(`| ${header.join(' | ')} |`);
console.log(`|${header.map(() => '---').join('|')}|`);
for (const line of lines.slice(1)) console.log(`| ${line.join(' | ')} |`);
