import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { leaseIdFor, queueKeys, type QueueKeys } from '../lease/index.js';
import type { CostReceipt, DispatchRequest, Result } from '../spec/index.js';
import type { Dispatch, DispatchContext } from '../dispatch/index.js';
import { AbortError } from './abort-error.js';
import { connectProducerRedis } from './connect-producer-redis.js';
import { RunBusyError } from './coordinator-lease.js';
import { deliverDispatch, replayReceipts } from './dispatch-delivery.js';
import { DispatchError } from './dispatch-errors.js';
import { compileQueueDispatchOptions, type CompiledQueueDispatchOptions, type QueueDispatchOptions } from './dispatch-options.js';
import { answerText, checkedRequest, conflictError, placementOf, readAnswer, readReceipts, requestFingerprint } from './dispatch-request.js';
import { dispatchRunId } from './dispatch-run-id.js';
import { forgetDispatchRun } from './forget-dispatch-run.js';
import { compileProducerOptions } from './producer-options.js';
import type { RolloutDraft } from './rollout-draft.js';
import { RolloutQueue } from './rollout-queue.js';
import { RunStoppedError } from './run-stopped-error.js';
import { SharedCall } from './shared-dispatch-call.js';

/** A Dispatch over the durable queue, with a `close()` for its connections. */
export interface QueueDispatch extends Dispatch {
  /** Opens the producer of the default queue now (a call does it lazily). */
  ready(): Promise<void>;
  /**
   * Closes the producers and connections it opened; calls in flight on them reject (their leases
   * keep running). First it lets calls being cancelled end and finishes deleting the keys of
   * aborted calls, waiting at most 10 s for a worker to let go of their jobs. A `producer` passed in is not closed: its calls reject
   * when its owner closes it. Idempotent.
   */
  close(): Promise<void>;
}

/** How often a cleanup of an aborted dispatch whose job is still active is tried again, ms, and how often at most. */
const CLEANUP_RETRY_MS = 1000;
const CLEANUP_TRIES = 120;
/**
 * Longest `close()` waits for the cleanups still pending (aborted calls whose jobs were still
 * active: a worker stops a Dispatch that ignores `ctx.signal` after its `killGraceMs`, 2 s by
 * default), ms; then it tries them every {@link CLOSE_CLEANUP_POLL_MS}.
 */
const CLOSE_CLEANUP_MS = 10_000;
const CLOSE_CLEANUP_POLL_MS = 250;

/** A call's keys still to delete: see {@link forgetDispatchRun}. */
interface PendingCleanup {
  readonly plane: Plane;
  readonly runId: string;
  readonly leaseId: string;
}

/** The retryable error of a call that found the run of an earlier, cancelled call of its cell still there. */
function earlierCallCancelled(request: DispatchRequest): DispatchError {
  return new DispatchError('infrastructure', {
    type: 'EarlierCallCancelled',
    message: `an earlier call of cell ${JSON.stringify(request.cellId)} (run attempt ${JSON.stringify(request.runAttemptId)}) was cancelled (its client went away, or it was aborted) and is still being cleaned up; retry: the retry runs the cell again`,
  });
}

/** The producer, a BullMQ Queue handle (for removing jobs) and the key layout of one queue. */
interface Plane {
  readonly rq: RolloutQueue;
  readonly owned: boolean;
  readonly queue: Queue;
  readonly keys: QueueKeys;
}

