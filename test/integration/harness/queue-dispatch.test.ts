import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dispatch, DispatchCostReceipt } from '../../../src/harness/worker/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { leaseIdFor } from '../../../src/lease/index.js';
import { DispatchError, dispatchRunId, queueDispatch, type QueueDispatch } from '../../../src/harness/coordinator/index.js';
import { LEASE_LOST_WAIT_MS, RolloutQueue } from '../../../src/producer/index.js';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Short locks so a SIGKILLed worker's lease comes back in seconds.
const FAST = { lockDurationMs: 2000, stalledIntervalMs: 1000, shutdownGraceMs: 200 };
const DISPATCH = { $ref: 'rq-fixtures/dispatches:scripted', config: {} };
const quiet = createLogger({}, { write: () => true });

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-dispatch-'));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A ledger like the harness' coordinator one: every receipt recorded, in order. */
function ledger(): { record(receipt: DispatchCostReceipt): void; receipts: DispatchCostReceipt[] } {
  const receipts: DispatchCostReceipt[] = [];
  return { record: (receipt) => void receipts.push(receipt), receipts };
}

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

interface Cell {
  readonly cellId: string;
  readonly rep: number;
  readonly scenario: Record<string, unknown>;
}
type Outcome = { artifact: unknown } | { error: DispatchError } | { aborted: true };

/**
 * The evaluation harness' loop as it calls Dispatch: cells (scenarios × reps) taken by `lanes`
 * concurrent lanes, each retried while the error says `retryable` (up to `maxTries`), and
 * everything stopped by the owner's signal (an aborted call is never retried).
 */
