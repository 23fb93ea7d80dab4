import type { Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';
import { isRedisTimeout } from '../platform/redis-timeout.js';
import { reclaimLease, type ReclaimOutcome } from './lease-reclaim.js';
import { isLostOwnership } from './lost-ownership.js';

/** Most finished answers a worker keeps while Redis does not take them. */
export const MAX_KEPT_ANSWERS = 1_000;

/** Most bytes (of their JSON text) those answers may hold together: 128 MiB. */
export const MAX_KEPT_ANSWER_BYTES = 128 * 1024 * 1024;

/** Pause before handing a kept answer in again after Redis did not answer the last try, ms. */
const RETRY_MS = 1_000;

/** One finished answer Redis did not take yet: the attempt's job, lock token and Result. */
interface KeptAnswer {
  readonly worker: Worker;
  readonly job: Job;
  readonly token: string;
  readonly result: unknown;
  readonly text: string;
  readonly keptAt: number;
  /** BullMQ's stalled count of the job when the attempt started (see `reclaimLease`). */
  readonly stalledCount: number;
}

/** What the keeper tells the worker. */
export interface KeptAnswerEvents {
  /** A kept answer was dropped because another attempt has the lease: count it as a late duplicate. */
  onDropped(leaseId: string): void;
}

/**
 * The finished answers of this worker that Redis did not take, kept in memory (bounded by
 * {@link MAX_KEPT_ANSWERS} and {@link MAX_KEPT_ANSWER_BYTES}) until Redis answers, then handed in
 * if the lease is still this attempt's or nobody's (`reclaimLease`), so a rollout that finished
 * while Redis stalled is not run again (issue 33: a 12 s `DEBUG SLEEP` ran all four finished
 * rollouts a second time).
 *
 * Why not leave it to BullMQ: its `moveToCompleted` fails once the lock expired during the stall
 * ("Missing lock"), the job then waits in `active` for the stalled check, which hands it to any
 * worker to run again; and while Redis does not answer the command times out with its outcome
 * unknown. The attempt that holds the answer is the one that should finish the lease.
 */
export class KeptAnswers {
  private readonly kept = new Map<string, KeptAnswer>();
  /** Leases whose hand-in is under way: one at a time each, else a second finish counts a false duplicate. */
  private readonly inFlight = new Set<string>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private bytes = 0;
  private handingIn: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly lockDurationMs: number,
    private readonly logger: Logger,
    private readonly events: KeptAnswerEvents,
  ) {}

  /** How many answers are kept now. */
  get size(): number {
    return this.kept.size;
  }

  /**
   * Keeps the answer of the attempt `token` of `job`, and tries to hand it in at once (while
   * Redis does not answer, that try waits in the connection and reclaims the lease as Redis
   * wakes, before the stalled check can give it away).
   * @param why what Redis did instead of taking it, for the log.
   * @returns false when the bounds are reached: the answer is not kept (the lease runs again
   *   after its lock expires, as without a keeper), which is logged.
   */
  keep(worker: Worker, job: Job, token: string, result: unknown, why: string): boolean {
    const leaseId = String(job.id);
    const text = JSON.stringify(result) ?? 'null';
    if (this.kept.size >= MAX_KEPT_ANSWERS || this.bytes + text.length > MAX_KEPT_ANSWER_BYTES) {
      this.logger.warn(
        { leaseId, kept: this.kept.size, keptBytes: this.bytes, maxKept: MAX_KEPT_ANSWERS, maxKeptBytes: MAX_KEPT_ANSWER_BYTES },
        'finished answer not kept: the keeper is full; the lease runs again once its lock expires',
      );
      return false;
    }
    this.kept.set(leaseId, { worker, job, token, result, text, keptAt: Date.now(), stalledCount: job.stalledCounter ?? 0 });
    this.bytes += text.length;
    this.logger.warn({ leaseId, why, kept: this.kept.size }, `finished answer kept here: Redis did not take it (${why}); it is handed in when Redis answers`);
    void this.handIn(leaseId);
    return true;
  }

  /** Hands in every kept answer (when Redis answers again); one pass at a time. */
  handInAll(): Promise<void> {
    this.handingIn ??= (async () => {
      for (const leaseId of [...this.kept.keys()]) await this.handIn(leaseId);
    })().finally(() => (this.handingIn = undefined));
    return this.handingIn;
  }

  /**
   * Asks Redis to make each lease the attempt's again (`running`: attempts still running, with
   * their lock tokens and stalled counts), without waiting for the answers: sent while Redis does not answer,
   * the scripts run as it wakes, so locks that expired during the stall are this worker's again
   * before BullMQ's stalled check (also queued) can hand the leases to another worker.
   */
  reclaimAhead(queue: string, running: ReadonlyArray<{ readonly leaseId: string; readonly token: string; readonly stalledCount: number }>): void {
    for (const { leaseId, token, stalledCount } of running) void this.reclaim(queue, leaseId, token, stalledCount).catch(() => undefined);
  }

  /** Reclaims one lease for the attempt `token` (see `reclaimLease`). */
  reclaim(queue: string, leaseId: string, token: string, stalledCount: number): Promise<ReclaimOutcome> {
    return reclaimLease(this.redis, this.prefix, queue, leaseId, token, this.lockDurationMs, stalledCount);
  }

  /** Hands in one kept answer unless a hand-in of it is under way; retried every {@link RETRY_MS} while Redis does not take it. */
  private async handIn(leaseId: string): Promise<void> {
    if (this.inFlight.has(leaseId) || !this.kept.has(leaseId)) return;
    this.inFlight.add(leaseId);
    clearTimeout(this.retries.get(leaseId));
    this.retries.delete(leaseId);
    let settled = false;
    try {
      settled = await this.tryHandIn(leaseId);
    } finally {
      this.inFlight.delete(leaseId);
    }
    if (!settled && this.kept.has(leaseId) && !this.closed) {
      const timer = setTimeout(() => void this.handIn(leaseId), RETRY_MS);
      timer.unref();
      this.retries.set(leaseId, timer);
    }
  }

  /** @returns true when the answer is settled (handed in or dropped), false when Redis did not answer in time. */
  private async tryHandIn(leaseId: string, again = false): Promise<boolean> {
    const entry = this.kept.get(leaseId);
    if (!entry) return true;
    const { job, token, worker } = entry;
    let outcome: ReclaimOutcome;
    try {
      outcome = await this.reclaim(job.queueName, leaseId, token, entry.stalledCount);
    } catch (err) {
      // Still no answer: kept, and tried again.
      if (!isRedisTimeout(err)) this.logger.debug({ leaseId, err: (err as Error).message }, 'handing in a kept answer failed; trying again');
      return false;
    }
    if (this.kept.get(leaseId) !== entry) return true;
    const keptMs = Date.now() - entry.keptAt;
    switch (outcome.state) {
      case 'ours':
      case 'reclaimed':
        try {
          await job.moveToCompleted(entry.result, token, false);
        } catch (err) {
          // The finish BullMQ sent during the stall may have gone through between the reclaim and
          // this one (same token): asked once more, the lease then says `finished` with this answer.
          if (isLostOwnership(err)) return again ? this.drop(entry, 'another attempt took the lease between the reclaim and the finish') : this.tryHandIn(leaseId, true);
          // Not answered in time again: kept, and tried again (the reclaim is idempotent).
          return false;
        }
        this.forget(entry);
        worker.emit('completed', job, entry.result, 'active');
        this.logger.info(
          { leaseId, keptMs, lease: outcome.state === 'ours' ? 'still this attempt\'s' : 'reclaimed: its lock had expired and nobody had taken it' },
          `kept answer handed in after ${keptMs} ms; the rollout is not run again`,
        );
        return true;
      case 'finished':
        if (outcome.returnvalue === entry.text) {
          // The finish BullMQ sent while Redis did not answer went through as it woke.
          this.forget(entry);
          worker.emit('completed', job, entry.result, 'active');
          this.logger.info({ leaseId, keptMs }, 'kept answer was already handed in: the finish sent during the stall went through as Redis woke');
          return true;
        }
        return this.drop(entry, 'another attempt finished the lease first');
      case 'taken':
        return this.drop(entry, 'another attempt took the lease while Redis did not answer (its lock had expired)');
      case 'gone':
        this.forget(entry);
        this.logger.warn({ leaseId, keptMs }, 'kept answer dropped: the lease\'s job is gone from Redis (its run was purged)');
        return true;
      case 'elsewhere':
        return this.drop(entry, 'the lease is neither active nor waiting any more (delayed or moved by another client)');
    }
  }

  private drop(entry: KeptAnswer, why: string): true {
    this.forget(entry);
    const leaseId = String(entry.job.id);
    this.logger.warn({ leaseId, keptMs: Date.now() - entry.keptAt }, `late answer dropped: ${why}`);
    this.events.onDropped(leaseId);
    return true;
  }

  private forget(entry: KeptAnswer): void {
    const leaseId = String(entry.job.id);
    if (this.kept.get(leaseId) !== entry) return;
    this.kept.delete(leaseId);
    this.bytes -= entry.text.length;
  }

  /** Logs what is still kept when the worker stops: those leases run again elsewhere. */
  close(): void {
    this.closed = true;
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
    if (this.kept.size === 0) return;
    this.logger.warn({ kept: this.kept.size, leases: [...this.kept.keys()].slice(0, 20) }, `${this.kept.size} kept answer(s) lost at shutdown: Redis did not take them; those leases run again`);
    this.kept.clear();
    this.bytes = 0;
  }
}