/**
 * The harness' `Dispatch` over the durable queue (coordinator side). Each call
 * `dispatch(scenario, ctx)` becomes one lease of a one-spec run whose id is derived from
 * `(ctx.runAttemptId, ctx.cellId)` ({@link dispatchRunId}), run on a worker by
 * `rollout-queue/dispatch:dispatchRunner({ dispatch: options.dispatch })`:
 * - a retried call of the same cell attempt, or two identical calls at once, attach to the
 *   same lease and run once (in this process by sharing the call, across processes through
 *   the run record, which a call waiting for the run's lease in another process then finds
 *   delivered); after delivery the answer stays `keepAnswerMs` for late retries, the run record
 *   saying its lease was delivered expires with it, and every other key of the call is deleted;
 * - `ctx.signal` cancels it (the lease is cancelled once no attached call waits) and the call
 *   rejects with `AbortError` (never retry it); receipts stored so far are replayed first; a
 *   retry of the cell that finds the cancelled run still there rejects with a retryable
 *   `EarlierCallCancelled` (nothing kept), and runs the cell afresh once it is cleaned up;
 * - `ctx.placement` picks the queue (a string, or `{ queue, ...labels }`);
 * - resolves to the artifact of an `ok` Result; rejects with {@link DispatchError}: `caller`
 *   terminal (`retryable: false`), `infrastructure` retryable, `model` the dispatch's own error;
 * - the Result's cost receipts are replayed into `ctx.cost.record` once per `callId` of the cell, also
 *   when the dispatch failed after paying; files from `ctx.artifacts.write` go to the caller's
 *   `ctx.artifacts.write`, else under `runDir`.
 * - with a `ctx.trace.span`, the call runs inside a span `rollout-queue.dispatch` (attributes cellId, runAttemptId, queue).
 * One long-lived producer per queue serves every call (one QueueEvents listener, no start-up per call).
 * @throws Error synchronously for invalid options (naming the option).
 */
export function queueDispatch(input: QueueDispatchOptions): QueueDispatch {
  const dispatcher = new QueueDispatcher(compileQueueDispatchOptions(input));
  const dispatch = ((scenario: unknown, ctx: DispatchContext) => dispatcher.call(scenario, ctx)) as QueueDispatch;
  dispatch.ready = async () => {
    await dispatcher.plane(dispatcher.options.queue);
  };
  dispatch.close = () => dispatcher.close();
  return dispatch;
}

class QueueDispatcher {
  private readonly planes = new Map<string, Promise<Plane>>();
  private readonly inflight = new Map<string, SharedCall>();
  private readonly cleanups = new Set<NodeJS.Timeout>();
  /**
   * How often the keys of each call (by queue and run id) were deleted without a kept answer (an
   * abort, a transient, `keepAnswerMs: 0`). A run of the cell after that pays its calls again under
   * the same lease id and callIds, so receipts are replayed once per incarnation of the lease
   * (fresh-user report: a cell re-run after an abort paid twice and the ledger got one receipt).
   */
  private readonly incarnations = new Map<string, number>();
  /** Cleanups not done yet, by queue and run id: `close()` finishes them (fresh-user report: closed at once, they left the run with no expiry). */
  private readonly pendingCleanups = new Map<string, PendingCleanup>();
  private redisValue: Promise<Redis> | undefined;
  private closed = false;

  constructor(readonly options: CompiledQueueDispatchOptions) {}

  async call(scenario: unknown, ctx: DispatchContext): Promise<unknown> {
    if (this.closed) throw new Error('queueDispatch is closed; create a new one');
    const request = checkedRequest(scenario, ctx);
    const { queue, labels } = placementOf(ctx.placement, this.options.queue);
    if (typeof ctx.trace?.span !== 'function') return this.attach(request, queue, labels, ctx);
    return ctx.trace.span('rollout-queue.dispatch', () => this.attach(request, queue, labels, ctx), { cellId: request.cellId, runAttemptId: request.runAttemptId, queue });
  }

