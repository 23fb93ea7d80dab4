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
  private closed = false;

  constructor(private readonly redis: () => Promise<Redis>, private readonly logger: Logger | undefined) {}

  /** The incarnation of the lease of `runId` on `queueName` (0 until its keys were first deleted without a kept answer). */
  incarnation(queueName: string, runId: string): number {
    return this.incarnations.get(`${queueName}\n${runId}`) ?? 0;
  }

  /** Deletes a delivered (or aborted) call's keys in the background; retried while its job is still active. */
  later(plane: Plane, runId: string, leaseId: string, tries = 0): void {
    const key = `${plane.queue.name}\n${runId}`;
    this.pending.set(key, { plane, runId, leaseId });
    const attempt = async (): Promise<void> => {
      if (this.closed) return;
      const done = await this.forget({ plane, runId, leaseId });
      if (done || tries + 1 >= CLEANUP_TRIES) this.pending.delete(key);
      if (!done && tries + 1 < CLEANUP_TRIES) this.later(plane, runId, leaseId, tries + 1);
    };
    if (tries === 0) {
      void attempt();
      return;
    }
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
   * afresh: a new incarnation of the lease, whose receipts are new.
   */
  async forget({ plane, runId, leaseId }: PendingCleanup): Promise<boolean> {
    await plane.rq.settled(runId);
    try {
      const outcome = await forgetDispatchRun(await this.redis(), plane.queue, plane.keys, runId, leaseId);
      const key = `${plane.queue.name}\n${runId}`;
      if (outcome === 'deleted') this.incarnations.set(key, (this.incarnations.get(key) ?? 0) + 1);
      return outcome !== 'active';
    } catch {
      // Redis trouble: tried again later (or left to finish()'s last tries).
      return false;
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
