import type { Redis } from 'ioredis';
import type { Logger } from '../../platform/logger.js';
import type { Plane } from './dispatch-planes.js';
import { forgetDispatchRun } from './forget-dispatch-run.js';

/** How often a cleanup of an aborted dispatch whose job is still active is tried again, ms, and how often at most. */
const CLEANUP_RETRY_MS = 1000;
const CLEANUP_TRIES = 120;
/**
 * Longest `finish()` waits for the cleanups still pending (aborted calls whose jobs were still
 * active: a worker stops a Dispatch that ignores `ctx.signal` after its `killGraceMs`, 2 s by
 * default), ms; then it tries them every {@link CLOSE_CLEANUP_POLL_MS}.
 */
export const CLOSE_CLEANUP_MS = 10_000;
const CLOSE_CLEANUP_POLL_MS = 250;

/** A call's keys still to delete: see {@link forgetDispatchRun}. */
interface PendingCleanup {
  readonly plane: Plane;
  readonly runId: string;
  readonly leaseId: string;
}

/**
 * Deletes what each dispatch call left in Redis once it returned ({@link forgetDispatchRun}), in
 * the background, retried while a worker still holds the job, and counts the incarnations of
 * each lease: how often its keys were deleted without a kept answer (an abort, a transient that
 * ran nothing, `keepAnswerMs: 0`). A run of the cell after that pays its calls again under the
 * same lease id and callIds, so receipts are replayed once per incarnation of the lease
 * (fresh-user report: a cell re-run after an abort paid twice and the ledger got one receipt).
 */
export class DispatchCleanups {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly incarnations = new Map<string, number>();
  /** Cleanups not done yet, by queue and run id: `finish()` completes them (fresh-user report: closed at once, they left the run with no expiry). */
  private readonly pending = new Map<string, PendingCleanup>();
  /**
   * The one retry chain of each lease. A second chain (each retry of a cell still being
   * cancelled asked for one) outlived the first's deletion and could delete the keys, even the
   * waiting job, of the cell's next run.
   */
  private readonly chains = new Set<string>();
  /** The try in flight of each lease: the deletion and its incarnation count land together for whoever waits on it. */
  private readonly forgetting = new Map<string, Promise<boolean>>();
  private closed = false;

  constructor(private readonly redis: () => Promise<Redis>, private readonly logger: Logger | undefined) {}

  /**
   * The incarnation of the lease of `runId` on `queueName` (0 until its keys were first deleted
   * without a kept answer), once a deletion in flight landed. Read it when the receipts are
   * delivered, not when the call starts: a call that started while the last incarnation's keys
   * were being deleted can run the next one (CI under load: the re-run's receipt was skipped as
   * the aborted run's).
   */
  async incarnation(queueName: string, runId: string): Promise<number> {
    const key = `${queueName}\n${runId}`;
    await this.forgetting.get(key);
    return this.incarnations.get(key) ?? 0;
  }

  /**
   * Deletes a delivered (or aborted) call's keys in the background; retried every
   * {@link CLEANUP_RETRY_MS} while its job is still active, at most {@link CLEANUP_TRIES} times.
   * A lease with a cleanup pending already keeps that one. `delayFirst` waits before the first try.
   */
  later(plane: Plane, runId: string, leaseId: string, delayFirst = false): void {
    const key = `${plane.queue.name}\n${runId}`;
    this.pending.set(key, { plane, runId, leaseId });
    if (this.chains.has(key)) return;
    this.chains.add(key);
    const attempt = async (tries: number): Promise<void> => {
      const pending = this.pending.get(key);
      const done = this.closed || !pending || (await this.forget(pending));
      if (done || tries + 1 >= CLEANUP_TRIES) {
        this.chains.delete(key);
        if (!this.closed) this.pending.delete(key);
        return;
      }
      this.retry(() => attempt(tries + 1));
    };
    if (delayFirst) this.retry(() => attempt(0));
    else void attempt(0);
  }

  private retry(attempt: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void attempt();
    }, CLEANUP_RETRY_MS);
    timer.unref();
    this.timers.add(timer);
  }

  /**
   * One try of a cleanup, after the run's wrap-up: true when the call's keys are gone (see
   * {@link forgetDispatchRun}). Gone without a kept answer, a later call of the cell runs it
   * afresh: a new incarnation of the lease, whose receipts are new. Tries of one lease never overlap.
   */
  async forget({ plane, runId, leaseId }: PendingCleanup): Promise<boolean> {
    const key = `${plane.queue.name}\n${runId}`;
    const inFlight = this.forgetting.get(key);
    if (inFlight) return inFlight;
    const once = (async (): Promise<boolean> => {
      await plane.rq.settled(runId);
      try {
        const outcome = await forgetDispatchRun(await this.redis(), plane.queue, plane.keys, runId, leaseId);
        if (outcome === 'deleted') this.incarnations.set(key, (this.incarnations.get(key) ?? 0) + 1);
        return outcome !== 'active';
      } catch {
        // Redis trouble: tried again later (or left to finish()'s last tries).
        return false;
      }
    })();
    this.forgetting.set(key, once);
    try {
      return await once;
    } finally {
      if (this.forgetting.get(key) === once) this.forgetting.delete(key);
    }
  }

  /**
   * Stops the background retries and finishes the pending cleanups before the connections
   * close, trying each every {@link CLOSE_CLEANUP_POLL_MS} for at most {@link CLOSE_CLEANUP_MS};
   * what is left then (a job a worker still holds) is logged with the way to remove it.
   */
  async finish(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const deadline = Date.now() + CLOSE_CLEANUP_MS;
    for (;;) {
      for (const [key, pending] of this.pending) if (await this.forget(pending)) this.pending.delete(key);
      if (this.pending.size === 0 || Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, CLOSE_CLEANUP_POLL_MS));
    }
    const left = [...this.pending.values()];
    this.pending.clear();
    if (left.length === 0) return;
    this.logger?.warn(
      { runIds: left.map(({ runId }) => runId) },
      `queueDispatch closed with ${left.length} aborted call(s) whose jobs a worker still holds after ${CLOSE_CLEANUP_MS} ms; their runs stay in Redis until purged (purge RUN_ID --discard-undelivered)`,
    );
  }
}
