import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The package's own subpath, as a coordinator without Redis imports it.
import { httpDispatch, HttpDispatchError } from 'rollout-queue/dispatch/http';
import { CostLedger, runCampaign, type Scenario } from '../../fixtures/harness/run-campaign.js';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import type { CliProcess } from '../cli/cli-process.js';
import { startGatewayCli } from '../../helpers/gateway-cli.js';

// Issue 29 item 7: rollout-queue's own TypeScript client of the gateway (`rollout-queue/dispatch/http`),
// the Python client's counterpart: the harness' httpDispatch options and semantics, plus what the
// gateway adds. Driven by the harness-shaped runCampaign fixture against a real gateway and worker.

const TOKEN = 'client-token-0123456789abcdef';
const MODEL_KEY = 'sk-client-0123456789';
let redis: TestRedis;
let dir: string;
let q: RawQueue;
let worker: WorkerProcess;
let gateway: CliProcess;
let url = '';
let model: Server;
let modelUrl = '';

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-http-client-'));
  model = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: 'four', usage: { input: 10, output: 2, costUsd: 0.001 } })));
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/`;
  q = new RawQueue(redis.url);
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 2 }), { RQ_FAKE_MODEL_KEY: MODEL_KEY });
  ({ gateway, url } = await startGatewayCli(['--queue', q.name, '--dispatch', 'rq-fixtures/harness-worker:agent', '--auth-token-env', 'GW_TOKEN', '--env', 'RQ_FAKE_MODEL_KEY'], {
    REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX, GW_TOKEN: TOKEN, LOG_LEVEL: 'info',
  }));
});

afterAll(async () => {
  gateway?.child.kill('SIGTERM');
  await gateway?.done;
  worker?.signal('SIGTERM');
  await worker?.exited();
  await q?.close();
  await new Promise<void>((resolve) => model.close(() => resolve()));
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

describe('rollout-queue/dispatch/http: the TypeScript client of the gateway', () => {
  it("replays receipts through the harness meter once, writes the dispatch's files through ctx.artifacts and its spans into ctx.trace", async () => {
    const logFile = path.join(dir, 'ok.log');
    const tries: number[] = [];
    const dispatch = httpDispatch({ url: `${url}/dispatch`, auth: () => TOKEN, fetchImpl: async (input, init) => ((tries.push(1)), fetch(input, init)) });
    const runDir = path.join(dir, 'run');
    const campaign = await runCampaign<Scenario, { answer: string }>({ scenarios: [{ id: 'c', kind: 'qa', modelUrl, logFile }, { id: 'wrong', kind: 'qa', modelUrl, logFile, failAfterPaying: true }], dispatch: dispatch as never, runDir });
    expect(campaign.cells.map((cell) => [cell.cellId, cell.artifact?.answer ?? cell.error])).toEqual([
      ['c:r0', 'four'],
      ['wrong:r0', expect.stringMatching(/^httpDispatch .* failed \(500\): Error: .*wrong answer for wrong:r0/)],
    ]);
    // Each receipt once; the model failure is the cell's kept (final) answer: not retried.
    expect([...campaign.costLedger.receipts.keys()].sort()).toEqual(['c:r0:llm', 'wrong:r0:llm']);
    expect(campaign.costLedger.conflicts).toEqual([]);
    expect(campaign.costUsd).toBeCloseTo(0.002, 10);
    expect(tries).toHaveLength(2);
    expect(readFileSync(path.join(runDir, 'c:r0', 'notes.txt'), 'utf8')).toBe('answer of c:r0: four');
    expect(campaign.spans.filter((span) => span.cellId === 'c:r0').map((span) => span.name)).toEqual(['agent.solve']);
    expect(lines(logFile)).toHaveLength(2);
  });

  it('a final answer (the cell already ran its re-dispatch budget) is thrown at once, never retried; a new runAttemptId runs the cell again', async () => {
    const logFile = path.join(dir, 'final.log');
    let tries = 0;
    const dispatch = httpDispatch({ url: `${url}/dispatch`, auth: TOKEN, retries: 5, fetchImpl: async (input, init) => ((tries++), fetch(input, init)) });
    const ledger = new CostLedger();
    const ctx = (runAttemptId: string) => ({ cellId: 'flaky', runAttemptId, rep: 0, seed: 0, signal: new AbortController().signal, cost: { runPaidCall: (input: Parameters<CostLedger['runPaidCall']>[0]) => ledger.runPaidCall({ ...input, phase: 'dispatch' }) } });
    const failure = await dispatch({ modelUrl, logFile, transient: true }, ctx('final-1') as never).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(HttpDispatchError);
    expect(failure).toMatchObject({ status: 503, type: 'RedispatchLimit', kind: 'infrastructure', final: { executions: 3, keptUntilMs: expect.any(Number) }, tries: 1 });
    expect(tries).toBe(1);
    expect(lines(logFile)).toHaveLength(3);
    // The same cell attempt again: the kept answer, no run.
    await expect(dispatch({ modelUrl, logFile, transient: true }, ctx('final-1') as never)).rejects.toMatchObject({ final: { executions: 3 } });
    expect(lines(logFile)).toHaveLength(3);
    await expect(dispatch({ modelUrl, logFile, transient: true }, ctx('final-2') as never)).rejects.toMatchObject({ final: { executions: 3 } });
    expect(lines(logFile)).toHaveLength(6);
  });

  it("the caller's abort cancels the request and is never retried", async () => {
    const logFile = path.join(dir, 'abort.log');
    let tries = 0;
    const dispatch = httpDispatch({ url: `${url}/dispatch`, auth: TOKEN, fetchImpl: async (input, init) => ((tries++), fetch(input, init)) });
    const controller = new AbortController();
    const call = dispatch({ modelUrl, logFile, delayMs: 30_000 }, { cellId: 'aborted', runAttemptId: 'abort-1', rep: 0, seed: 0, signal: controller.signal });
    await waitFor(() => lines(logFile).length === 1, 'the dispatch to start', 30_000);
    controller.abort(new Error('campaign cancelled'));
    await expect(call).rejects.toThrow('campaign cancelled');
    expect(tries).toBe(1);
    await waitFor(() => /dispatch cancelled: the client went away/.test(gateway.stderr()), 'the gateway to cancel the lease', 10_000);
  });

  it('refuses options without exactly one of url and resolveUrl', () => {
    expect(() => httpDispatch({})).toThrow('exactly one of `url` and `resolveUrl`');
    expect(() => httpDispatch({ url: 'http://x', resolveUrl: () => 'http://y' })).toThrow('exactly one');
  });
});