  /** Joins (or starts) the lease of the call and delivers its Result to this caller. */
  private async attach(request: DispatchRequest, queue: string, labels: Record<string, string>, ctx: DispatchContext): Promise<unknown> {
    const runId = dispatchRunId(request.runAttemptId, request.cellId);
    const leaseId = leaseIdFor(runId, request.cellId);
    const abortError = (): AbortError => new AbortError(runId, `dispatch of cell ${JSON.stringify(request.cellId)} (run attempt ${JSON.stringify(request.runAttemptId)}) was aborted by the caller`, { cause: ctx.signal?.reason });
    if (ctx.signal?.aborted) throw abortError();
    const key = `${queue}\n${runId}`;
    // Receipts of this call are replayed once per callId of this incarnation of the lease.
    const replayScope = `${leaseId}#${this.incarnations.get(key) ?? 0}`;
    const fingerprint = requestFingerprint(request);
    let shared = this.inflight.get(key);
    if (shared && shared.fingerprint !== fingerprint) throw conflictError(request);
    // The lease of an aborted call still being cancelled: joining it would reject this call
    // with that call's AbortError, which is never retried (fresh-user report).
    if (shared?.controller.signal.aborted) throw earlierCallCancelled(request);
    if (!shared) {
      const fresh = new SharedCall(fingerprint);
      fresh.done = this.run(queue, runId, leaseId, request, fingerprint, labels, fresh.controller.signal);
      this.inflight.set(key, fresh);
      fresh.done.then(() => this.inflight.delete(key), () => this.inflight.delete(key));
      shared = fresh;
    }
    let result: Result;
    try {
      result = await shared.join(ctx.signal, abortError);
    } catch (err) {
      if (err instanceof AbortError) await replayReceipts(replayScope, (err as AbortError & { receipts?: CostReceipt[] }).receipts ?? [], ctx.cost);
      throw err;
    }
    return deliverDispatch(result, ctx, this.options.runDir, replayScope);
  }

  /** The lease's Result: the kept answer of an earlier delivery, or a (resumed) one-spec run. */
  private async run(queueName: string, runId: string, leaseId: string, request: DispatchRequest, fingerprint: string, labels: Record<string, string>, signal: AbortSignal): Promise<Result> {
    const plane = await this.plane(queueName);
    const redis = await this.redis();
    const answerKey = plane.keys.dispatchAnswer(runId);
    /** A kept answer is this request's only when it was kept for an equal request (fresh-user report: another scenario got it). */
    const answerOf = (kept: Awaited<ReturnType<typeof readAnswer>>): Result | undefined => {
      if (kept?.fingerprint !== undefined && kept.fingerprint !== fingerprint) throw conflictError(request);
      return kept?.result;
    };
    const kept = answerOf(await readAnswer(redis, answerKey));
    if (kept) return kept;
    const { options } = this;
    const draft: RolloutDraft = {
      rendered: '',
      task: { id: request.cellId, ...request } as Record<string, unknown>,
      run: options.runRef,
      reward: { $ref: 'rollout-queue/dispatch:noReward', config: {} },
      // Not 'evaluation': a dispatch has effects (artifacts, receipts) and the harness owns its
      // retries, so it must never be answered from the evaluation cache; and it keeps running at
      // the workers' --concurrency in the rollout queues (issue 9 gave evaluations queues of their own).
      class: 'rollout',
      placement: labels,
      ...(Object.keys(options.timeouts).length > 0 ? { timeouts: options.timeouts } : {}),
      ...(Object.keys(options.sandbox).length > 0 ? { sandbox: options.sandbox } : {}),
      ...(options.goldKeys.length > 0 ? { goldKeys: [...options.goldKeys] } : {}),
    } as RolloutDraft;
    let result: Result;
    try {
      result = await this.rollout(plane.rq, draft, runId, signal);
    } catch (err) {
      if (err instanceof AbortError) {
        const receipts = await readReceipts(redis, plane.keys, leaseId).catch(() => []);
        this.cleanupLater(plane, runId, leaseId, 0);
        throw Object.assign(err, { receipts });
      }
      // Delivered before (by another process, whose lease this call waited for): the answer says
      // what it was. This session gave the run the producer's retention: it expires with the answer again.
      const late = answerOf(await readAnswer(redis, answerKey).catch(() => undefined));
      if (late) {
        this.cleanupLater(plane, runId, leaseId, 0);
        return late;
      }
      if (err instanceof RunStoppedError && err.status === 'cancelled') {
        // The run of an earlier, aborted call of the cell, found after its session ended and
        // before its keys were deleted (fresh-user report: DispatchFailed, "start a new run id").
        this.cleanupLater(plane, runId, leaseId, 0);
        throw earlierCallCancelled(request);
      }
      throw new DispatchError('infrastructure', { type: 'DispatchFailed', message: `dispatch of cell ${JSON.stringify(request.cellId)}: ${(err as Error).message}` });
    }
    if (result.kind === 'caller' && result.error?.type === 'Cancelled' && !signal.aborted) {
      // The run was cancelled under an earlier call of the cell whose client went away (or by
      // `cancel`), and this retry found it before its keys were deleted. Its Cancelled Result is
      // not this call's answer: never kept, and retryable (fresh-user report: a retry after a
      // hang-up got a kept 400 for 10 minutes). Once the cancelled job ended and its keys are
      // gone, a retry runs the cell afresh.
      this.cleanupLater(plane, runId, leaseId, 0);
      throw earlierCallCancelled(request);
    }
    // A transient is not kept, and its keys go before the call returns: the caller's retry
    // must run the cell again, on a fresh lease. Otherwise the kept answer covers a retry that
    // races the cleanup, which then need not hold up the call.
    if (result.kind === 'infrastructure' || options.keepAnswerMs === 0) {
      // rollout() returned before the run's wrap-up (completion mark, retention): forget after it.
      await plane.rq.settled(runId);
      if (!(await this.forget({ plane, runId, leaseId }))) this.cleanupLater(plane, runId, leaseId, 1);
    } else {
      await redis.set(answerKey, answerText(result, fingerprint), 'PX', options.keepAnswerMs);
      this.cleanupLater(plane, runId, leaseId, 0);
    }
    return result;
  }

