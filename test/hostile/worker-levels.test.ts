import { spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutSpec } from '../../src/spec/index.js';
import { BIN } from '../integration/cli/cli-process.js';
import { makeSpec, RawQueue, TEST_PREFIX } from '../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';
import { artifact } from './hostile-helpers.js';

// Issue 28 seen from real worker processes: the level and its gaps in the start line, `status`
// and /metrics; benign python3 and node artifacts still end ok with reward 1 (the reward scores
// with the gold); the host network only for a spec that asks on a worker that grants it; a
// non-root worker (started through setpriv as uid 65534) keeps what it can and lists the rest;
// `--containment strict` refuses to start with any gap.

const NOBODY = ['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', '--'];
const codeRunner = (entrypoint: string, extra: Record<string, unknown> = {}) => ({ $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint, timeoutMs: 60_000, ...extra } });
const lastNumber = { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } };

let redis: TestRedis;
let service: net.Server;
let servicePort: number;
/** TMPDIR and HOME of the non-root worker: the shared work root under /tmp is root's. */
const nobodyHome = mkdtempSync(path.join(os.tmpdir(), 'rq-nobody-'));

beforeAll(async () => {
  redis = await startRedis({ private: true });
  service = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.end('hello\n');
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  servicePort = (service.address() as net.AddressInfo).port;
  chownSync(nobodyHome, 65534, 65534);
});

afterAll(async () => {
  await new Promise<void>((resolve) => (service ? service.close(() => resolve()) : resolve()));
  await redis?.stop();
  rmSync(nobodyHome, { recursive: true, force: true });
});

/** The worker's start line (its pino JSON), parsed. */
function startLine(worker: WorkerProcess): Record<string, unknown> {
  const line = worker.output().split('\n').find((l) => l.includes('"worker starting'));
  if (!line) throw new Error(`no start line in:\n${worker.output()}`);
  return JSON.parse(line) as Record<string, unknown>;
}

/** Runs `specs` on a fresh queue with a worker of `options` (through `wrapper`); returns the Results by task key, and the worker (stopped). */
async function runOn(options: Record<string, unknown>, specs: (runId: string) => RolloutSpec[], wrapper: readonly string[] = [], env: NodeJS.ProcessEnv = {}) {
  const q = new RawQueue(redis.url);
  const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2, metricsPort: 0, ...options }), env, wrapper);
  try {
    const all = specs(`hostile${Date.now().toString(36)}`);
    await q.add(all);
    const { results, failed } = await q.waitForAll(all.map((s) => s.leaseId), 120_000);
    expect([...failed]).toEqual([]);
    return { results: new Map([...results].map(([leaseId, result]) => [leaseId.split('.').pop() as string, result])), worker, q };
  } finally {
    worker.signal('SIGTERM');
    await worker.exited();
    await q.queue.close();
    q.redis.disconnect();
  }
}

describe('a root worker on this machine', () => {
  it('starts at sealed, says so with no gap in its start line, status and /metrics, and runs benign python3 and node artifacts ok with reward 1', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2, metricsPort: 0 }));
    try {
      expect(startLine(worker)).toMatchObject({ containment: 'sealed', containmentGaps: [], allowNetwork: false });
      expect(String(startLine(worker).msg)).toContain('containment sealed (launcher rq-launch --serve); containmentGaps: none');
      const port = /^ready \S+ (\d+)/m.exec(worker.output())?.[1];
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('rollout_queue_containment{level="sealed"} 1');
      expect(metrics).not.toMatch(/^rollout_queue_containment_gap\{/m);
      const status = await cli(['status', '--queue', q.name, '--json'], { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX });
      const seen = (JSON.parse(status.stdout) as { workers: Array<Record<string, unknown>> }).workers.find((w) => w.name === worker.name);
      expect(seen).toMatchObject({ containment: 'sealed', containmentGaps: 'none' });
      const runId = `benign${Date.now().toString(36)}`;
      const specs = [
        makeSpec(runId, 'py', { rendered: 'import json, sys\nprint(json.load(sys.stdin)["x"] * 2)\n', task: { id: 'py', x: 21, gold: 42 }, run: codeRunner('main.py'), reward: lastNumber }),
        makeSpec(runId, 'js', { rendered: "process.stdin.on('data', (d) => console.log(JSON.parse(d).x * 2));", task: { id: 'js', x: 21, gold: 42 }, run: codeRunner('main.js'), reward: lastNumber }),
      ];
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId), 120_000);
      for (const spec of specs) {
        const result = results.get(spec.leaseId);
        expect({ kind: result?.kind, reward: result?.reward, error: result?.error }).toEqual({ kind: 'ok', reward: 1, error: null });
        expect((result?.output as { containment?: unknown }).containment).toEqual({ level: 'sealed', gaps: [] });
      }
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.queue.close();
      q.redis.disconnect();
    }
  });

  it('ends a spec asking for the host network caller / NetworkNotAllowed, naming --allow-network; a worker started with it grants exactly that spec the network', async () => {
    const specs = (runId: string) => [
      makeSpec(runId, 'asks', { rendered: artifact('network'), task: { id: 'asks', targets: [['127.0.0.1', servicePort]] }, run: codeRunner('main.py'), sandbox: { env: [], memoryMb: 1024, network: 'host' } }),
      makeSpec(runId, 'plain', { rendered: artifact('network'), task: { id: 'plain', targets: [['127.0.0.1', servicePort]] }, run: codeRunner('main.py') }),
    ];
    const refused = await runOn({}, specs);
    expect(refused.results.get('asks')?.kind).toBe('caller');
    expect(refused.results.get('asks')?.error).toEqual({ type: 'NetworkNotAllowed', message: expect.stringContaining('--allow-network') });
    expect(JSON.parse((refused.results.get('plain')?.output as { stdout: string }).stdout)).toEqual({ [`127.0.0.1:${servicePort}`]: 'ConnectionRefusedError' });
    const granted = await runOn({ allowNetwork: true }, specs);
    expect(startLine(granted.worker)).toMatchObject({ containment: 'sealed', allowNetwork: true });
    expect(JSON.parse((granted.results.get('asks')?.output as { stdout: string }).stdout)).toEqual({ [`127.0.0.1:${servicePort}`]: 'connected' });
    expect(JSON.parse((granted.results.get('plain')?.output as { stdout: string }).stdout)).toEqual({ [`127.0.0.1:${servicePort}`]: 'ConnectionRefusedError' });
  });

  it('starts with --containment strict (no gap here)', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ containment: 'strict' }));
    expect(startLine(worker)).toMatchObject({ containment: 'sealed', containmentGaps: [] });
    worker.signal('SIGTERM');
    expect(await worker.exited()).toEqual({ code: 0, signal: null });
    await q.queue.close();
    q.redis.disconnect();
  });
});

