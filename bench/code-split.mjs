#!/usr/bin/env node
// Where the CPU of a codeRunner `node main.js` rollout goes, per launcher and level, beside a
// plain spawn pool: the diagnostic behind the codeRunner rows of bench/suite.mjs. Each trial is a
// fresh process running N rollouts at c=4 (coordinator and worker in the trial process, as in the
// suite); the sides run interleaved A B C D A B C D, REPS times. Per trial, ms per rollout over
// the timed section:
//   main      the trial process (coordinator + worker's main process; for `plain`, the spawner);
//   children  the rollout children's own threads (/proc/<pid>/task/*/schedstat);
//   launch    everything else the trial started (launch servers, launchers, inits, bubblewrap,
//             namespaces made and torn down in process context) minus what the artifacts report
//             as their own CPU (process.cpuUsage at exit, on stderr): the launch and teardown.
//             From the trial's cpuacct cgroup where the host has one (bench/cgroup-cpu.mjs; /proc
//             misses what dies inside a PID namespace, as everything at `sealed` does), else /proc;
//   artifact  the artifacts' own CPU;
//   redis     Redis `INFO cpu`.
// Sides: `sealed` (every boundary: the tenant view under rq-launch's launch server), then the
// launchers at `namespace+cgroup` (no tenant view), then the plain pool. The difference between
// `sealed` and `rq-launch --serve` is what the tenant view costs; bench/tenant-split.mjs splits it
// per boundary.
// Usage: node bench/code-split.mjs [N=200] [REPS=3]   (npm run bench:code-split)
// SIDES: a comma-separated subset of the sides below (e.g. `SIDES="rq-launch --serve,plain"`).
// Redis: REDIS_URL, else a private redis-server on a free loopback port (removed afterwards).
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRedis } from './bench-redis.mjs';
import { trialCpuMeter } from './cgroup-cpu.mjs';
import { descendantsOf, parentOf, reapedCpuMs, statCpuMs, threadsCpuMs, treeCpuMs } from './proc-cpu.mjs';

/** Set in a trial process: the CPU of its whole tree (see cgroup-cpu.mjs), else undefined. */
let meter;

const here = fileURLToPath(import.meta.url);
const ARTIFACT = 'console.log(42); process.on("exit", () => { const c = process.cpuUsage(); process.stderr.write(`cpu ${(c.user + c.system) / 1000}\\n`); });\n';
const SIDES = (process.env.SIDES ?? 'sealed,rq-launch --serve,rq-launch,util-linux,plain').split(',');
/** ROLLOUT_QUEUE_LAUNCHER and ROLLOUT_QUEUE_CONTAINMENT of each rollout-queue side. */
const LAUNCHER = { sealed: 'auto', 'rq-launch --serve': 'auto', 'rq-launch': 'exec', 'util-linux': 'util-linux' };
const CONTAINMENT = { sealed: 'auto', 'rq-launch --serve': 'namespace+cgroup', 'rq-launch': 'namespace+cgroup', 'util-linux': 'namespace+cgroup' };

/** CPU of this process' descendants (live ones with what they reaped, plus what this process reaped), ms. */
function belowCpu() {
  if (meter) return meter.read() - threadsCpuMs(process.pid);
  return treeCpuMs() - statCpuMs(process.pid) + reapedCpuMs(process.pid);
}

