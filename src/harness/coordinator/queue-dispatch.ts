import { leaseIdFor } from '../../lease/index.js';
import { withSpan } from '../../platform/telemetry.js';
import { AbortError, RunBusyError, RunStoppedError, type RolloutDraft, type RolloutQueue } from '../../producer/index.js';
import type { CostReceipt, DispatchRequest, Result } from '../../spec/index.js';
import type { DispatchContext } from '../worker/index.js';
import { AbandonedDispatchSweeper } from './abandoned-dispatch-sweeper.js';
import { checkCallContext, withCallerSpan } from './call-context.js';
import { DispatchCleanups, CLOSE_CLEANUP_MS } from './dispatch-cleanups.js';
import { deliverDispatch, replayReceipts, wireSinkOf } from './dispatch-delivery.js';
import { DispatchError, type FinalAnswer } from './dispatch-errors.js';
import { compileQueueDispatchOptions, type CompiledQueueDispatchOptions, type QueueDispatchOptions } from './dispatch-options.js';
import { DispatchPlanes, type Plane } from './dispatch-planes.js';
import { answerText, checkedRequest, conflictError, placementOf, readAnswer, readReceipts, requestFingerprint, type KeptAnswer } from './dispatch-request.js';
import { dispatchRunId } from './dispatch-run-id.js';
import { SharedCall, type CellAnswer } from './shared-dispatch-call.js';

/**
 * A Dispatch over the durable queue, with a `close()` for its connections. `S` and `A` type the
 * scenario and the artifact as the harness' `Dispatch<S, A>` does (not checked: the artifact is
 * whatever JSON the workers' Dispatch returned).
 */
export interface QueueDispatch<S = unknown, A = unknown> {
  (scenario: S, ctx: DispatchContext): Promise<A>;
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

/** The retryable error of a call that found the run of an earlier, cancelled call of its cell still there. */
function earlierCallCancelled(request: DispatchRequest): DispatchError {
  return new DispatchError('infrastructure', {
    type: 'EarlierCallCancelled',
    message: `an earlier call of cell ${JSON.stringify(request.cellId)} (run attempt ${JSON.stringify(request.runAttemptId)}) was cancelled (its client went away, or it was aborted) and is still being cleaned up; retry: the retry runs the cell again`,
  });
}

/**
 * The final-answer note of a kept failure (a `model` failure, or an `infrastructure` one the plane
 * spent the cell's re-dispatch budget on): a retry of the cell attempt gets it again; else undefined.
 */
function finalOf(result: Result, keptUntilMs: number | undefined): FinalAnswer | undefined {
  return (result.kind === 'infrastructure' || result.kind === 'model') && keptUntilMs !== undefined ? { executions: result.attempts, keptUntilMs } : undefined;
}

/**
 * The harness' `Dispatch` over the durable queue (coordinator side). Each call
 * `dispatch(scenario, ctx)`, with `ctx` as the harness' `runCampaign` builds it, becomes one lease
 * of a one-spec run whose id is derived from `(ctx.runAttemptId, ctx.cellId)` ({@link dispatchRunId}),
 * run on a worker by `rollout-queue/dispatch:dispatchRunner({ dispatch: options.dispatch })`:
 * - a retried call of the same cell attempt, or two identical calls at once, attach to the
 *   same lease and run once (in this process by sharing the call, across processes through
 *   the run record, which a call waiting for the run's lease in another process then finds
 *   delivered); after delivery the answer stays `keepAnswerMs` for late retries, the run record
 *   saying its lease was delivered expires with it, and every other key of the call is deleted;
 * - one cell, one budget: an `infrastructure` Result of a lease that ran (the workers re-dispatched
 *   a transient up to their limit) is kept too, and a retry gets it again: at most 3 executions per
 *   cell attempt whatever the caller retries (`DispatchError.final` says so);
 * - `ctx.signal` cancels it (the lease is cancelled once no attached call waits) and the call
 *   rejects with `AbortError` (never retry it); receipts stored so far are replayed first; a
 *   retry of the cell that finds the cancelled run still there rejects with a retryable
 *   `EarlierCallCancelled` (nothing kept), and runs the cell afresh once it is cleaned up;
 * - `ctx.placement` picks the queue (a string, or `{ queue, ...labels }`);
 * - resolves to the artifact of an `ok` Result; rejects with {@link DispatchError};
 * - the Result's cost receipts are replayed through `ctx.cost.runPaidCall` (the harness' meter;
 *   or `ctx.cost.record`) once per `callId` of the cell, also when the dispatch failed after
 *   paying; the dispatch's spans are exported (OpenTelemetry) and replayed into `ctx.trace`; its
 *   files go to `ctx.artifacts.write`, else under `runDir`;
 * - the call runs under a span `rollout-queue.dispatch` of `ctx.trace` (the harness' handle, or the
 *   older callback form) and of OpenTelemetry (attributes cellId, runAttemptId, queue);
 * - a ctx part of an unknown shape (a `cost` with neither method, a `trace.span` that returns no
 *   handle) is a `caller` DispatchError before anything is enqueued;
 * - a dispatch run nobody waits on any more (its caller's process stopped) is finished by the
 *   sweeper of any queueDispatch on its queue after `keepAnswerMs` (at least 5 s): its answer and
 *   receipts are kept for a late retry, and the run completes (see `AbandonedDispatchSweeper`).
 * @throws Error synchronously for invalid options (naming the option).
 */
export function queueDispatch<S = unknown, A = unknown>(input: QueueDispatchOptions): QueueDispatch<S, A> {
  const dispatcher = new QueueDispatcher(compileQueueDispatchOptions(input));
  const dispatch = ((scenario: S, ctx: DispatchContext) => dispatcher.call(scenario, ctx)) as QueueDispatch<S, A>;
  dispatch.ready = async () => {
    await dispatcher.planes.plane(dispatcher.options.queue);
  };
  dispatch.close = () => dispatcher.close();
  return dispatch;
}

class QueueDispatcher {
  readonly planes: DispatchPlanes;
  private readonly inflight = new Map<string, SharedCall>();
  private readonly cleanups: DispatchCleanups;
  private readonly sweepers: AbandonedDispatchSweeper[] = [];
  private closed = false;

