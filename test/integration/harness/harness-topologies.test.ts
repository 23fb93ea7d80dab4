import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchRunId, queueDispatch } from '../../../src/harness/coordinator/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { httpDispatch as harnessHttpDispatch, HttpDispatchError as HarnessHttpError } from '../../fixtures/harness/http-dispatch.js';
import { runCampaign, type CampaignResult, type Scenario } from '../../fixtures/harness/run-campaign.js';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import type { CliProcess } from '../cli/cli-process.js';
import { startGatewayCli } from '../../helpers/gateway-cli.js';

// Issue 29: the evaluation harness unchanged. Its HTTP client and its runCampaign-shaped driver
// are test fixtures written from its public page alone (test/fixtures/harness: they import nothing
// of rollout-queue), and its reference worker is a Dispatch written against its ctx only
// (rq-fixtures/harness-worker). They run the page's three topologies against real workers, real
// gateway processes and a real Redis: in-process queueDispatch, one gateway, two gateways routed by
// resolveUrl + cellPlacement.

const TOKEN = 'harness-token-0123456789abcdef';
const MODEL_KEY = `sk-test-${process.pid}-0123456789`;
const AGENT = { $ref: 'rq-fixtures/harness-worker:agent', config: {} };
const quiet = createLogger({}, { write: () => true });

type Artifact = { cellId: string; answer: string; receiptCostUsd: number; placement: string | null; wroteTo: boolean; keyFromCtx: string | null };