async function harnessLoop(dispatch: Dispatch, cells: readonly Cell[], options: { lanes: number; maxTries: number; signal?: AbortSignal; runAttemptId: string; cost?: ReturnType<typeof ledger> }): Promise<{ outcomes: Map<string, Outcome>; tries: Map<string, number> }> {
  const outcomes = new Map<string, Outcome>();
  const tries = new Map<string, number>();
  const todo = [...cells];
  const lane = async (): Promise<void> => {
    for (let cell = todo.shift(); cell && !options.signal?.aborted; cell = todo.shift()) {
      for (let attempt = 1; ; attempt++) {
        tries.set(cell.cellId, attempt);
        try {
          const ctx = { cellId: cell.cellId, runAttemptId: options.runAttemptId, rep: cell.rep, seed: 1000 + cell.rep, ...(options.signal ? { signal: options.signal } : {}), ...(options.cost ? { cost: options.cost } : {}) };
          outcomes.set(cell.cellId, { artifact: await dispatch(cell.scenario, ctx) });
          break;
        } catch (err) {
          if ((err as Error).name === 'AbortError') {
            outcomes.set(cell.cellId, { aborted: true });
            return;
          }
          if (err instanceof DispatchError && err.retryable && attempt < options.maxTries) continue;
          outcomes.set(cell.cellId, { error: err as DispatchError });
          break;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: options.lanes }, lane));
  return { outcomes, tries };
}

async function stop(workers: WorkerProcess[]): Promise<void> {
  for (const worker of workers) worker.signal('SIGTERM');
  await Promise.all(workers.map((worker) => worker.exited()));
}

/**
 * Keys a dispatch call may leave behind for longer than its answer's TTL: job hashes and run
 * bookkeeping. A run or lease key that expires no later than the run's kept answer (the record
 * saying its lease was delivered, the lease hash whose receipts `status` counts) is no leftover.
 */
async function leftoverKeys(q: RawQueue): Promise<string[]> {
  const keys = await q.redis.keys(`${TEST_PREFIX}:${q.name}:*`);
  const left: string[] = [];
  for (const key of keys.filter((key) => !key.includes(':~dispatch:') && (key.includes(':dispatch-') || key.includes(':~run:') || key.includes(':~lease:')))) {
    const runId = /:~(?:run|lease):(dispatch-[0-9a-f]+)/.exec(key)?.[1];
    // The answer's TTL is read first: a key expiring at the same moment then shows a TTL no larger.
    const answerTtl = runId ? await q.redis.pttl(q.keys.dispatchAnswer(runId)) : -2;
    const keyTtl = await q.redis.pttl(key);
    if (!(keyTtl > 0 && keyTtl <= answerTtl)) left.push(key);
  }
  return left;
}

type DispatchOptions = Partial<Parameters<typeof queueDispatch>[0]>;

function open(q: RawQueue, extra: DispatchOptions = {}): QueueDispatch {
  return queueDispatch({ dispatch: DISPATCH, producerOptions: { redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX, logger: quiet }, ...extra });
}

/** What a test body gets from {@link withDispatch}. */
interface DispatchSetup {
  readonly q: RawQueue;
  /** The dispatcher under test. */
  readonly dispatch: QueueDispatch;
  /** Opens another dispatcher on the queue (another process: a second gateway); closed with the rest. */
  readonly openOther: (extra?: DispatchOptions) => QueueDispatch;
}

/**
 * Runs `body` on a fresh queue with one worker process per entry of `workers` (its worker
 * options) and a dispatcher with `extra` options; then closes every dispatcher, stops the
 * workers and closes the queue, whatever the body did.
 */
async function withDispatch(body: (setup: DispatchSetup) => Promise<void>, { workers: options = [{}], extra = {} }: { workers?: Record<string, unknown>[]; extra?: DispatchOptions } = {}): Promise<void> {
  const q = new RawQueue(redis.url);
  const workers = await Promise.all(options.map((worker) => startWorkerProcess(q.workerOptions(worker))));
  const dispatch = open(q, extra);
  const others: QueueDispatch[] = [];
  const openOther = (more: DispatchOptions = {}): QueueDispatch => {
    const other = open(q, more);
    others.push(other);
    return other;
  };
  try {
    await body({ q, dispatch, openOther });
  } finally {
    for (const other of others) await other.close();
    await dispatch.close();
    await stop(workers);
    await q.close();
  }
}

describe('queueDispatch: the harness Dispatch over the durable queue', () => {
  it('runs the harness loop (scenarios × reps in lanes), retries transients, replays receipts once and leaves no per-call keys', () => withDispatch(async ({ q, dispatch }) => {
    const logFile = path.join(dir, 'loop.log');
    const scenarios = [
      { echo: 'plain', logFile },
      { echo: 'paid', logFile, paidCalls: 2, usd: 0.25 },
      { echo: 'flaky', logFile, transientUntil: 2 },
      { echo: 'files', logFile, files: { 'notes/out.txt': 'hello' } },
    ];
    const cells = scenarios.flatMap((scenario, s) => [0, 1].map((rep) => ({ cellId: `s${s}-r${rep}`, rep, scenario })));
    const cost = ledger();
    const { outcomes, tries } = await harnessLoop(dispatch, cells, { lanes: 3, maxTries: 3, runAttemptId: 'attempt-1', cost });
    for (const cell of cells) {
      expect(outcomes.get(cell.cellId)).toMatchObject({ artifact: { echo: cell.scenario.echo, cellId: cell.cellId, rep: cell.rep, seed: 1000 + cell.rep } });
    }
    // The flaky cells failed once with a transient (infrastructure) error: the plane re-dispatched
    // them itself (back-off, same lease), so the harness saw one successful try each.
    expect(tries.get('s2-r0')).toBe(1);
    expect(tries.get('s2-r1')).toBe(1);
    expect(tries.get('s0-r0')).toBe(1);
    expect(lines(logFile)).toHaveLength(cells.length + 2);
    expect(cost.receipts.map((r) => r.callId).sort()).toEqual(['s1-r0-call-0', 's1-r0-call-1', 's1-r1-call-0', 's1-r1-call-1']);
    expect(cost.receipts.every((r) => r.usd === 0.25 && r.label === 'fixture')).toBe(true);
    expect(readFileSync(path.join(dir, 'run-dir', 'attempt-1', 's3-r0', 'notes', 'out.txt'), 'utf8')).toBe('hello');
    // Every call's job and ledger are deleted after delivery; only answers (with a TTL) stay, and
    // the run records that say the lease was delivered, which expire with them.
    await waitFor(async () => (await leftoverKeys(q)).length === 0, 'per-call keys deleted');
    const answers = await q.redis.keys(`${TEST_PREFIX}:${q.name}:~dispatch:*`);
    expect(answers).toHaveLength(cells.length);
    expect(await q.redis.pttl(answers[0] as string)).toBeGreaterThan(0);
  }, { workers: [{ concurrency: 2 }, { concurrency: 2 }], extra: { runDir: path.join(dir, 'run-dir') } }));

  it('a retried call and two identical calls at once attach to one lease and run once', () => withDispatch(async ({ q, dispatch, openOther }) => {
    const logFile = path.join(dir, 'same.log');
    const spans: { name: string; attributes: unknown }[] = [];
    const trace = { span: async <T>(name: string, fn: () => T | Promise<T>, attributes?: unknown): Promise<T> => (spans.push({ name, attributes }), fn()) };
    const ctx = { cellId: 'cell-a', runAttemptId: 'attempt-same', rep: 0, seed: 7, trace };
    const scenario = { echo: 'once', logFile, delayMs: 300 };
    const [first, second] = await Promise.all([dispatch(scenario, ctx), dispatch(scenario, ctx)]);
    // Each call runs in its own span (the callback form); the Dispatch's own span on the worker
    // ("work") is replayed into the caller's trace once per call, with its worker timing.
    const worker = { name: 'work', attributes: { 'rollout-queue.startMs': expect.any(Number), 'rollout-queue.durationMs': expect.any(Number) } };
    expect(spans).toEqual([...[0, 1].map(() => ({ name: 'rollout-queue.dispatch', attributes: { cellId: 'cell-a', runAttemptId: 'attempt-same', queue: q.name } })), worker, worker]);
    expect(first).toEqual(second);
    const retried = await dispatch(scenario, ctx);
    expect(retried).toEqual(first);
    expect(lines(logFile)).toHaveLength(1);
    // Another process (a second dispatcher, e.g. a restarted gateway) attaches too.
    const other = openOther();
    expect(await other(scenario, ctx)).toEqual(first);
    expect(lines(logFile)).toHaveLength(1);
    // The same call in another process while this one runs it (fresh-user report: two
    // gateways ran one request twice): it waits for this one's lease, then finds it delivered
    // and answers with the kept answer.
    const both = { ...ctx, cellId: 'cell-b' };
    const mine = dispatch({ ...scenario, delayMs: 1500 }, both);
    await waitFor(() => lines(logFile).length === 2, 'the first call of cell-b started', 30_000);
    expect(await other({ ...scenario, delayMs: 1500 }, both)).toEqual(await mine);
    expect(lines(logFile)).toHaveLength(2);
  }, { workers: [{ concurrency: 2 }] }));

  it('two processes that start one call at the same moment run it once: the second waits for the lease and finds it delivered', () => withDispatch(async ({ q, dispatch, openOther }) => {
    const other = openOther();
    const logFile = path.join(dir, 'together.log');
    const ctx = { cellId: 'cell-together', runAttemptId: 'attempt-together', rep: 0, seed: 3 };
    const scenario = { echo: 'together', logFile, delayMs: 300 };
    const [mine, theirs] = await Promise.all([dispatch(scenario, ctx), other(scenario, ctx)]);
    expect(theirs).toEqual(mine);
    expect(lines(logFile)).toHaveLength(1);
    let left: string[] = [];
    await waitFor(async () => (left = await leftoverKeys(q)).length === 0, () => `per-call keys deleted (left: ${left.join(', ')})`);
  }, { workers: [{ concurrency: 2 }] }));

  it("a call another process runs for longer than the coordinator lease is waited for gets that process' answer", () => withDispatch(async ({ dispatch, openOther }) => {
    const other = openOther();
    const logFile = path.join(dir, 'long.log');
    const ctx = { cellId: 'cell-long', runAttemptId: 'attempt-long', rep: 0, seed: 0 };
    // Longer than a rollout() call waits for a held lease (then RunBusyError).
    const scenario = { echo: 'long', logFile, delayMs: LEASE_LOST_WAIT_MS + 2000 };
    const mine = dispatch(scenario, ctx);
    await waitFor(() => lines(logFile).length === 1, 'the first call started', 30_000);
    expect(await other(scenario, ctx)).toEqual(await mine);
    expect(lines(logFile)).toHaveLength(1);
  }));

  it('another request under a cell id already used is refused as DispatchConflict, in flight and after delivery, in another process too (fresh-user report: it got the first answer)', () => withDispatch(async ({ dispatch, openOther }) => {
    const logFile = path.join(dir, 'conflict.log');
    const conflict = { kind: 'caller', type: 'DispatchConflict', retryable: false };
    const ctx = { cellId: 's1-r0', runAttemptId: 'eval-7', rep: 0, seed: 0 };
    const first = dispatch({ echo: '2+2', logFile, delayMs: 300 }, ctx);
    await expect(dispatch({ echo: '3+3', logFile }, ctx)).rejects.toMatchObject(conflict);
    const answer = await first;
    await expect(dispatch({ echo: '3+3', logFile }, ctx)).rejects.toMatchObject(conflict);
    // The same request again is the kept answer; another seed is another request.
    expect(await dispatch({ echo: '2+2', logFile, delayMs: 300 }, ctx)).toEqual(answer);
    await expect(dispatch({ echo: '2+2', logFile, delayMs: 300 }, { ...ctx, seed: 1 })).rejects.toMatchObject(conflict);
    const other = openOther();
    await expect(other({ echo: '3+3', logFile }, ctx)).rejects.toThrow(/s1-r0.*eval-7.*another request/);
    // In flight in another process: it waits for this one's lease, then refuses (the kept answer is another request's).
    const cell = { ...ctx, cellId: 's2-r0' };
    const running = dispatch({ echo: '4+4', logFile, delayMs: 800 }, cell);
    await waitFor(() => lines(logFile).length === 2, 'the first call of s2-r0 started', 30_000);
    await expect(other({ echo: '5+5', logFile }, cell)).rejects.toMatchObject(conflict);
    await running;
    expect(lines(logFile)).toHaveLength(2);
  }, { workers: [{ concurrency: 2 }] }));

  it('receipts of a dispatch that failed after two paid calls reach the coordinator once each; a model failure is not retryable', () => withDispatch(async ({ dispatch }) => {
    const cost = ledger();
    const ctx = { cellId: 'pays-then-fails', runAttemptId: 'attempt-pay', rep: 0, seed: 0, cost };
    const scenario = { paidCalls: 2, usd: 0.5, throw: { name: 'JudgeRefused', message: 'the answer was empty' } };
    const failure = await dispatch(scenario, ctx).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(DispatchError);
    expect(failure).toMatchObject({ kind: 'model', retryable: false, type: 'JudgeRefused' });
    expect((failure as Error).message).toContain('the answer was empty');
    expect([...cost.receipts].sort((a, b) => a.callId.localeCompare(b.callId))).toEqual([
      { callId: 'pays-then-fails-call-0', usd: 0.5, label: 'fixture', units: { calls: 1 } },
      { callId: 'pays-then-fails-call-1', usd: 0.5, label: 'fixture', units: { calls: 1 } },
    ]);
    // A retry of the same cell attempt gets the same failure and replays nothing twice.
    await expect(dispatch(scenario, ctx)).rejects.toMatchObject({ kind: 'model' });
    expect(cost.receipts).toHaveLength(2);
  }));

  it('one ledger shared by every cell gets each cell\'s receipts, when cells name their paid calls alike (fresh-user report: one of three reached it)', () => withDispatch(async ({ dispatch }) => {
    const cost = ledger();
    const scenario = { paidCalls: 1, usd: 0.25, sameCallIds: true };
    for (const cellId of ['c1', 'c2', 'c3']) await dispatch(scenario, { cellId, runAttemptId: 'attempt-shared-ledger', rep: 0, seed: 1, cost });
    expect(cost.receipts.map((receipt) => receipt.callId)).toEqual(['call-0', 'call-0', 'call-0']);
    expect(cost.receipts.reduce((sum, receipt) => sum + receipt.usd, 0)).toBeCloseTo(0.75);
    // A retry of a cell attaches to its lease: its receipt is not replayed again.
    await dispatch(scenario, { cellId: 'c2', runAttemptId: 'attempt-shared-ledger', rep: 0, seed: 1, cost });
    expect(cost.receipts).toHaveLength(3);
  }));

  it('a cell run afresh after an abort pays again, and a shared ledger gets both receipts though their callIds are the same (fresh-user report: one of two)', () => withDispatch(async ({ q, dispatch }) => {
    const cost = ledger();
    const logFile = path.join(dir, 'pays-twice.log');
    const scenario = { logFile, paidCalls: 1, usd: 0.25, sameCallIds: true, delayFirstMs: 60_000 };
    const ctx = { cellId: 'pays-twice', runAttemptId: 'attempt-pays-twice', rep: 0, seed: 1, cost };
    const caller = new AbortController();
    const first = dispatch(scenario, { ...ctx, signal: caller.signal });
    await waitFor(() => lines(logFile).length === 1 && cost.receipts.length === 0, 'the first attempt paying and waiting');
    await waitFor(async () => (await q.redis.hkeys(q.keys.lease(leaseIdFor(dispatchRunId(ctx.runAttemptId, ctx.cellId), ctx.cellId)))).some((field) => field.startsWith('cost:')), 'its receipt stored');
    caller.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    expect(cost.receipts).toHaveLength(1);
    // The harness retries the cell: EarlierCallCancelled while the aborted run is cleaned up, then a fresh run that pays again.
    let artifact: unknown;
    for (let tries = 0; artifact === undefined; tries++) {
      try {
        artifact = await dispatch(scenario, ctx);
      } catch (err) {
        if (!(err instanceof DispatchError && err.type === 'EarlierCallCancelled') || tries > 100) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(lines(logFile)).toHaveLength(2);
    expect(cost.receipts.map((receipt) => receipt.callId)).toEqual(['call-0', 'call-0']);
    // A retry of the delivered call gets its kept answer: nothing is replayed again.
    await dispatch(scenario, ctx);
    expect(cost.receipts).toHaveLength(2);
  }));

  it('a bad call is a terminal caller error naming the field; a Ref the workers refuse is caller too', () => withDispatch(async ({ dispatch, openOther }) => {
    const refused = openOther({ dispatch: { $ref: 'not-allowed-pkg:thing', config: {} } });
    await expect(dispatch({}, { cellId: 'c', runAttemptId: '', rep: 0, seed: 0 })).rejects.toMatchObject({ kind: 'caller', retryable: false, message: expect.stringContaining('ctx.runAttemptId') });
    await expect(refused({}, { cellId: 'c', runAttemptId: 'a', rep: 0, seed: 0 })).rejects.toMatchObject({ kind: 'caller', retryable: false, message: expect.stringContaining('not-allowed-pkg') });
  }));

  it("the owner's abort cancels in-flight leases at once and nothing is retried", () => withDispatch(async ({ q, dispatch }) => {
    const logFile = path.join(dir, 'abort.log');
    const owner = new AbortController();
    const cells = [0, 1, 2, 3].map((i) => ({ cellId: `slow-${i}`, rep: 0, scenario: { logFile, delayMs: 60_000 } }));
    const loop = harnessLoop(dispatch, cells, { lanes: 2, maxTries: 3, signal: owner.signal, runAttemptId: 'attempt-abort' });
    await waitFor(() => lines(logFile).length === 2, 'two dispatches running on the worker');
    owner.abort('owner cancelled the evaluation');
    const { outcomes, tries } = await loop;
    expect([...outcomes.values()]).toEqual([{ aborted: true }, { aborted: true }]);
    expect([...tries.values()]).toEqual([1, 1]);
    // The running attempts were stopped on the worker and their keys cleaned up.
    let left: string[] = [];
    await waitFor(async () => (left = await leftoverKeys(q)).length === 0, () => `aborted calls cleaned up (left: ${left.join(', ')})`, 20_000);
    expect(lines(logFile)).toHaveLength(2);
  }, { workers: [{ concurrency: 2 }] }));

  it('close() right after an aborted call whose job a worker still holds deletes its keys before it returns (fresh-user report: the run stayed, with no expiry)', () => withDispatch(async ({ q, dispatch }) => {
    const logFile = path.join(dir, 'close-after-abort.log');
    const caller = new AbortController();
    const call = dispatch({ logFile, stubbornMs: 60_000 }, { cellId: 'held', runAttemptId: 'attempt-close', rep: 0, seed: 1, signal: caller.signal });
    await waitFor(() => lines(logFile).length === 1, 'the dispatch running on the worker');
    caller.abort();
    // Closed before the call's rejection (fresh-user report: its cleanup was not known yet), while
    // the worker holds the job for its killGraceMs (2 s) after the cancel.
    const closing = dispatch.close();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    await closing;
    expect(await leftoverKeys(q)).toEqual([]);
  }));

  it('a retry of an aborted cell made while its lease is still being cancelled is a retryable EarlierCallCancelled, not the aborted call\'s AbortError (fresh-user report)', () => withDispatch(async ({ dispatch }) => {
    const logFile = path.join(dir, 'retry-while-cancelling.log');
    const scenario = { logFile, stubbornMs: 60_000 };
    const ctx = { cellId: 'again-soon', runAttemptId: 'attempt-again-soon', rep: 0, seed: 1 };
    const caller = new AbortController();
    const call = dispatch(scenario, { ...ctx, signal: caller.signal });
    await waitFor(() => lines(logFile).length === 1, 'the dispatch running on the worker');
    caller.abort();
    const retry = await dispatch(scenario, ctx).catch((err: unknown) => err);
    expect(retry).toBeInstanceOf(DispatchError);
    expect(retry).toMatchObject({ kind: 'infrastructure', retryable: true, type: 'EarlierCallCancelled' });
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
  }));

  it('a call that finds the run of an earlier call of its cell cancelled, its Results delivered and its keys not yet deleted, is a retryable EarlierCallCancelled (fresh-user report: DispatchFailed, "start a new run id")', () => withDispatch(async ({ q, dispatch }) => {
    const ctx = { cellId: 'again', runAttemptId: 'attempt-again', rep: 0, seed: 1 };
    const runId = dispatchRunId(ctx.runAttemptId, ctx.cellId);
    // The state an aborted call leaves for up to a cleanup interval: the run cancelled, its one
    // Result delivered by the aborted call's session, the keys still there (made here directly).
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX, logger: quiet });
    try {
      const session = rq.mapRollouts([{ rendered: '', task: { id: ctx.cellId }, run: { $ref: 'rq-fixtures/failures:echo', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} } }], { runId });
      const ended = session.next().catch((err: unknown) => err);
      await waitFor(async () => (await rq.status(runId)).run !== null, 'the run recorded');
      await rq.cancel(runId);
      expect(await ended).toMatchObject({ name: 'AbortError' });
    } finally {
      await rq.close();
    }
    const retry = await dispatch({}, ctx).catch((err: unknown) => err);
    expect(retry).toBeInstanceOf(DispatchError);
    expect(retry).toMatchObject({ kind: 'infrastructure', retryable: true, type: 'EarlierCallCancelled', message: expect.stringContaining('retry: the retry runs the cell again') });
  }, { workers: [] }));

  it('a worker SIGKILLed mid-dispatch: the lease is re-dispatched, one artifact, its receipt replayed once', async () => {
    const q = new RawQueue(redis.url);
    const victim = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 }));
    const dispatch = open(q);
    const logFile = path.join(dir, 'kill.log');
    let survivor: WorkerProcess | undefined;
    try {
      const cost = ledger();
      const call = dispatch({ echo: 'survives', logFile, paidCalls: 1, callIdPerProcess: true, delayMs: 1500 }, { cellId: 'killed', runAttemptId: 'attempt-kill', rep: 0, seed: 0, cost });
      // The victim's paid call is stored in Redis as it is recorded, before the worker dies.
      const ledgerKey = q.keys.lease(leaseIdFor(dispatchRunId('attempt-kill', 'killed'), 'killed'));
      await waitFor(async () => Object.keys(await q.redis.hgetall(ledgerKey)).some((field) => field.startsWith('cost:')), 'the victim to store its receipt');
      expect((await victim.kill()).signal).toBe('SIGKILL');
      survivor = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 }));
      const artifact = (await call) as { pid: number; echo: string };
      expect(artifact.echo).toBe('survives');
      const started = lines(logFile);
      expect(started).toHaveLength(2);
      expect(started[0]).not.toBe(started[1]);
      // One receipt per attempt that paid, each once: the SIGKILLed one's too.
      const pids = started.map((line) => line.split(' ')[2]);
      expect(cost.receipts.map((r) => r.callId).sort()).toEqual(pids.map((pid) => `killed-call-0-${pid}`).sort());
    } finally {
      await dispatch.close();
      await stop(survivor ? [survivor] : []);
      await q.close();
    }
  });
});