async function trial(side, url, n) {
  const { Redis } = await import('ioredis');
  const probe = new Redis(url);
  const redisCpu = async () => {
    const info = await probe.info('cpu');
    const field = (key) => Number(new RegExp(`${key}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return (field('used_cpu_sys') + field('used_cpu_user')) * 1000;
  };
  let artifactMs = 0;
  const note = (stderr) => {
    const match = /cpu ([\d.]+)/.exec(stderr);
    if (match) artifactMs += Number(match[1]);
  };
  let body;
  let close = async () => {};
  if (side === 'plain') {
    body = async () => {
      let next = 0;
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (next++ < n) {
          const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-bench-plain-'));
          try {
            await writeFile(path.join(dir, 'main.js'), ARTIFACT);
            await new Promise((resolve, reject) => {
              // As bench/suite.mjs's spawn pool: codeRunner's environment, a session of its own.
              const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', TMPDIR: dir };
              const proc = spawn(process.execPath, ['main.js'], { cwd: dir, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
              let out = '';
              let err = '';
              proc.stdout.on('data', (d) => (out += d));
              proc.stderr.on('data', (d) => (err += d));
              proc.stdin.end('{}\n');
              proc.on('error', reject);
              proc.on('close', (code) => {
                note(err);
                if (code === 0 && out.trim() === '42') resolve();
                else reject(new Error(`exit ${code}: ${out}`));
              });
            });
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        }
      }));
    };
  } else {
    process.env.ROLLOUT_QUEUE_LAUNCHER = LAUNCHER[side];
    process.env.ROLLOUT_QUEUE_CONTAINMENT = CONTAINMENT[side];
    const { RolloutQueue } = await import('../dist/producer/index.js');
    const { RolloutWorker } = await import('../dist/consumer/index.js');
    const { createLogger } = await import('../dist/platform/logger.js');
    const logger = createLogger({}, { write: () => true });
    const queue = `split-${process.pid}`;
    const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency: 4, logger });
    const rq = await RolloutQueue.create({ redisUrl: url, queue, logger, maxInFlight: 2000 });
    const run = { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', timeoutMs: 60_000 } };
    const reward = { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } };
    const drafts = Array.from({ length: n }, (_, i) => ({ rendered: { files: { 'main.js': ARTIFACT } }, task: { id: `t-${i}`, gold: 42 }, run, reward }));
    body = async () => {
      for await (const result of rq.mapRollouts(drafts, { runId: `split-${process.pid}` })) {
        if (result.kind !== 'ok') throw new Error(`${result.kind}: ${result.error?.message}`);
        note(result.output.stderr);
      }
    };
    close = async () => {
      await rq.close();
      await worker.close();
    };
  }
  // The rollout children are this process' children before the timed section (pre-forked).
  const children = descendantsOf(process.pid).filter((pid) => parentOf(pid) === process.pid);
  const c0 = children.map(threadsCpuMs);
  const m0 = threadsCpuMs(process.pid);
  const b0 = belowCpu();
  const r0 = await redisCpu();
  const t0 = performance.now();
  await body();
  const wallMs = performance.now() - t0;
  const m1 = threadsCpuMs(process.pid);
  const r1 = await redisCpu();
  const b1 = belowCpu();
  const childMs = children.reduce((sum, pid, i) => sum + threadsCpuMs(pid) - c0[i], 0);
  probe.disconnect();
  await close();
  const per = (ms) => ms / n;
  return { wall: per(wallMs), main: per(m1 - m0), children: per(childMs), launch: per(b1 - b0 - childMs - artifactMs), artifact: per(artifactMs), redis: per(r1 - r0) };
}

if (process.argv[2] === '--trial') {
  const [, , , side, url, n] = process.argv;
  meter = trialCpuMeter();
  process.stdout.write(`${JSON.stringify(await trial(side, url, Number(n)))}\n`);
  process.exit(0);
}

const N = Number(process.argv[2] ?? 200);
const REPS = Number(process.argv[3] ?? 3);
const redis = await benchRedis();
const runTrial = (side) =>
  new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [here, '--trial', side, redis.url, String(N)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.on('close', (code) => {
      const line = out.trim().split('\n').at(-1);
      if (code !== 0 || !line) reject(new Error(`trial ${side} exited ${code}: ${out}`));
      else resolve(JSON.parse(line));
    });
  });
const trials = Object.fromEntries(SIDES.map((side) => [side, []]));
try {
  for (let rep = 0; rep < REPS; rep++) for (const side of SIDES) trials[side].push(await runTrial(side));
} finally {
  await redis.stop();
}
const fmt = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (i) => sorted[i].toFixed(1);
  return `${at(0)} / ${at(Math.floor(sorted.length / 2))} / ${at(sorted.length - 1)}`;
};
console.log(`ms per codeRunner \`node main.js\` rollout, c=4, ${N} rollouts per trial, ${REPS} trials per side (min / median / max), node ${process.version}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const columns = ['wall', 'main', 'children', 'launch', 'artifact', 'redis'];
console.log(`| side | ${columns.join(' | ')} | total CPU |`);
console.log(`|${['', ...columns, ''].map(() => '---').join('|')}|`);
for (const side of SIDES) {
  const rows = trials[side];
  const cells = columns.map((column) => fmt(rows.map((row) => row[column])));
  const total = fmt(rows.map((row) => row.main + row.children + row.launch + row.artifact + row.redis));
  console.log(`| ${side} | ${cells.join(' | ')} | ${total} |`);
}