let redis: TestRedis;
let dir: string;
let model: Server;
let modelUrl: string;
/** What the fake model API saw: the bearer token and cell of each call. */
const modelCalls: Array<{ auth: string | undefined; cellId: string }> = [];

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-harness-'));
  model = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { cellId } = JSON.parse(body) as { cellId: string };
      modelCalls.push({ auth: req.headers.authorization, cellId });
      if (req.headers.authorization !== `Bearer ${MODEL_KEY}`) return res.writeHead(401).end('{"error":"bad key"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: 'four', usage: { input: 100, output: 20, costUsd: 0.002 } }));
    });
  });
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1/chat`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => model.close(() => resolve()));
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
/** Executions of each cell, from the Dispatch's log file. */
const executions = (file: string): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const line of lines(file)) counts[line.split(' ')[0] as string] = (counts[line.split(' ')[0] as string] ?? 0) + 1;
  return counts;
};
const modelCallsOf = (cellIds: readonly string[]): number => modelCalls.filter((call) => cellIds.includes(call.cellId)).length;

/** A worker process on `q` that has the model key in its environment. */
const startWorker = (q: RawQueue): Promise<WorkerProcess> => startWorkerProcess(q.workerOptions({ concurrency: 4, lockDurationMs: 3000, stalledIntervalMs: 1000 }), { RQ_FAKE_MODEL_KEY: MODEL_KEY });

/** A `rollout-queue gateway` process (the real bin) on `queue`, naming the model key as the dispatch's secret. */
async function startGateway(queue: string, extra: readonly string[] = [], env: Record<string, string> = {}): Promise<{ cli: CliProcess; url: string }> {
  const { gateway, url } = await startGatewayCli(['--queue', queue, '--dispatch', AGENT.$ref, '--auth-token-env', 'GW_TOKEN', '--env', 'RQ_FAKE_MODEL_KEY', ...extra], {
    REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX, GW_TOKEN: TOKEN, LOG_LEVEL: 'info', ...env,
  });
  return { cli: gateway, url };
}

/** The scenarios of a campaign: two plain cells, one whose model provider answers 503, one that fails after paying. */
function scenarios(label: string, logFile: string, tags: (i: number) => string[] = () => []): Scenario[] {
  return [
    { id: `${label}-a`, kind: 'qa', prompt: '2+2', modelUrl, logFile, tags: tags(0) },
    { id: `${label}-b`, kind: 'qa', prompt: '3+1', modelUrl, logFile, tags: tags(1) },
    { id: `${label}-flaky`, kind: 'qa', modelUrl, logFile, transient: true, tags: tags(2) },
    { id: `${label}-paid-then-wrong`, kind: 'qa', prompt: '1+1', modelUrl, logFile, failAfterPaying: true, tags: tags(3) },
  ];
}

/**
 * What every topology must give the harness: every artifact right, with the placement the cell
 * got and the secret redacted; every receipt once in its ledger (also of the cell that failed after
 * paying), each cell's costUsd; the transient cell run at most 3 times, every other cell once;
 * the named secret reached the model API on every paid call.
 */
function expectCampaign(campaign: CampaignResult<Artifact>, label: string, logFile: string, placements: Record<string, string | null> = {}): void {
  const ok = [`${label}-a:r0`, `${label}-b:r0`];
  const paid = [...ok, `${label}-paid-then-wrong:r0`];
  const byId = new Map(campaign.cells.map((cell) => [cell.cellId, cell]));
  for (const cellId of ok) {
    expect(byId.get(cellId)?.artifact, cellId).toEqual({ cellId, answer: 'four', receiptCostUsd: 0.002, placement: placements[cellId] ?? null, wroteTo: true, keyFromCtx: '[secret RQ_FAKE_MODEL_KEY]' });
    expect(byId.get(cellId)?.costUsd, cellId).toBeCloseTo(0.002, 10);
  }
  expect(byId.get(`${label}-flaky:r0`)?.error).toMatch(/503/);
  expect(byId.get(`${label}-flaky:r0`)?.costUsd).toBe(0);
  expect(byId.get(`${label}-paid-then-wrong:r0`)?.error).toMatch(/wrong answer/);
  expect(byId.get(`${label}-paid-then-wrong:r0`)?.costUsd).toBeCloseTo(0.002, 10);
  // Every receipt once in the harness' ledger: exactly the paid calls, each at its price.
  expect([...campaign.costLedger.receipts.keys()].sort()).toEqual(paid.map((cellId) => `${cellId}:llm`).sort());
  for (const receipt of campaign.costLedger.receipts.values()) expect(receipt).toMatchObject({ channel: 'agent', actor: 'solver', model: 'fake-gpt', inputTokens: 100, outputTokens: 20, costUsd: 0.002 });
  expect(campaign.costUsd).toBeCloseTo(0.006, 10);
  // One cell, one budget: the transient ran 3 times (the plane's re-dispatches), whatever the client retried.
  expect(executions(logFile)).toEqual({ ...Object.fromEntries(paid.map((cellId) => [cellId, 1])), [`${label}-flaky:r0`]: 3 });
  // The object-form runPaidCall ran on the worker with the named secret: one model call per paid cell.
  expect(modelCallsOf(paid)).toBe(paid.length);
  expect(modelCalls.filter((call) => paid.includes(call.cellId)).every((call) => call.auth === `Bearer ${MODEL_KEY}`)).toBe(true);
}

describe('the harness unchanged: its client, its runCampaign ctx and its Dispatch over rollout-queue', () => {
  it('topology 1, in-process: runCampaign with queueDispatch gets the real artifacts, its receipts through runPaidCall, the files and spans', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorker(q);
    const dispatch = queueDispatch<Scenario, Artifact>({ dispatch: AGENT, producerOptions: { redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX, logger: quiet }, sandbox: { env: ['RQ_FAKE_MODEL_KEY'] } });
    try {
      const logFile = path.join(dir, 't1.log');
      const runDir = path.join(dir, 't1-run');
      const campaign = await runCampaign<Scenario, Artifact>({ scenarios: scenarios('t1', logFile), dispatch, runDir, maxConcurrency: 4 });
      expectCampaign(campaign, 't1', logFile);
      // No replay was refused: queueDispatch replays each receipt once.
      expect(campaign.costLedger.conflicts).toEqual([]);
      // The files the Dispatch wrote on the worker reach the harness' artifact writer, under its run dir.
      const cellA = campaign.cells.find((cell) => cell.cellId === 't1-a:r0');
      expect(Object.keys(cellA?.files ?? {}).sort()).toEqual(['notes.txt', 'usage.json']);
      expect(readFileSync(path.join(runDir, 't1-a:r0', 'notes.txt'), 'utf8')).toBe('answer of t1-a:r0: four');
      expect(JSON.parse(readFileSync(path.join(runDir, 't1-a:r0', 'usage.json'), 'utf8'))).toEqual({ input: 100, output: 20, costUsd: 0.002 });
      // The call's span is a handle of the harness' writer (ended), and the Dispatch's own spans come back into it.
      const spansOfA = campaign.spans.filter((span) => span.cellId === 't1-a:r0');
      expect(spansOfA.map((span) => span.name).sort()).toEqual(['agent.solve', 'rollout-queue.dispatch']);
      expect(spansOfA.find((span) => span.name === 'agent.solve')?.attributes).toMatchObject({ model: 'fake-gpt', placement: 'none', outputTokens: 20 });
      expect(campaign.spans.find((span) => span.cellId === 't1-flaky:r0' && span.name === 'rollout-queue.dispatch')?.attributes).toMatchObject({ error: expect.stringContaining('503') });
    } finally {
      await dispatch.close();
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });

  describe('topology 2, one gateway: the harness client unchanged but for the URL', () => {
    let q: RawQueue;
    let worker: WorkerProcess;
    let gateway: { cli: CliProcess; url: string };
    let collector: Server;
    const exported: Array<{ traceId: string; name: string }> = [];
    beforeAll(async () => {
      collector = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => {
          const parsed = JSON.parse(body) as { resourceSpans?: { scopeSpans?: { spans?: { traceId: string; name: string }[] }[] }[] };
          for (const r of parsed.resourceSpans ?? []) for (const s of r.scopeSpans ?? []) for (const span of s.spans ?? []) exported.push({ traceId: span.traceId, name: span.name });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
      });
      await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
      q = new RawQueue(redis.url);
      worker = await startWorker(q);
      gateway = await startGateway(q.name, ['--grace-ms', '20000'], { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}` });
    });
    afterAll(async () => {
      if (gateway.cli.child.exitCode === null) {
        gateway.cli.child.kill('SIGTERM');
        await gateway.cli.done;
      }
      worker?.signal('SIGTERM');
      await worker?.exited();
      await q?.close();
      await new Promise<void>((resolve) => collector.close(() => resolve()));
    });

    it('runCampaign with httpDispatch({ url, auth }): artifacts, receipts once in its ledger, ≤ 3 runs of a transient; final answers say so', async () => {
      const logFile = path.join(dir, 't2.log');
      const answers: Array<{ status: number; final: string | null }> = [];
      const fetchImpl: typeof fetch = async (url, init) => {
        const response = await fetch(url, init);
        answers.push({ status: response.status, final: response.headers.get('x-rollout-queue-final') });
        return response;
      };
      const dispatch = harnessHttpDispatch<Scenario, Artifact>({ url: `${gateway.url}/dispatch`, auth: TOKEN, timeoutMs: 60_000, retries: 2, fetchImpl });
      const campaign = await runCampaign<Scenario, Artifact>({ scenarios: scenarios('t2', logFile), dispatch, runDir: path.join(dir, 't2-run'), maxConcurrency: 4 });
      expectCampaign(campaign, 't2', logFile);
      // The client retried the 5xx answers as the page says (3 tries each); the plane ran nothing
      // more: each retry got the kept answer, marked final.
      expect(answers.filter((a) => a.status === 503)).toHaveLength(3);
      expect(answers.filter((a) => a.status === 503).every((a) => /^executions=3; kept-until=\d{4}-/.test(a.final ?? ''))).toBe(true);
      // The client replays each answer's receipts: the ledger refused the repeats of the retried 500, never counted them.
      expect(new Set(campaign.costLedger.conflicts)).toEqual(new Set(['t2-paid-then-wrong:r0:llm']));
      // /metrics (prom-client) counts them; one log line per request with status, ms, cellId.
      const metrics = await (await fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      expect(metrics).toMatch(/^rollout_queue_gateway_requests_total\{route="dispatch",status="200"\} 2$/m);
      expect(metrics).toMatch(/^rollout_queue_gateway_requests_total\{route="dispatch",status="503"\} 3$/m);
      expect(metrics).toMatch(/^rollout_queue_gateway_final_answers_total 6$/m);
      const logged = gateway.cli.stderr().split('\n').filter((line) => line.includes('"msg":"request"')).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(logged.filter((line) => line.cellId === 't2-flaky:r0').map((line) => [line.path, line.status, typeof line.ms])).toEqual(Array.from({ length: 3 }, () => ['/dispatch', 503, 'number']));
    });

    it('the client traceparent is continued: the gateway exports its dispatch span and the Dispatch spans in the client trace', async () => {
      const traceId = 'f'.repeat(16) + 'a'.repeat(16);
      const dispatch = harnessHttpDispatch<Scenario, Artifact>({ url: `${gateway.url}/dispatch`, auth: TOKEN, headers: { traceparent: `00-${traceId}-${'b'.repeat(16)}-01` } });
      const campaign = await runCampaign<Scenario, Artifact>({ scenarios: [{ id: 'traced', kind: 'qa', prompt: '2+2', modelUrl }], dispatch, runDir: path.join(dir, 't2-trace') });
      expect(campaign.cells[0]?.artifact).toMatchObject({ answer: 'four' });
      // The gateway's batch exporter sends within its schedule delay (5 s by default).
      await waitFor(() => exported.some((span) => span.traceId === traceId && span.name === 'agent.solve'), () => `the Dispatch span in trace ${traceId}; got ${JSON.stringify(exported)}`, 20_000);
      expect(exported.filter((span) => span.traceId === traceId).map((span) => span.name)).toEqual(expect.arrayContaining(['rollout-queue.dispatch', 'agent.solve']));
    });

    it('413 is a status to Node fetch in 5 of 5 tries of an 11 MiB body (it was EPIPE in 10 of 12)', async () => {
      const body = JSON.stringify({ scenario: { blob: 'x'.repeat(11 * 1024 * 1024) }, cellId: 'big', runAttemptId: 'big-1', rep: 0, seed: 0 });
      const statuses: Array<number | string> = [];
      for (let i = 0; i < 5; i++) {
        try {
          const response = await fetch(`${gateway.url}/dispatch`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
          statuses.push(response.status);
          expect(((await response.json()) as { error: { type: string } }).error.type).toBe('BodyTooLarge');
        } catch (err) {
          statuses.push(`${(err as Error).message} (${String((err as { cause?: { code?: string } }).cause?.code)})`);
        }
      }
      expect(statuses).toEqual([413, 413, 413, 413, 413]);
    });

    it('SIGTERM of the gateway mid-dispatch answers the call in flight, then it exits 0', async () => {
      const logFile = path.join(dir, 't2-sigterm.log');
      const dispatch = harnessHttpDispatch<Scenario, Artifact>({ url: `${gateway.url}/dispatch`, auth: TOKEN, retries: 0 });
      const running = runCampaign<Scenario, Artifact>({ scenarios: [{ id: 'sigterm', kind: 'qa', prompt: '2+2', modelUrl, logFile, delayMs: 2000 }], dispatch, runDir: path.join(dir, 't2-sigterm') });
      await waitFor(() => lines(logFile).length === 1, 'the dispatch to start on the worker', 30_000);
      gateway.cli.child.kill('SIGTERM');
      const campaign = await running;
      expect(campaign.cells[0]).toMatchObject({ artifact: { answer: 'four' }, costUsd: expect.closeTo(0.002, 10) });
      expect((await gateway.cli.done).code).toBe(0);
      expect(lines(logFile)).toHaveLength(1);
    });
  });

  describe('topology 3, two gateways routed by resolveUrl + cellPlacement', () => {
    let east: RawQueue;
    let west: RawQueue;
    let workers: WorkerProcess[] = [];
    let gateways: Record<string, { cli: CliProcess; url: string }> = {};
    beforeAll(async () => {
      // The placement keys cellPlacement returns are queue names: each region's gateway and workers serve one.
      east = new RawQueue(redis.url, `use1-${process.pid}`);
      west = new RawQueue(redis.url, `euw1-${process.pid}`);
      workers = await Promise.all([startWorker(east), startWorker(west)]);
      gateways = { [east.name]: await startGateway(east.name, ['--keep-answer-ms', '2000']), [west.name]: await startGateway(west.name, ['--keep-answer-ms', '2000']) };
    });
    afterAll(async () => {
      for (const gateway of Object.values(gateways)) {
        if (gateway.cli.child.exitCode === null && gateway.cli.child.signalCode === null) gateway.cli.child.kill('SIGTERM');
        await gateway.cli.done;
      }
      for (const worker of workers) worker.signal('SIGTERM');
      await Promise.all(workers.map((worker) => worker.exited()));
      await east?.close();
      await west?.close();
    });

    /** The page's REGION_URLS, and a failover fetchImpl (the page's "optional fetchImpl override") to the other region when one does not answer. */
    const regionUrls = (): Record<string, string> => ({ [east.name]: `${gateways[east.name]?.url}/dispatch`, [west.name]: `${gateways[west.name]?.url}/dispatch` });
    const failover: typeof fetch = async (url, init) => {
      try {
        return await fetch(url, init);
      } catch (err) {
        if ((init?.signal as AbortSignal | undefined)?.aborted) throw err;
        const other = Object.values(regionUrls()).find((candidate) => candidate !== String(url));
        return fetch(other as string, init);
      }
    };

    it('cells fan out by region: each gateway serves its cells on its workers; artifacts, receipts and budgets as in-process', async () => {
      const logFile = path.join(dir, 't3.log');
      const dispatch = harnessHttpDispatch<Scenario, Artifact>({ resolveUrl: ({ placement }) => regionUrls()[placement ?? east.name] as string, auth: TOKEN });
      const campaign = await runCampaign<Scenario, Artifact>({
        scenarios: scenarios('t3', logFile, (i) => (i % 2 === 1 ? ['eu'] : [])),
        dispatch,
        runDir: path.join(dir, 't3-run'),
        cellPlacement: ({ scenario }) => (scenario.tags?.includes('eu') ? west.name : east.name),
        maxConcurrency: 8,
      });
      expectCampaign(campaign, 't3', logFile, { 't3-a:r0': east.name, 't3-b:r0': west.name });
      const served = (queue: string): string[] => (gateways[queue] as { cli: CliProcess }).cli.stderr().split('\n').filter((line) => line.includes('"msg":"request"')).map((line) => (JSON.parse(line) as { cellId?: string }).cellId ?? '');
      expect(new Set(served(east.name))).toEqual(new Set(['t3-a:r0', 't3-flaky:r0']));
      expect(new Set(served(west.name))).toEqual(new Set(['t3-b:r0', 't3-paid-then-wrong:r0']));
    });

    it('SIGKILL of one of two gateways mid-dispatch: the retry to the other returns the answer without a second run', async () => {
      const logFile = path.join(dir, 't3-sigkill.log');
      const dispatch = harnessHttpDispatch<Scenario, Artifact>({ resolveUrl: ({ placement }) => regionUrls()[placement ?? east.name] as string, auth: TOKEN, fetchImpl: failover });
      const running = runCampaign<Scenario, Artifact>({ scenarios: [{ id: 'killed-gw', kind: 'qa', prompt: '2+2', modelUrl, logFile, delayMs: 3000 }], dispatch, runDir: path.join(dir, 't3-kill'), cellPlacement: () => east.name });
      await waitFor(() => lines(logFile).length === 1, 'the dispatch to start on the east worker', 30_000);
      const killed = gateways[east.name] as { cli: CliProcess };
      killed.cli.child.kill('SIGKILL');
      expect((await killed.cli.done).signal).toBe('SIGKILL');
      const campaign = await running;
      expect(campaign.cells[0]).toMatchObject({ artifact: { cellId: 'killed-gw:r0', answer: 'four', placement: east.name }, costUsd: expect.closeTo(0.002, 10) });
      expect([...campaign.costLedger.receipts.keys()]).toEqual(['killed-gw:r0:llm']);
      expect(lines(logFile)).toHaveLength(1);
      expect(modelCallsOf(['killed-gw:r0'])).toBe(1);
    });

    it('a dispatch run whose gateway died and whose client never came back is finished: completed, its cost in status, its answer kept for a late retry', async () => {
      const logFile = path.join(dir, 't3-abandoned.log');
      const westGateway = gateways[west.name] as { cli: CliProcess; url: string };
      const runAttemptId = 'abandoned-attempt';
      const cellId = 'abandoned:r0';
      const cell = { scenarios: [{ id: 'abandoned', kind: 'qa', prompt: '2+2', modelUrl, logFile, delayMs: 1500 }], runAttemptId, cellPlacement: () => east.name };
      // The client gives up at once (no retries) when its gateway dies.
      const first = runCampaign<Scenario, Artifact>({ ...cell, dispatch: harnessHttpDispatch<Scenario, Artifact>({ url: `${westGateway.url}/dispatch`, auth: TOKEN, retries: 0 }), runDir: path.join(dir, 't3-first') });
      await waitFor(() => lines(logFile).length === 1, 'the dispatch to start', 30_000);
      westGateway.cli.child.kill('SIGKILL');
      await westGateway.cli.done;
      expect((await first).cells[0]).toMatchObject({ cellId, error: expect.any(String), costUsd: 0 });
      // A gateway of the queue (restarted) finds the run nobody waits on, and finishes it.
      gateways[east.name] = await startGateway(east.name, ['--keep-answer-ms', '2000']);
      const runId = dispatchRunId(runAttemptId, cellId);
      const status = async (): Promise<{ run: { status: string } | null; cost: { totalUsd: number | null; receipts: number } | null }> =>
        (await (await fetch(`${gateways[east.name]?.url}/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as never;
      await waitFor(async () => (await status()).run?.status === 'completed', 'the abandoned run to complete', 60_000, 250);
      expect((await status()).cost).toMatchObject({ receipts: 1, totalUsd: 0.002 });
      expect(gateways[east.name]?.cli.stderr()).toContain('finishing an abandoned dispatch run');
      // The late retry gets the kept answer and its receipt, without a second run.
      const late = await runCampaign<Scenario, Artifact>({ ...cell, dispatch: harnessHttpDispatch<Scenario, Artifact>({ url: `${gateways[east.name]?.url}/dispatch`, auth: TOKEN }), runDir: path.join(dir, 't3-late') });
      expect(late.cells[0]).toMatchObject({ artifact: { answer: 'four' }, costUsd: expect.closeTo(0.002, 10) });
      expect([...late.costLedger.receipts.keys()]).toEqual([`${cellId}:llm`]);
      expect(lines(logFile)).toHaveLength(1);
    });
  });

  it('a 4xx answer (a wrong token) reaches the page client as its HttpDispatchError with the status, not retried', async () => {
    const q = new RawQueue(redis.url);
    const gateway = await startGateway(q.name);
    try {
      const dispatch = harnessHttpDispatch<Scenario, Artifact>({ url: `${gateway.url}/dispatch`, auth: 'wrong-token-0123456789' });
      const failure = await dispatch({ id: 'x', kind: 'qa' }, { cellId: 'x', runAttemptId: 'r', rep: 0, seed: 0, signal: new AbortController().signal } as never).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(HarnessHttpError);
      expect((failure as HarnessHttpError).status).toBe(401);
    } finally {
      gateway.cli.child.kill('SIGTERM');
      await gateway.cli.done;
      await q.close();
    }
  });
});
