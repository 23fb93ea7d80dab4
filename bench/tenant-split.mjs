#!/usr/bin/env node
// What each boundary of the sealed level costs per attempt (docs/security.md "Cost"): the launch of
// `true`, done N times in a row, first bare and then with one boundary more per row, the way an
// attempt at `sealed` is started (rq-launch makes the PID namespace and drops the identity, then
// execs bubblewrap, which makes the rest). Each trial is a fresh process in a cpuacct cgroup of its
// own (bench/cgroup-cpu.mjs: /proc misses what dies inside a PID namespace); rows run interleaved,
// REPS times; min / median / max of wall and CPU ms per launch, and each row's median over the row
// above. Root only (the identity drop), with rq-launch built and bubblewrap installed.
// Usage: node bench/tenant-split.mjs [N=200] [REPS=3]   (npm run bench:tenant-split)
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { trialCpuMeter } from './cgroup-cpu.mjs';

const here = fileURLToPath(import.meta.url);
const RQ = fileURLToPath(new URL('../native/rq-launch', import.meta.url));
const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim() || 'bwrap';
const TRUE = spawnSync('sh', ['-c', 'command -v true'], { encoding: 'utf8' }).stdout.trim() || '/usr/bin/true';
const nobody = ['--probe', '--identity', '65534:65534', '--'];
const view = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/sbin', '/sbin', '--dev', '/dev', '--tmpfs', '/work', '--tmpfs', '/tmp', '--chdir', '/work'];

/** Each row adds one boundary to the row above (its argv runs `true`). */
const ROWS = [
  ['exec true (no boundary)', [TRUE]],
  ['+ PID namespace (rq-launch --pid)', [RQ, '--pid', '--', TRUE]],
  ['+ identity drop (uid 65534, no_new_privs)', [RQ, ...nobody, TRUE]],
  ['+ bubblewrap: user + mount namespace', [RQ, ...nobody, bwrap, '--unshare-user', '--dev-bind', '/', '/', TRUE]],
  ['+ its PID namespace and a private /proc', [RQ, ...nobody, bwrap, '--unshare-user', '--unshare-pid', '--dev-bind', '/', '/', '--proc', '/proc', TRUE]],
  ['+ network namespace (own loopback)', [RQ, ...nobody, bwrap, '--unshare-user', '--unshare-pid', '--unshare-net', '--dev-bind', '/', '/', '--proc', '/proc', TRUE]],
  ['+ IPC, UTS, cgroup namespaces', [RQ, ...nobody, bwrap, '--unshare-all', '--unshare-user', '--dev-bind', '/', '/', '--proc', '/proc', TRUE]],
  ['+ no nested user namespaces (--disable-userns)', [RQ, ...nobody, bwrap, '--unshare-all', '--unshare-user', '--disable-userns', '--dev-bind', '/', '/', '--proc', '/proc', TRUE]],
  ['+ the read-only system view, /dev, tmpfs (sealed)', [RQ, ...nobody, bwrap, '--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--hostname', 'rollout', ...view, '--proc', '/proc', TRUE]],
];

if (process.argv[2] === '--trial') {
  const [, , , row, n] = process.argv;
  const meter = trialCpuMeter();
  const [program, ...args] = ROWS[Number(row)][1];
  const c0 = meter ? meter.read() : 0;
  const t0 = performance.now();
  for (let i = 0; i < Number(n); i++) {
    const result = spawnSync(program, args, { stdio: 'ignore' });
    if (result.status !== 0) throw new Error(`${ROWS[Number(row)][0]}: exit ${result.status ?? result.signal}`);
  }
  const wall = (performance.now() - t0) / Number(n);
  const cpu = meter ? (meter.read() - c0) / Number(n) : Number.NaN;
  process.stdout.write(`${JSON.stringify({ wall, cpu })}\n`);
  process.exit(0);
}

const N = Number(process.argv[2] ?? 200);
const REPS = Number(process.argv[3] ?? 3);
const runTrial = (row) =>
  new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [here, '--trial', String(row), String(N)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim())) : reject(new Error(`row ${row} exited ${code}`))));
  });
const trials = ROWS.map(() => []);
for (let rep = 0; rep < REPS; rep++) for (let row = 0; row < ROWS.length; row++) trials[row].push(await runTrial(row));
const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0], median: sorted[Math.floor(sorted.length / 2)], max: sorted.at(-1) };
};
const fmt = (s) => `${s.min.toFixed(2)} / ${s.median.toFixed(2)} / ${s.max.toFixed(2)}`;
console.log(`ms per launch of \`true\`, ${N} launches per trial, ${REPS} trials per row (min / median / max; fresh process per trial, rows interleaved), node ${process.version}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('| row | wall | CPU | wall over the row above | CPU over the row above |');
console.log('|---|---|---|---|---|');
let previous;
for (let row = 0; row < ROWS.length; row++) {
  const wall = stats(trials[row].map((t) => t.wall));
  const cpu = stats(trials[row].map((t) => t.cpu));
  const over = (now, before, key) => (before ? `${(now.median - before[key].median).toFixed(2)}` : '');
  console.log(`| ${ROWS[row][0]} | ${fmt(wall)} | ${fmt(cpu)} | ${over(wall, previous, 'wall')} | ${over(cpu, previous, 'cpu')} |`);
  previous = { wall, cpu };
}
