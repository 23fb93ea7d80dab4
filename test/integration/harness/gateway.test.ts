import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { runCli, startCli, type CliProcess } from '../cli/cli-process.js';

const TOKEN = 'test-token-0123456789abcdef';
const MAX_BODY_BYTES = 4096;

let redis: TestRedis;
let dir: string;
let q: RawQueue;
let worker: WorkerProcess;

/** A `rollout-queue gateway` process (the real bin), and where it answers. */
interface GatewayProcess {
  readonly cli: CliProcess;
  readonly url: string;
  readonly port: number;
}

async function startGatewayProcess(port = 0): Promise<GatewayProcess> {
  const cli = startCli(
    ['gateway', '--port', String(port), '--queue', q.name, '--dispatch', 'rq-fixtures/dispatches:scripted', '--auth-token-env', 'GW_TOKEN', '--max-body-bytes', String(MAX_BODY_BYTES)],
    { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX, GW_TOKEN: TOKEN, LOG_LEVEL: 'info' } },
  );
  let match: RegExpExecArray | null = null;
  await waitFor(() => {
    if (cli.child.exitCode !== null) throw new Error(`gateway exited early:\n${cli.stderr()}`);
    match = /gateway: (http:\/\/127\.0\.0\.1:(\d+))/.exec(cli.stdout());
    return match !== null;
  }, 'the gateway to listen', 20_000);
  const [, url, shownPort] = match as unknown as [string, string, string];
  return { cli, url, port: Number(shownPort) };
}

async function stopGateway(gateway: GatewayProcess): Promise<void> {
  gateway.cli.child.kill('SIGTERM');
  const outcome = await gateway.cli.done;
  expect(outcome.code).toBe(0);
}