describe('a non-root worker (uid 65534, started through setpriv)', () => {
  const env = { TMPDIR: nobodyHome, HOME: nobodyHome };

  it('lists identity, memory, processes and cpu as gaps, and still gives each program only its own loopback and /proc', async () => {
    const specs = (runId: string) => [
      makeSpec(runId, 'net', { rendered: artifact('network'), task: { id: 'net', targets: [['127.0.0.1', servicePort], ['127.0.0.1', Number(new URL(redis.url).port)]] }, run: codeRunner('main.py') }),
      makeSpec(runId, 'proc', { rendered: artifact('proc_snoop'), task: { id: 'proc', environMarker: nobodyHome, cmdlineMarker: 'worker-main.mjs', worker: 1 }, run: codeRunner('main.py') }),
      makeSpec(runId, 'who', { rendered: artifact('privileges'), task: { id: 'who' }, run: codeRunner('main.py') }),
    ];
    const { results, worker } = await runOn({}, specs, NOBODY, env);
    const line = startLine(worker);
    expect(line.containment).toBe('namespace');
    expect((line.containmentGaps as Array<{ boundary: string }>).map((gap) => gap.boundary)).toEqual(['identity', 'memory', 'processes', 'cpu']);
    const stdout = (key: string) => JSON.parse((results.get(key)?.output as { stdout: string }).stdout.split('\n')[0] as string) as Record<string, unknown>;
    expect(Object.values(stdout('net'))).toEqual(['ConnectionRefusedError', 'ConnectionRefusedError']);
    expect(stdout('proc')).toMatchObject({ environ_with_marker: 0, cmdline_with_marker: 0 });
    // It sees another uid than the worker's (its kernel uid is the worker's: the identity gap), with no capabilities.
    expect(stdout('who')).toMatchObject({ uid: 65533, capEff: '0000000000000000', noNewPrivs: '1', mount: 'refused' });
    expect((results.get('who')?.output as { containment?: unknown }).containment).toEqual({ level: 'namespace', gaps: ['identity', 'cpu', 'memory', 'processes'] });
  });

  // Fresh-user report: with no writable TMPDIR the tenant view cannot be made, yet the level read
  // `namespace` (whose docs row has the network closed), 8 of 9 boundaries open, at info.
  it('with no writable TMPDIR: level pid-namespace, the start line at warn naming each gap, why and the fix', async () => {
    const unwritable = mkdtempSync(path.join(os.tmpdir(), 'rq-root-only-'));
    const q = new RawQueue(redis.url);
    try {
      const worker = await startWorkerProcess(q.workerOptions({ concurrency: 1 }), { TMPDIR: unwritable, HOME: nobodyHome }, NOBODY);
      const line = startLine(worker);
      worker.signal('SIGTERM');
      await worker.exited();
      expect(line).toMatchObject({ level: 40, containment: 'pid-namespace' });
      const gaps = line.containmentGaps as Array<{ boundary: string; reason: string }>;
      expect(gaps.map((gap) => gap.boundary)).toEqual(['network', 'proc', 'filesystem', 'identity', 'disk', 'memory', 'processes', 'cpu']);
      expect(gaps[0]?.reason).toContain('give the worker a TMPDIR it may write');
      expect(line.msg).toContain('containment pid-namespace');
      expect(line.msg).toContain('containmentGaps: 8 of 9 boundaries open: network (');
      expect(line.msg).toContain('fix: install bubblewrap');
    } finally {
      await q.queue.close();
      q.redis.disconnect();
      rmSync(unwritable, { recursive: true, force: true });
    }
  });

  it('refuses to start with --containment strict: exit 1, naming each gap and its fix', async () => {
    const outcome = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(NOBODY[0] as string, [...NOBODY.slice(1), process.execPath, BIN, 'worker', '--queue', 'strict-refused', '--containment', 'strict'], {
        env: { ...process.env, ...env, REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stdout?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('worker not started: containment strict: this host leaves 4 boundaries open:');
    for (const boundary of ['identity', 'memory', 'processes', 'cpu']) expect(outcome.stderr).toContain(`${boundary} (`);
    expect(outcome.stderr.split('; fix: ')).toHaveLength(5);
  });
});

/** Runs the real CLI with `args` and `env`; resolves with its exit code and output. */
function cli(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