  constructor(readonly options: CompiledQueueDispatchOptions) {
    this.planes = new DispatchPlanes(options, (plane) => this.startSweeper(plane));
    this.cleanups = new DispatchCleanups(() => this.planes.redis(), options.logger);
  }

  async call(scenario: unknown, ctx: DispatchContext): Promise<unknown> {
    if (this.closed) throw new Error('queueDispatch is closed; create a new one');
    const request = checkedRequest(scenario, ctx);
    checkCallContext(ctx);
    const { queue, labels } = placementOf(ctx.placement, this.options.queue);
    const attributes = { cellId: request.cellId, runAttemptId: request.runAttemptId, queue };
    return withCallerSpan(ctx.trace, 'rollout-queue.dispatch', attributes, () =>
      withSpan('rollout-queue.dispatch', attributes, () => this.attach(request, queue, labels, ctx)));
  }

  /** Joins (or starts) the lease of the call and delivers its Result to this caller. */
  private async attach(request: DispatchRequest, queue: string, labels: Record<string, string>, ctx: DispatchContext): Promise<unknown> {
    const runId = dispatchRunId(request.runAttemptId, request.cellId);
    const leaseId = leaseIdFor(runId, request.cellId);
    const abortError = (): AbortError => new AbortError(runId, `dispatch of cell ${JSON.stringify(request.cellId)} (run attempt ${JSON.stringify(request.runAttemptId)}) was aborted by the caller`, { cause: ctx.signal?.reason });
    if (ctx.signal?.aborted) throw abortError();
    const key = `${queue}\n${runId}`;
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
    let answer: CellAnswer;
    try {
      answer = await shared.join(ctx.signal, abortError);
    } catch (err) {
      if (err instanceof AbortError) {
        const { receipts = [], incarnation = 0 } = err as AbortError & { receipts?: CostReceipt[]; incarnation?: number };
        wireSinkOf(ctx)?.receipts.push(...receipts);
        await replayReceipts(`${leaseId}#${incarnation}`, receipts, ctx.cost, this.options.logger);
      }
      throw err;
    }
    // Receipts are replayed once per callId of this incarnation of the lease, the one that ran
    // (or kept) this answer: read now, when any deletion of an earlier one has landed.
    const replayScope = `${leaseId}#${await this.cleanups.incarnation(queue, runId)}`;
    return deliverDispatch(answer.result, ctx, { runDir: this.options.runDir, replayScope, final: answer.final, logger: this.options.logger });
  }

  /** The lease's answer: the kept answer of an earlier delivery, or a (resumed) one-spec run's Result, kept when it is the cell's. */
  private async run(queueName: string, runId: string, leaseId: string, request: DispatchRequest, fingerprint: string, labels: Record<string, string>, signal: AbortSignal): Promise<CellAnswer> {
    const plane = await this.planes.plane(queueName);
    const redis = await this.planes.redis();
    const answerKey = plane.keys.dispatchAnswer(runId);
    /** A kept answer is this request's only when it was kept for an equal request (fresh-user report: another scenario got it). */
    const answerOf = (kept: KeptAnswer | undefined): CellAnswer | undefined => {
      if (kept?.fingerprint !== undefined && kept.fingerprint !== fingerprint) throw conflictError(request);
      return kept ? { result: kept.result, final: finalOf(kept.result, kept.keptUntilMs) } : undefined;
    };
    const kept = answerOf(await readAnswer(redis, answerKey));
    if (kept) return kept;
    // Whoever finishes this run if its callers go away keeps the answer under this request.
    await redis.set(plane.keys.dispatchRequest(runId), fingerprint, 'NX');
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
        // The incarnation these receipts were paid in: read before this run's own cleanup counts the next.
        const incarnation = await this.cleanups.incarnation(queueName, runId);
        this.cleanups.later(plane, runId, leaseId);
        throw Object.assign(err, { receipts, incarnation });
      }
      // Delivered before (by another process, whose lease this call waited for): the answer says
      // what it was. This session gave the run the producer's retention: it expires with the answer again.
      const late = answerOf(await readAnswer(redis, answerKey).catch(() => undefined));
      if (late) {
        this.cleanups.later(plane, runId, leaseId);
        return late;
      }
      if (err instanceof RunStoppedError && err.status === 'cancelled') {
        // The run of an earlier, aborted call of the cell, found after its session ended and
        // before its keys were deleted (fresh-user report: DispatchFailed, "start a new run id").
        this.cleanups.later(plane, runId, leaseId);
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
      this.cleanups.later(plane, runId, leaseId);
      throw earlierCallCancelled(request);
    }
    return this.settle(plane, runId, leaseId, result, fingerprint);
  }

