import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { REPO_ROOT, startCli, type CliProcess } from '../cli/cli-process.js';

// clients/python against a real gateway process and real worker processes, run by the Debian
// python3 (the client is standard library only; see .ci/run for its install).
const TOKEN = 'python-token-0123456789abcdef';
let redis: TestRedis;
let dir: string;
let q: RawQueue;
let worker: WorkerProcess;
let gateway: CliProcess;
let url: string;

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-python-'));
  q = new RawQueue(redis.url);
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 3 }));
  gateway = startCli(['gateway', '--port', '0', '--queue', q.name, '--dispatch', 'rq-fixtures/dispatches:scripted', '--auth-token-env', 'GW_TOKEN'], {
    env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX, GW_TOKEN: TOKEN },
  });
  await waitFor(() => {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited early:\n${gateway.stderr()}`);
    return /gateway: http:\/\/\S+/.test(gateway.stdout());
  }, 'the gateway to listen', 20_000);
  url = (/gateway: (http:\/\/127\.0\.0\.1:\d+)/.exec(gateway.stdout()) as RegExpExecArray)[1] as string;
});
afterAll(async () => {
  gateway?.child.kill('SIGTERM');
  await gateway?.done;
  worker?.signal('SIGTERM');
  await worker?.exited();
  await q?.close();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

function python(script: string, args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', [script, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.once('close', (code, signal) => resolve({ code, signal, stderr, lines: stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) }));
  });
}

describe('the Python client (clients/python/rollout_queue_client.py)', () => {
  it('dispatches, maps rollouts in completion order, resumes, cancels, and raises typed errors for each kind', async () => {
    const { code, lines, stderr } = await python(path.join(REPO_ROOT, 'test', 'fixtures', 'python', 'client_checks.py'), [url, TOKEN, dir]);
    expect(code, stderr).toBe(0);
    const by = new Map(lines.map((line) => [line.check as string, line]));
    expect(by.get('dispatch')).toMatchObject({ artifact: { echo: 'from python', cellId: 'py-cell', rep: 1, seed: 9 }, receipts: [{ callId: 'py-cell-call-0' }] });
    expect(by.get('retry')).toEqual({ check: 'retry', same: true });
    expect(by.get('big')).toEqual({ check: 'big', size: 400_000 });
    const logFile = path.join(dir, 'py-dispatch.log');
    expect(existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n') : []).toHaveLength(1);
    expect(by.get('model')).toEqual({ check: 'model', kind: 'model', type: 'WrongAnswer', status: 500, receipts: 2 });
    expect(by.get('caller')).toEqual({ check: 'caller', kind: 'caller', type: 'InvalidDispatchRequest', status: 400 });
    expect(by.get('auth')).toEqual({ check: 'auth', status: 401, caller: true });
    expect(by.get('infrastructure')).toEqual({ check: 'infrastructure', status: 503, type: 'RedispatchLimit' });
    // Completion order, not submission order: t2 is the fastest draft, t0 the slowest.
    expect(by.get('map')).toEqual({ check: 'map', leases: ['py-run.t2', 'py-run.t1', 'py-run.t0'], kinds: ['ok', 'ok', 'ok'] });
    expect(by.get('resume')).toEqual({ check: 'resume', leases: [] });
    expect(by.get('status')).toEqual({ check: 'status', state: 'completed', results: 3 });
    expect(by.get('cancel')).toMatchObject({ check: 'cancel', kind: 'caller' });
    expect((by.get('cancel')?.seen as string[])[0]).toBe('py-cancel.fast');
  });

  it('a client SIGKILLed after handling 30 of 60 Results sees only the one it was handling again when restarted (before: all 30)', async () => {
    const script = path.join(REPO_ROOT, 'test', 'fixtures', 'python', 'consume_then_die.py');
    // ack_interval_s 0: every Result the loop asked past is acknowledged before the next is handled.
    const first = await python(script, [url, TOKEN, 'py-killed', '60', '30', '0']);
    expect(first.signal, first.stderr).toBe('SIGKILL');
    const before = first.lines.map((line) => line.leaseId as string);
    expect(before).toHaveLength(30);
    const second = await python(script, [url, TOKEN, 'py-killed', '60', '0', '0']);
    expect(second.code, second.stderr).toBe(0);
    const after = second.lines.map((line) => line.leaseId as string);
    // The 30th was being handled when the process died (the loop never asked for the 31st): it comes again, nothing else does.
    expect(after.filter((leaseId) => before.includes(leaseId))).toEqual([before[29]]);
    expect(new Set([...before, ...after]).size).toBe(60);
    expect(after).toHaveLength(31);
  });

  it('runs the README evolution loop: Python artifacts through codeRunner\'s argv form, best candidate found', async () => {
    const { code, lines, stderr } = await python(path.join(REPO_ROOT, 'examples', 'python-evolution', 'evolve.py'), [], {
      RQ_GATEWAY_URL: url, RQ_GATEWAY_TOKEN: TOKEN, RUN_PREFIX: 'evolve-test', GENERATIONS: '2',
    });
    expect(code, stderr).toBe(0);
    expect(lines.filter((line) => 'generation' in line)).toHaveLength(2);
    expect(lines.at(-1)).toEqual({ done: true, best: '+', fitness: 1 });
  });
});