  /**
   * The one-spec run of the call. While another process holds the run's coordinator lease it
   * runs this very call (the run id is the call's): the lease is waited for again each time
   * `rollout()` gives up on it (`RunBusyError`, after `LEASE_LOST_WAIT_MS`), however long that
   * process' Dispatch takes, until the caller aborts. Once that process delivered, the run's
   * record says the lease is delivered ({@link forgetDispatchRun} keeps it with the answer), so
   * `rollout()` runs nothing and throws, and the caller reads the kept answer.
   */
  private async rollout(rq: RolloutQueue, draft: RolloutDraft, runId: string, signal: AbortSignal): Promise<Result> {
    for (;;) {
      try {
        return await rq.rollout(draft, { runId, signal });
      } catch (err) {
        // Aborted meanwhile, the next call throws AbortError at once.
        if (!(err instanceof RunBusyError)) throw err;
      }
    }
  }

  /** Deletes a delivered (or aborted) call's keys in the background; retried while its job is still active. */
  private cleanupLater(plane: Plane, runId: string, leaseId: string, tries: number): void {
    const key = `${plane.queue.name}\n${runId}`;
    this.pendingCleanups.set(key, { plane, runId, leaseId });
    const attempt = async (): Promise<void> => {
      if (this.closed) return;
      const done = await this.forget({ plane, runId, leaseId });
      if (done || tries + 1 >= CLEANUP_TRIES) this.pendingCleanups.delete(key);
      if (!done && tries + 1 < CLEANUP_TRIES) this.cleanupLater(plane, runId, leaseId, tries + 1);
    };
    if (tries === 0) {
      void attempt();
      return;
    }
    const timer = setTimeout(() => {
      this.cleanups.delete(timer);
      void attempt();
    }, CLEANUP_RETRY_MS);
    timer.unref();
    this.cleanups.add(timer);
  }

  /**
   * One try of a cleanup, after the run's wrap-up: true when the call's keys are gone (see
   * {@link forgetDispatchRun}). Gone without a kept answer, a later call of the cell runs it
   * afresh: a new incarnation of the lease, whose receipts are new ({@link incarnations}).
   */
  private async forget({ plane, runId, leaseId }: PendingCleanup): Promise<boolean> {
    await plane.rq.settled(runId);
    try {
      const outcome = await forgetDispatchRun(await this.redis(), plane.queue, plane.keys, runId, leaseId);
      const key = `${plane.queue.name}\n${runId}`;
      if (outcome === 'deleted') this.incarnations.set(key, (this.incarnations.get(key) ?? 0) + 1);
      return outcome !== 'active';
    } catch {
      // Redis trouble: tried again later (or left to close()'s last tries).
      return false;
    }
  }