let gateway: GatewayProcess;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-gateway-'));
  q = new RawQueue(redis.url);
  // Labelled since issue 9: a dispatch's placement labels route it to workers that have them
  // (the first test dispatches with placement {gpu: 'none'}); unplaced dispatches run here too.
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 2, placement: { gpu: 'none' }, placementPollMs: 100 }));
  gateway = await startGatewayProcess();
});
afterAll(async () => {
  if (gateway) await stopGateway(gateway);
  worker?.signal('SIGTERM');
  await worker?.exited();
  await q?.close();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

interface Answer {
  readonly status: number;
  readonly json: Record<string, unknown>;
  /** Requests made (1 + retries). */
  readonly tries: number;
  /** Status and error type of each answer before the last, in order. */
  readonly retried: ReadonlyArray<readonly [number, string | undefined]>;
}

/**
 * The harness' `httpDispatch` client as it behaves: POST /dispatch with a bearer token, retry
 * on 5xx/408/429 and lost connections with back-off, never on 4xx; an aborted signal throws
 * AbortError and is never retried.
 */
async function httpDispatch(url: string, body: unknown, options: { token?: string | null; signal?: AbortSignal; maxTries?: number; raw?: string } = {}): Promise<Answer> {
  const maxTries = options.maxTries ?? 4;
  const retried: Array<[number, string | undefined]> = [];
  for (let tries = 1; ; tries++) {
    let status: number;
    let json: Record<string, unknown>;
    try {
      const response = await fetch(`${url}/dispatch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(options.token === null ? {} : { authorization: `Bearer ${options.token ?? TOKEN}` }) },
        body: options.raw ?? JSON.stringify(body),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      status = response.status;
      json = (await response.json()) as Record<string, unknown>;
    } catch (err) {
      if ((err as Error).name === 'AbortError' || tries >= maxTries) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** tries));
      continue;
    }
    const retryable = status >= 500 || status === 408 || status === 429;
    if (!retryable || tries >= maxTries) return { status, json, tries, retried };
    retried.push([status, (json.error as { type?: string } | undefined)?.type]);
    await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** tries));
  }
}

/** Reads `GET /runs/ID/results` NDJSON until the trailer, or until `enough` items (then hangs up). */
async function readResults(url: string, runId: string, after: number | null, enough = Infinity): Promise<{ items: Record<string, unknown>[]; end: Record<string, unknown> | undefined; cursor: string | null }> {
  const response = await fetch(`${url}/runs/${runId}/results${after === null ? '' : `?after=${after}`}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const items: Record<string, unknown>[] = [];
  let buffered = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { items, end: undefined, cursor: response.headers.get('x-rollout-queue-cursor') };
    buffered += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const item = JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>;
      buffered = buffered.slice(newline + 1);
      if (item.end) {
        await reader.cancel();
        return { items, end: item, cursor: response.headers.get('x-rollout-queue-cursor') };
      }
      items.push(item);
      if (items.length >= enough) {
        await reader.cancel();
        return { items, end: undefined, cursor: response.headers.get('x-rollout-queue-cursor') };
      }
    }
  }
}

const request = (cellId: string, scenario: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ scenario, cellId, runAttemptId: 'gw-attempt-1', rep: 0, seed: 3, ...extra });

describe('rollout-queue gateway: the harness dispatch wire over the durable queue', () => {
  it('200 with the artifact and the receipts; a retry of the same cell attempt gets it again without a second run', async () => {
    const logFile = path.join(dir, 'ok.log');
    const first = await httpDispatch(gateway.url, request('ok-cell', { echo: 'hello', logFile, paidCalls: 2, usd: 0.1, files: { 'trace/notes.txt': 'small file' } }, { placement: { gpu: 'none' } }));
    expect(first.status).toBe(200);
    expect(first.json.files).toEqual({ 'trace/notes.txt': 'small file' });
    expect(first.json.artifact).toMatchObject({ echo: 'hello', cellId: 'ok-cell', rep: 0, seed: 3, placement: null, placementLabels: { gpu: 'none' } });
    expect((first.json.costReceipts as { callId: string }[]).map((r) => r.callId).sort()).toEqual(['ok-cell-call-0', 'ok-cell-call-1']);
    const again = await httpDispatch(gateway.url, request('ok-cell', { echo: 'hello', logFile, paidCalls: 2, usd: 0.1, files: { 'trace/notes.txt': 'small file' } }));
    expect(again.json.artifact).toEqual(first.json.artifact);
    expect(lines(logFile)).toHaveLength(1);
  });

  it('two identical requests at once attach to one lease and run once', async () => {
    const logFile = path.join(dir, 'twice.log');
    const body = request('twin-cell', { echo: 'twin', logFile, delayMs: 300 });
    const [a, b] = await Promise.all([httpDispatch(gateway.url, body), httpDispatch(gateway.url, body)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.json.artifact).toEqual(b.json.artifact);
    expect(lines(logFile)).toHaveLength(1);
  });

  it('4xx answers are terminal and never retried: 401, 400 (malformed JSON, missing runAttemptId), 404, 413', async () => {
    const missingToken = await httpDispatch(gateway.url, request('c', {}), { token: null });
    expect(missingToken).toMatchObject({ status: 401, tries: 1, json: { error: { type: 'Unauthorized' } } });
    const wrongToken = await httpDispatch(gateway.url, request('c', {}), { token: 'not-the-token-at-all' });
    expect(wrongToken).toMatchObject({ status: 401, tries: 1 });
    const malformed = await httpDispatch(gateway.url, undefined, { raw: '{"scenario": ' });
    expect(malformed).toMatchObject({ status: 400, tries: 1, json: { error: { type: 'MalformedJson' } } });
    const noAttempt = await httpDispatch(gateway.url, { scenario: {}, cellId: 'c' });
    expect(noAttempt).toMatchObject({ status: 400, tries: 1, json: { error: { type: 'InvalidDispatchRequest', message: expect.stringContaining('runAttemptId') } } });
    const tooBig = await httpDispatch(gateway.url, request('big', { blob: 'x'.repeat(MAX_BODY_BYTES) }));
    expect(tooBig).toMatchObject({ status: 413, tries: 1, json: { error: { type: 'BodyTooLarge', message: expect.stringContaining(String(MAX_BODY_BYTES)) } } });
    for (const [method, where] of [['GET', '/dispatch'], ['POST', '/elsewhere'], ['DELETE', '/runs/x']] as const) {
      const response = await fetch(`${gateway.url}${where}`, { method, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(404);
    }
  });

  it('503 for infrastructure is retried by the client; 500 for a model failure carries {error: {type, message}} and its receipts', async () => {
    const logFile = path.join(dir, 'flaky.log');
    const flaky = await httpDispatch(gateway.url, request('flaky-cell', { echo: 'recovered', logFile, transientUntil: 2 }));
    expect(flaky.status).toBe(200);
    // The worker re-dispatched the transient failure itself (same lease): one request, two runs.
    expect(flaky.tries).toBe(1);
    expect(lines(logFile)).toHaveLength(2);
    const down = await httpDispatch(gateway.url, request('down-cell', { logFile: path.join(dir, 'down.log'), transientUntil: 100 }), { maxTries: 2 });
    expect(down).toMatchObject({ status: 503, tries: 2, json: { error: { type: 'RedispatchLimit', message: expect.stringContaining('transient failure of down-cell') }, kind: 'infrastructure' } });
    const model = await httpDispatch(gateway.url, request('model-cell', { paidCalls: 2, throw: { name: 'WrongAnswer', message: 'expected 4' } }), { maxTries: 1 });
    expect(model).toMatchObject({ status: 500, json: { error: { type: 'WrongAnswer', message: expect.stringContaining('expected 4') }, kind: 'model' } });
    expect((model.json.costReceipts as unknown[]).length).toBe(2);
  });

  it('499: a client that hangs up cancels the lease on the worker', async () => {
    const logFile = path.join(dir, 'hangup.log');
    const body = JSON.stringify(request('hangup-cell', { logFile, delayMs: 60_000 }));
    const req = http.request(`${gateway.url}/dispatch`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(body);
    await waitFor(() => lines(logFile).length === 1, 'the dispatch to start on the worker');
    req.destroy();
    await waitFor(() => /dispatch cancelled: the client went away/.test(gateway.cli.stderr()), 'the gateway to cancel the lease', 10_000);
    // The worker stopped the attempt (its job finished early) and the call's keys were deleted.
    await waitFor(async () => (await q.redis.keys(`${TEST_PREFIX}:${q.name}:dispatch-*`)).length === 0, 'the cancelled job to finish and be cleaned up', 20_000);
    expect(lines(logFile)).toHaveLength(1);
  });

  // Fresh-user report: a client that timed out and retried at once got "400 Cancelled: the run was
  // cancelled while this rollout was running", kept for 10 minutes (the retry found the cancelled run).
  it('a retry right after a hang-up is never answered with the cancelled attempt: 503 while it is cleaned up, then the cell runs again', async () => {
    const logFile = path.join(dir, 'hangup-retry.log');
    const cell = request('hangup-retry-cell', { logFile, delayFirstMs: 60_000 });
    const cancels = (): number => gateway.cli.stderr().split('dispatch cancelled: the client went away').length - 1;
    const before = cancels();
    const req = http.request(`${gateway.url}/dispatch`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(JSON.stringify(cell));
    await waitFor(() => lines(logFile).length === 1, 'the dispatch to start on the worker');
    req.destroy();
    await waitFor(() => cancels() > before, 'the gateway to cancel the lease', 10_000);
    const again = await httpDispatch(gateway.url, cell, { maxTries: 10 });
    expect(again.status, JSON.stringify(again.json)).toBe(200);
    expect(again.json.artifact).toMatchObject({ cellId: 'hangup-retry-cell' });
    expect(lines(logFile)).toHaveLength(2);
  });

  it('a gateway stopped mid-dispatch (SIGTERM) answers the call in flight within its grace period, then exits; the lease ran once', async () => {
    const logFile = path.join(dir, 'restart.log');
    const call = httpDispatch(gateway.url, request('restart-cell', { echo: 'after restart', logFile, delayMs: 1500 }), { maxTries: 8 });
    await waitFor(() => lines(logFile).length === 1, 'the dispatch to start on the worker');
    const port = gateway.port;
    await stopGateway(gateway);
    const answer = await call;
    // Issue 29: SIGTERM answered in-flight calls 503 at once, and a client's 2 retries ended before
    // a restarted gateway listened.
    expect([answer.status, answer.tries]).toEqual([200, 1]);
    expect(answer.json.artifact).toMatchObject({ echo: 'after restart' });
    expect(lines(logFile)).toHaveLength(1);
    gateway = await startGatewayProcess(port);
  });

  it('a gateway SIGKILLed mid-dispatch: the restarted one takes the run over once its coordinator lease expires; one run', async () => {
    const logFile = path.join(dir, 'sigkill.log');
    const call = httpDispatch(gateway.url, request('sigkill-cell', { echo: 'after a crash', logFile, delayMs: 1000 }), { maxTries: 10 });
    await waitFor(() => lines(logFile).length === 1, 'the dispatch to start on the worker');
    const port = gateway.port;
    gateway.cli.child.kill('SIGKILL');
    expect((await gateway.cli.done).signal).toBe('SIGKILL');
    gateway = await startGatewayProcess(port);
    const answer = await call;
    expect(answer.status).toBe(200);
    expect(answer.json.artifact).toMatchObject({ echo: 'after a crash' });
    expect(lines(logFile)).toHaveLength(1);
  });

  it('runs API: a draft the workers would refuse for its built-in Refs is refused before anything is enqueued, as the CLI refuses it (fresh-user report)', async () => {
    const runId = 'gw-runs-builtin';
    const post = async (draft: Record<string, unknown>): Promise<{ status: number; error: { type: string; message: string } }> => {
      const res = await fetch(`${gateway.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ runId, drafts: [draft] }) });
      return { status: res.status, error: ((await res.json()) as { error: { type: string; message: string } }).error };
    };
    const reward = { $ref: 'rollout-queue/rewards:lastNumber', config: {} };
    // The user's exact drafts: a misspelt codeRunner option, and a task without its gold answer.
    const misspelt = await post({ rendered: { files: { 'main.py': 'print(4)' } }, task: { id: 't0', answer: 4 }, run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypiont: 'main.py' } }, reward });
    expect(misspelt.status).toBe(400);
    expect(misspelt.error).toMatchObject({ type: 'InvalidRunRequest', message: expect.stringMatching(/^body field drafts\[0\]\.run\.config: .*entrypiont.*; nothing was enqueued$/) });
    const noGold = await post({ rendered: 'print(4)', task: { id: 't0', question: '2+2' }, run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py' } }, reward });
    expect(noGold.status).toBe(400);
    expect(noGold.error.message).toBe('body field drafts[0].task.answer: rollout-queue/rewards:lastNumber reads the gold answer at task.answer, which this task does not have (its keys: id, question); add it, or name the task\'s key in reward.config.goldKey; nothing was enqueued');
    expect((await fetch(`${gateway.url}/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
  });

  it('runs API: NDJSON Results with a cursor, each exactly once across a gateway restart (SIGTERM)', async () => {
    const runId = 'gw-runs-restart';
    const drafts = Array.from({ length: 6 }, (_, i) => ({
      rendered: 'r',
      task: { id: `t${i}`, delayMs: 150 + 250 * i },
      run: { $ref: 'rq-fixtures/failures:echo', config: {} },
      reward: { $ref: 'rq-fixtures/failures:constant', config: {} },
    }));
    const post = (): Promise<Response> => fetch(`${gateway.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ runId, drafts }) });
    // Fresh-user report: two identical drafts got 202 and one Result; refused before anything is enqueued now.
    const twice = await fetch(`${gateway.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ runId, drafts: [drafts[0], drafts[0]] }) });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: { type: string; message: string } }).error).toEqual({ type: 'InvalidRunRequest', message: `body field drafts: drafts #0 and #1 name the same lease ${runId}.t0 (both by their task.id); give each draft a distinct taskKey or task.id; nothing was enqueued` });
    // Fresh-user report: a draft without run/reward got 202 and then a caller Result.
    const invalid = await fetch(`${gateway.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ runId, drafts: [drafts[0], { task: { id: 'bad' } }] }) });
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'InvalidRunRequest', message: expect.stringMatching(/^body field drafts\[1\]: InvalidSpec: .*\brun\b.*; nothing was enqueued$/) });
    expect((await fetch(`${gateway.url}/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    expect((await post()).status).toBe(202);
    const first = await readResults(gateway.url, runId, 0, 2);
    expect(first.items).toHaveLength(2);
    const port = gateway.port;
    await stopGateway(gateway);
    gateway = await startGatewayProcess(port);
    // Fresh-user report: a reader that only GETs after the restart hung until the drafts were posted again.
    const orphan = await fetch(`${gateway.url}/runs/${runId}/results?after=${first.items.length}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(orphan.status).toBe(409);
    expect(((await orphan.json()) as { error: unknown }).error).toEqual({ type: 'RunNotDelivered', message: `run "${runId}" is running but no gateway is delivering its Results (the gateway that ran it restarted or stopped); POST /runs again with the same runId and drafts to resume it, then read again` });
    // Fresh-user report: other drafts under the run id got 202 and were dropped unseen.
    const other = await fetch(`${gateway.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ runId, drafts: drafts.slice(1) }) });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'RunConflict', message: expect.stringMatching(new RegExp(`^run "${runId}" was posted before with other drafts \\(sha256 [0-9a-f]{12}…, this request's [0-9a-f]{12}…\\); nothing was enqueued: post the same drafts to resume that run, or these drafts under a new runId$`)) });
    expect((await post()).status).toBe(202);
    const rest = await readResults(gateway.url, runId, first.items.length);
    expect(rest.end).toMatchObject({ end: true, state: 'completed', count: 6 });
    const leases = [...first.items, ...rest.items].map((item) => item.leaseId);
    expect([...leases].sort()).toEqual(drafts.map((_, i) => `${runId}.t${i}`));
    // Without `after` a stream starts at the last acknowledged cursor.
    const resumed = await readResults(gateway.url, runId, null);
    expect(resumed.cursor).toBe('2');
    expect(resumed.items.map((item) => item.leaseId)).toEqual(rest.items.map((item) => item.leaseId));
    const status = await (await fetch(`${gateway.url}/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as Record<string, unknown>;
    expect(status).toMatchObject({ runId, state: 'completed', results: 6, run: { delivered: 6, status: 'completed' } });
    const unknown = await fetch(`${gateway.url}/runs/no-such-run/results`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(unknown.status).toBe(404);
    // POST /runs/ID/ack moves the cursor forward only; a count past the listed Results names the field.
    const ack = (id: string, body: string): Promise<Response> => fetch(`${gateway.url}/runs/${id}/ack`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body });
    const moved = await ack(runId, '{"count": 5}');
    expect([moved.status, await moved.json()]).toEqual([200, { runId, ackedThrough: 5 }]);
    expect((await readResults(gateway.url, runId, null)).cursor).toBe('5');
    const back = await ack(runId, '{"count": 1}');
    expect([back.status, await back.json()]).toEqual([200, { runId, ackedThrough: 5 }]);
    for (const bad of ['{"count": 7}', '{"count": -1}', '{"count": 1.5}', '{}']) {
      const refused = await ack(runId, bad);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'InvalidAck', message: expect.stringMatching(/^body field count: .* must be a whole number from 0 to 6 /) });
    }
    expect((await ack(runId, 'not json')).status).toBe(400);
    // A results cursor past the listed Results is refused too (fresh-user report: after=9 on a
    // run of 5 answered 200, moved the cursor to 9, and a resumed client got none of them).
    for (const after of ['9', '7', '-1', '1.5', '']) {
      const refused = await fetch(`${gateway.url}/runs/${runId}/results?after=${after}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'InvalidCursor', message: expect.stringMatching(/must be a whole number from 0 to 6 /) });
    }
    const state = (await (await fetch(`${gateway.url}/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { ackedThrough: number };
    expect(state.ackedThrough).toBe(5);
    expect((await readResults(gateway.url, runId, 6)).end).toMatchObject({ end: true, count: 6 });
    expect((await ack('no-such-run', '{"count": 0}')).status).toBe(404);
    // Fresh-user report: cancelling a completed run answered {"removed":0,"workersNotified":3}.
    const late = await fetch(`${gateway.url}/runs/${runId}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect([late.status, await late.json()]).toEqual([200, { runId, removed: 0, workersNotified: 0, alreadyEnded: 'completed' }]);
  });

  it('runs API: a cancelled run lists the Results of its rollouts that were running, then ends; its record expires (fresh-user report)', async () => {
    const runId = 'gw-runs-cancel';
    const drafts = Array.from({ length: 8 }, (_, i) => ({
      rendered: 'r',
      task: { id: `t${i}`, delayMs: i === 0 ? 100 : 20_000 },
      run: { $ref: 'rq-fixtures/failures:echo', config: {} },
      reward: { $ref: 'rq-fixtures/failures:constant', config: {} },
    }));
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${gateway.url}/runs`, { method: 'POST', headers: auth, body: JSON.stringify({ runId, drafts }) })).status).toBe(202);
    const first = await readResults(gateway.url, runId, 0, 1);
    expect(first.items.map((item) => item.leaseId)).toEqual([`${runId}.t0`]);
    // Wait until two rollouts run (the worker's concurrency), so the cancel finds them active.
    await waitFor(async () => (await q.queue.getActiveCount()) === 2, 'two active rollouts', 30_000);
    const cancel = await fetch(`${gateway.url}/runs/${runId}/cancel`, { method: 'POST', headers: auth });
    const { removed } = (await cancel.json()) as { removed: number };
    expect(cancel.status).toBe(200);
    const rest = await readResults(gateway.url, runId, 1);
    expect(rest.end).toMatchObject({ end: true, state: 'cancelled', count: 8 - removed });
    expect(rest.items.map((item) => [item.kind, (item.error as { type?: string } | null)?.type])).toEqual([['caller', 'Cancelled'], ['caller', 'Cancelled']]);
    const ttl = await q.redis.pttl(q.keys.run(runId));
    expect(ttl).toBeGreaterThan(0);
  });

  it('runs API: a run a caller Result stopped ends with the fix an HTTP client has, not a library option (fresh-user report)', async () => {
    const runId = 'gw-runs-stopped';
    const drafts = [{ rendered: 'r', task: { id: 't0' }, run: { $ref: 'not-allowed-pkg:thing', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} } }];
    expect((await fetch(`${gateway.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ runId, drafts }) })).status).toBe(202);
    const { items, end } = await readResults(gateway.url, runId, 0);
    expect(items.map((item) => item.kind)).toEqual(['caller']);
    expect(end).toMatchObject({ end: true, state: 'stopped', error: expect.stringMatching(new RegExp(`^run "${runId}" stopped at lease ${runId}\\.t0, a caller error \\(RefError: .*not-allowed-pkg.*\\)\\. No further drafts were enqueued and its waiting jobs were removed; fix the draft or its Ref and post the drafts under a new runId$`)) });
  });

  it('refuses to start without auth off loopback, and without any auth choice', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX };
    const offLoopback = await runCli(['gateway', '--port', '0', '--host', '0.0.0.0', '--dispatch', 'rq-fixtures/dispatches:scripted', '--no-auth'], { env });
    expect(offLoopback.code).toBe(2);
    expect(offLoopback.stderr).toContain('--no-auth is refused with --host 0.0.0.0');
    const noChoice = await runCli(['gateway', '--port', '0', '--dispatch', 'rq-fixtures/dispatches:scripted'], { env });
    expect(noChoice.code).toBe(2);
    expect(noChoice.stderr).toContain('--auth-token-env');
  });

  // Review note: the runs API needs no Dispatch, yet `gateway` refused to start without --dispatch.
  it('without --dispatch serves the runs API and answers POST /dispatch 404 NoDispatch; --dispatch-config alone is a usage error', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX };
    const configOnly = await runCli(['gateway', '--port', '0', '--dispatch-config', '{}', '--no-auth'], { env });
    expect(configOnly.code).toBe(2);
    expect(configOnly.stderr).toBe('error: --dispatch-config configures the Dispatch of --dispatch, which is not given; pass --dispatch module:export too, or drop --dispatch-config\n');
    const runsOnly = startCli(['gateway', '--port', '0', '--queue', q.name, '--no-auth'], { env });
    try {
      let url = '';
      await waitFor(() => {
        if (runsOnly.child.exitCode !== null) throw new Error(`gateway exited early:\n${runsOnly.stderr()}`);
        url = /gateway: (http:\/\/127\.0\.0\.1:\d+) \(queue "[^"]+", runs API only: no --dispatch, NO AUTH, loopback only\)/.exec(runsOnly.stdout())?.[1] ?? '';
        return url !== '';
      }, 'the runs-only gateway to listen', 20_000);
      const dispatch = await fetch(`${url}/dispatch`, { method: 'POST', body: '{}' });
      expect(dispatch.status).toBe(404);
      expect(((await dispatch.json()) as { error: { type: string; message: string } }).error).toEqual({
        type: 'NoDispatch',
        message: 'this gateway was started without a Dispatch, so it serves the runs API only (POST /runs, GET /runs/ID, GET /runs/ID/results?after=N, POST /runs/ID/ack, POST /runs/ID/cancel, GET /metrics); start it with --dispatch module:export (startGateway\'s dispatch) to serve POST /dispatch',
      });
      const runId = 'gw-runs-only';
      const drafts = [{ rendered: 'r', task: { id: 't0' }, run: { $ref: 'rq-fixtures/failures:echo', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} } }];
      expect((await fetch(`${url}/runs`, { method: 'POST', body: JSON.stringify({ runId, drafts }) })).status).toBe(202);
      const results = await readResults(url, runId, 0);
      expect(results.items.map((item) => [item.leaseId, item.kind])).toEqual([[`${runId}.t0`, 'ok']]);
      expect(results.end).toMatchObject({ end: true, state: 'completed', count: 1 });
    } finally {
      runsOnly.child.kill('SIGTERM');
      expect((await runsOnly.done).code).toBe(0);
    }
  });

  // Fresh-user report: a --dispatch of this package (which ships no Dispatch) started, and every POST /dispatch answered 400.
  it('refuses a --dispatch of this package before it starts', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX };
    const outcome = await runCli(['gateway', '--port', '0', '--dispatch', 'rollout-queue/dispatch:nope', '--no-auth'], { env });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('error: --dispatch rollout-queue/dispatch:nope: rollout-queue has no built-in for --dispatch; name the module:export of a Dispatch factory of your own (e.g. @acme/evals:solve), which workers --allow\n');
  });
});
