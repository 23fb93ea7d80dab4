import type { Logger } from '../platform/logger.js';
import { isRedisTimeout } from '../platform/redis-timeout.js';
import type { Result } from '../spec/index.js';
import type { CoordinatorLease } from './coordinator-lease.js';
import type { LeaseTracker } from './lease-tracker.js';
import { NO_RECORD, type RunStore } from './run-store.js';

/**
 * Delivery of one session fenced by its coordinator lease (DESIGN.md "Producer"; issue 11 item
 * "fenced delivery"): a Result is yielded only after {@link open} resolved with nothing awaited
 * in between, and acknowledged only by the script that checks the lease key holds our token.
 * After the lease was lost and retaken, what another coordinator delivered meanwhile is dropped
 * from the session before anything more is delivered.
 */
export class DeliveryFence {
  /** The lease's retake count when the delivered set was last re-read. */
  private seenEpoch = 0;
  /**
   * @param restoreRecord makes the run's record again when an acknowledgement found it gone
   *   (see `NO_RECORD`): the session's `RunRecordRestorer.restore`.
   */
  constructor(
    private readonly runId: string,
    private readonly lease: CoordinatorLease,
    private readonly store: RunStore,
    private readonly tracker: LeaseTracker,
    private readonly logger: Logger,
    private readonly restoreRecord: () => Promise<void>,
  ) {}

  /**
   * True when a Result may be yielded now: the lease is held and was not retaken since the
   * delivered set was last re-read. Synchronous, so the per-Result check awaits nothing;
   * when false, {@link open} waits until it is true.
   */
  isOpen(): boolean {
    return this.lease.holds() && this.lease.epoch === this.seenEpoch;
  }

  /**
   * Resolves while this coordinator holds its lease (waiting for it to be retaken when lost).
   * @throws CoordinatorLeaseLostError when another coordinator keeps the lease.
   */
  async open(): Promise<void> {
    for (;;) {
      if (!this.lease.holds()) await this.lease.waitHeld();
      if (this.lease.epoch === this.seenEpoch) return;
      this.seenEpoch = this.lease.epoch;
      const delivered = await this.untilAnswered(() => this.store.deliveredAmong(this.runId, this.tracker.pendingLeases()));
      const dropped = this.tracker.dropDelivered(delivered);
      if (dropped > 0) this.logger.warn({ runId: this.runId, dropped }, 'another coordinator delivered some Results while this one had lost its lease; they are not delivered again');
    }
  }

  /**
   * Acknowledges delivered Results, all in one fenced script call; when the lease was lost,
   * waits for it to be retaken (then acknowledges, unless another coordinator did) or throws like
   * {@link open}. Acknowledging a Result twice is harmless: it is counted once. A run whose record
   * Redis lost gets it made again first (`restoreRecord`).
   * @param stopped true once the session was abandoned: give up silently.
   * @param complete the run's last Results: the same call marks a running run completed.
   * @returns whether this call marked the run completed, and the run's delivered set size after
   *   it (undefined when nothing was written).
   * @throws Error when the record is gone again at once after it was made again.
   */
  async acknowledge(results: readonly Pick<Result, 'leaseId' | 'kind'>[], stopped: () => boolean, complete = false): Promise<{ readonly completed: boolean; readonly delivered?: number }> {
    if (results.length === 0) return { completed: false };
    let restored = false;
    for (;;) {
      const reply = await this.untilAnswered(() => this.store.acknowledgeMany(this.runId, results, this.lease.token, complete), stopped);
      if (reply === undefined) return { completed: false };
      if (reply === NO_RECORD) {
        if (restored) throw new Error(`run "${this.runId}": its record was deleted from Redis again right after it was made again (a purge or FLUSHDB while the run was delivering)`);
        await this.restoreRecord();
        restored = true;
        continue;
      }
      if (reply !== 'fenced') return { completed: reply.completed, delivered: reply.delivered };
      if (stopped()) return { completed: false };
      await this.open();
    }
  }

  /**
   * `call` again while it fails with a Redis command timeout (`ROLLOUT_QUEUE_REDIS_TIMEOUT_MS`):
   * a delivering coordinator waits for Redis, as its Results wait in Redis (issue 33 item 1 bounds
   * each command, not the run). A timeout is also what a coordinator sees when its own process
   * was paused (SIGSTOP, a long GC) past the timeout: the timer fires before the reply is read,
   * though Redis answered (CI under load: a resumed coordinator ended "Command timed out"). Both
   * calls are safe to repeat (a read; an acknowledgement counted once). Logged once per wait.
   * @returns undefined when `stopped()` became true meanwhile.
   */
  private untilAnswered<T>(call: () => Promise<T>): Promise<T>;
  private untilAnswered<T>(call: () => Promise<T>, stopped: () => boolean): Promise<T | undefined>;
  private async untilAnswered<T>(call: () => Promise<T>, stopped: () => boolean = () => false): Promise<T | undefined> {
    let logged = false;
    for (;;) {
      try {
        return await call();
      } catch (err) {
        if (!isRedisTimeout(err)) throw err;
        if (stopped()) return undefined;
        if (!logged) this.logger.warn({ runId: this.runId, err: (err as Error).message }, 'Redis did not answer a delivery command in time; trying again until it does (nothing is delivered meanwhile)');
        logged = true;
      }
    }
  }
}