  /**
   * Keeps a delivered Result as the cell's answer for `keepAnswerMs` and deletes the rest of the
   * call's keys. An `infrastructure` Result is kept only when the lease ran (the workers spent its
   * re-dispatch budget: one cell, one budget); one that ran nothing (no worker in time) is not,
   * and its keys go before the call returns, so the caller's retry runs the cell on a fresh lease.
   */
  private async settle(plane: Plane, runId: string, leaseId: string, result: Result, fingerprint: string | undefined): Promise<CellAnswer> {
    const { keepAnswerMs } = this.options;
    if ((result.kind === 'infrastructure' && result.attempts === 0) || keepAnswerMs === 0) {
      // rollout() returned before the run's wrap-up (completion mark, retention): forget after it.
      await plane.rq.settled(runId);
      if (!(await this.cleanups.forget({ plane, runId, leaseId }))) this.cleanups.later(plane, runId, leaseId, true);
      return { result, final: undefined };
    }
    const keptUntilMs = Date.now() + keepAnswerMs;
    await (await this.planes.redis()).set(plane.keys.dispatchAnswer(runId), answerText(result, fingerprint, keptUntilMs), 'PX', keepAnswerMs);
    this.cleanups.later(plane, runId, leaseId);
    return { result, final: finalOf(result, keptUntilMs) };
  }

  /**
   * The one-spec run of the call. While another process holds the run's coordinator lease it
   * runs this very call (the run id is the call's): the lease is waited for again each time
   * `rollout()` gives up on it (`RunBusyError`, after `LEASE_LOST_WAIT_MS`), however long that
   * process' Dispatch takes, until the caller aborts. Once that process delivered, the run's
   * record says the lease is delivered (`forgetDispatchRun` keeps it with the answer), so
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

  /** Watches `plane`'s queue for dispatch runs their callers left, finishing them (see {@link AbandonedDispatchSweeper}). */
  private startSweeper(plane: Plane): void {
    void this.planes.redis().then((redis) => {
      if (this.closed) return;
      const abandonedMs = this.options.keepAnswerMs;
      const sweeper = new AbandonedDispatchSweeper({
        redis, keys: plane.keys, abandonedMs, logger: this.options.logger,
        attachedHere: (runId) => this.inflight.has(`${plane.queue.name}\n${runId}`),
        adopt: (runId) => this.adopt(plane, runId),
      });
      sweeper.start(Math.min(60_000, Math.max(1000, Math.floor(abandonedMs / 4))));
      this.sweepers.push(sweeper);
    }, () => undefined);
  }

  /** Finishes an abandoned dispatch run: collects its Result through a session of the run, keeps it as the cell's answer. */
  private async adopt(plane: Plane, runId: string): Promise<void> {
    const redis = await this.planes.redis();
    const [leaseId] = await redis.zrange(plane.keys.runLeases(runId), 0, 0);
    if (leaseId === undefined) return;
    const fingerprint = (await redis.get(plane.keys.dispatchRequest(runId))) ?? undefined;
    let result: Result | undefined;
    try {
      for await (const delivered of plane.rq.attach(runId)) {
        result = delivered;
        break;
      }
    } catch (err) {
      // Taken meanwhile by a retrying call (it delivers), or ended otherwise.
      if (err instanceof RunBusyError) return;
      if (err instanceof RunStoppedError) return this.cleanups.later(plane, runId, leaseId);
      throw err;
    }
    if (result) await this.settle(plane, runId, leaseId, result, fingerprint);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const sweeper of this.sweepers) sweeper.stop();
    // Calls being cancelled (their callers aborted) end first, so their cleanups are known
    // (fresh-user report: close() right after an abort, before its rejection, left the keys).
    const cancelling = [...this.inflight.values()].filter((call) => call.controller.signal.aborted).map((call) => call.done.catch(() => undefined));
    await Promise.race([Promise.all(cancelling), new Promise((resolve) => setTimeout(resolve, CLOSE_CLEANUP_MS).unref())]);
    await this.cleanups.finish();
    await this.planes.close();
  }
}