  /**
   * Finishes the pending cleanups before the connections close, trying each every
   * {@link CLOSE_CLEANUP_POLL_MS} for at most {@link CLOSE_CLEANUP_MS}; what is left then (a job
   * a worker still holds) is logged with the way to remove it.
   */
  private async finishCleanups(): Promise<void> {
    const deadline = Date.now() + CLOSE_CLEANUP_MS;
    for (;;) {
      for (const [key, pending] of this.pendingCleanups) if (await this.forget(pending)) this.pendingCleanups.delete(key);
      if (this.pendingCleanups.size === 0 || Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, CLOSE_CLEANUP_POLL_MS));
    }
    const left = [...this.pendingCleanups.values()];
    this.pendingCleanups.clear();
    if (left.length === 0) return;
    const runIds = left.map(({ runId }) => runId);
    this.options.logger?.warn(
      { runIds },
      `queueDispatch closed with ${left.length} aborted call(s) whose jobs a worker still holds after ${CLOSE_CLEANUP_MS} ms; their runs stay in Redis until purged (purge RUN_ID --discard-undelivered)`,
    );
  }

  /** The producer of one queue, created on first use (the `producer` option serves its own queue). */
  plane(queueName: string): Promise<Plane> {
    let plane = this.planes.get(queueName);
    if (!plane) {
      plane = this.openPlane(queueName);
      this.planes.set(queueName, plane);
      plane.catch(() => this.planes.delete(queueName));
    }
    return plane;
  }

  private async openPlane(queueName: string): Promise<Plane> {
    const { producer, producerOptions } = this.options;
    const given = producer && producer.options.queue === queueName ? producer : undefined;
    const base = producer
      ? {
          redisUrl: producer.options.redisUrl, prefix: producer.options.prefix, reconcileMs: producer.options.reconcileMs,
          maxSpecBytes: producer.options.maxSpecBytes, maxTaskBytes: producer.options.maxTaskBytes, logger: producer.options.logger,
        }
      : producerOptions;
    const rq = given ?? (await RolloutQueue.create({ ...base, queue: queueName, stopOnCaller: false }));
    const redis = await this.redis();
    const queue = new Queue(queueName, { prefix: rq.options.prefix, connection: redis });
    queue.on('error', () => undefined);
    return { rq, owned: !given, queue, keys: queueKeys(rq.options.prefix, queueName) };
  }

  private redis(): Promise<Redis> {
    if (!this.redisValue) {
      const { producer, producerOptions } = this.options;
      const compiled = producer?.options ?? compileProducerOptions(producerOptions);
      this.redisValue = connectProducerRedis(compiled.redisUrl, compiled.connectTimeoutMs, compiled.logger);
      this.redisValue.catch(() => (this.redisValue = undefined));
    }
    return this.redisValue;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.cleanups) clearTimeout(timer);
    this.cleanups.clear();
    // Calls being cancelled (their callers aborted) end first, so their cleanups are known
    // (fresh-user report: close() right after an abort, before its rejection, left the keys).
    const cancelling = [...this.inflight.values()].filter((call) => call.controller.signal.aborted).map((call) => call.done.catch(() => undefined));
    await Promise.race([Promise.all(cancelling), new Promise((resolve) => setTimeout(resolve, CLOSE_CLEANUP_MS).unref())]);
    await this.finishCleanups();
    const planes = await Promise.allSettled([...this.planes.values()]);
    for (const settled of planes) {
      if (settled.status !== 'fulfilled') continue;
      if (settled.value.owned) await settled.value.rq.close();
      await settled.value.queue.close().catch(() => undefined);
    }
    const redis = await this.redisValue?.catch(() => undefined);
    if (redis) await redis.quit().catch(() => redis.disconnect());
  }
}
