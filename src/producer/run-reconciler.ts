import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { Result } from '../spec/index.js';
import type { LeaseDeadlines } from './lease-deadlines.js';
import type { LeaseTracker } from './lease-tracker.js';
import { readJobOutcomes, type BullKeys, type JobOutcome } from './read-job-outcomes.js';
import type { RunHead, RunStore } from './run-store.js';
import { redisNowMs } from './run-retention.js';

/** Every this many passes one is full (all outstanding leases read); the others are incremental. */
export const FULL_PASS_EVERY = 15;
/**
 * How far back an incremental pass looks before the newest finish it saw, ms: BullMQ scores
 * `completed`/`failed` by the timestamp the finishing worker passes (`finishedOn`). Our workers
 * pass the Redis clock (`consumer/bull-redis-clock.ts`); a worker of an older release or another
 * client passes its own, which may be behind.
 */
export const FINISH_SKEW_MS = 10_000;

/** What the reconciler needs from its session. */
export interface ReconcilerDeps {
  readonly runId: string;
  readonly redis: Redis;
  readonly bull: BullKeys;
  readonly keys: QueueKeys;
  readonly store: RunStore;
  readonly tracker: LeaseTracker;
  readonly logger: Logger;
  readonly reconcileMs: number;
  /**
   * Sees the run record first, once per pass (status changes made by other processes), with
   * what {@link headFloor} returned just before the read.
   */
  readonly onHead: (head: RunHead | undefined, floor: number) => void;
  /** Taken just before each pass reads the run record (`RollbackWatch.floor`); 0 when omitted. */
  readonly headFloor?: () => number;
  /** Settles one lease from its job's state. */
  readonly onOutcome: (leaseId: string, outcome: JobOutcome, head: RunHead | undefined) => Promise<void>;
  /** The coordinator's own verdicts (NoWorker, DeadlineExceeded), read and decided before job states. */
  readonly deadlines: LeaseDeadlines;
  /** Settles one lease with its verdict. */
  readonly onVerdict: (result: Result) => void;
}

/**
 * The source of truth of delivery: every `reconcileMs`, reads the run record and settles the
 * run's leases that finished. Incremental passes read only what changed: the queue's
 * `completed` and `failed` sets from a cursor (the newest finish seen, less
 * {@link FINISH_SKEW_MS}), then the job state of the outstanding leases among them; so their
 * cost follows the rollouts that finish, not the leases that wait. Every
 * {@link FULL_PASS_EVERY}th pass (the first one included) is full: the job state of all
 * outstanding leases in one batched round trip ({@link readJobOutcomes}), which also finds jobs
 * that vanished and verdicts another coordinator stored. QueueEvents is only the fast path: its stream is trimmed
 * (`maxLenEvents`, default 10 000), events emitted while nobody listens are gone, and a
 * listener starting at `$` misses what happened before its first XREAD (bullmq#2874).
 *
 * Passes never overlap; a failed pass (Redis trouble) is logged and retried on the next tick.
 */
/**
 * How long a pass leaves a large completed `returnvalue` to its QueueEvents event before reading
 * it itself, ms. The next pass (reconcileMs) was too soon for a loaded coordinator: the event
 * came after, both read the text, and a 60 MiB output peaked the coordinator 410–440 MiB above its
 * start instead of under 300 (CI under load). A lost event costs that lease this long.
 */
export const LARGE_EVENT_WAIT_MS = 10_000;

export class RunReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private passes = 0;
  /** Finishes scored at or after this (worker clock, ms) are read by the next incremental pass. */
  private cursorMs = 0;
  private again = false;
  /**
   * Completed leases whose large `returnvalue` a pass saw and left to the QueueEvents event
   * carrying the same text (`LARGE_RETURN_BYTES`), with when it first saw each (monotonic ms): a
   * pass {@link LARGE_EVENT_WAIT_MS} later that still finds one awaited reads it (the event was lost).
   */
  private readonly largeSeen = new Map<string, number>();
  /** Redis clock at the first pass: a job finished before it had its QueueEvents event before this session listened. */
  private watchedSinceMs: number | undefined;

  constructor(private readonly deps: ReconcilerDeps) {}

  /**
   * Runs a pass now, then one every `reconcileMs` until {@link stop}.
   * @param deferred the first pass waits `reconcileMs` too: nothing is outstanding yet and the
   *   run record was just read (a new run), so a pass now would find nothing.
   */
  start(deferred = false): void {
    if (!deferred) {
      void this.pass();
      return;
    }
    this.timer = setTimeout(() => void this.pass(), this.deps.reconcileMs);
    this.timer.unref();
  }

  /** Runs a pass as soon as possible (now, or right after the one in progress). */
  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    void this.pass();
  }

  /** No more passes; a pass in progress finishes (its results are dropped by the tracker if late). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Settles the given leases now (a QueueEvents `failed` needs the job's fields). */
  async check(leaseIds: readonly string[]): Promise<void> {
    const { redis, bull, keys, store, runId } = this.deps;
    const [head, outcomes] = await Promise.all([store.readHead(runId), readJobOutcomes(redis, bull, keys, leaseIds)]);
    await this.settle(outcomes, head);
  }

  /**
   * Hands `outcomes` to the session. A job found missing is judged by the run record as read
   * after the jobs were: the head read before them may predate a Redis that restarted empty in
   * between, and would make a job Redis lost look removed by hand (JobMissing) instead of one to
   * add again (CI, redis-lost-run: all 5 unfinished leases of a run ended JobMissing).
   */
  private async settle(outcomes: ReadonlyMap<string, JobOutcome>, headBefore: RunHead | undefined): Promise<void> {
    let head = headBefore;
    if (head !== undefined && [...outcomes.values()].some((outcome) => outcome.state === 'missing')) head = await this.deps.store.readHead(this.deps.runId);
    for (const [leaseId, outcome] of outcomes) await this.deps.onOutcome(leaseId, outcome, head);
  }

  /** Job ids in the queue's completed and failed sets scored at or after `sinceMs`, and the newest score. */
  private async finishedSince(sinceMs: number): Promise<{ ids: Set<string>; newestMs: number }> {
    const { redis, bull } = this.deps;
    // A pipeline, not MULTI: one round trip, two commands; the two reads need not be atomic.
    const replies = (await redis
      .pipeline()
      .zrangebyscore(bull.toKey('completed'), sinceMs, '+inf', 'WITHSCORES')
      .zrangebyscore(bull.toKey('failed'), sinceMs, '+inf', 'WITHSCORES')
      .exec()) ?? [];
    const ids = new Set<string>();
    let newestMs = 0;
    for (const [, flat] of replies as [unknown, string[]][]) {
      for (let i = 0; i + 1 < (flat ?? []).length; i += 2) {
        ids.add(flat[i] as string);
        newestMs = Math.max(newestMs, Number(flat[i + 1]));
      }
    }
    return { ids, newestMs };
  }

  private pass(): Promise<void> {
    if (this.running || this.stopped) return this.running ?? Promise.resolve();
    this.running = (async () => {
      const { store, runId, tracker, logger } = this.deps;
      try {
        const full = this.passes++ % FULL_PASS_EVERY === 0;
        const ids = tracker.outstanding();
        const floor = this.deps.headFloor?.() ?? 0;
        const head = await store.readHead(runId);
        this.deps.onHead(head, floor);
        if (ids.length > 0 && !this.stopped) {
          // Taken before reading: what finishes during this pass is read again by the next one.
          const cursor = full ? (await redisNowMs(this.deps.redis)) - FINISH_SKEW_MS : this.cursorMs;
          this.watchedSinceMs ??= cursor + FINISH_SKEW_MS;
          // A verdict wins over the job's state: the job of a NoWorker lease is removed, and the
          // late answer of a DeadlineExceeded one must not be delivered after it.
          for (const verdict of await this.deps.deadlines.check(ids, { full })) this.deps.onVerdict(verdict);
          let rest = ids.filter((leaseId) => tracker.awaits(leaseId));
          if (!full) {
            const finished = await this.finishedSince(cursor);
            rest = rest.filter((leaseId) => finished.ids.has(leaseId));
            this.cursorMs = Math.max(this.cursorMs, finished.newestMs - FINISH_SKEW_MS);
          } else {
            this.cursorMs = Math.max(this.cursorMs, cursor);
          }
          for (const leaseId of this.largeSeen.keys()) if (!tracker.awaits(leaseId)) this.largeSeen.delete(leaseId);
          const readLarge = (leaseId: string, _bytes: number, finishedOnMs: number): boolean => {
            // Finished before this session listened (a resumed run): no event of it is coming.
            if (finishedOnMs < (this.watchedSinceMs ?? 0) - FINISH_SKEW_MS) return true;
            const firstSeenMs = this.largeSeen.get(leaseId);
            if (firstSeenMs === undefined) this.largeSeen.set(leaseId, performance.now());
            return firstSeenMs !== undefined && performance.now() - firstSeenMs >= LARGE_EVENT_WAIT_MS;
          };
          await this.settle(await readJobOutcomes(this.deps.redis, this.deps.bull, this.deps.keys, rest, readLarge), head);
        }
      } catch (err) {
        if (!this.stopped) logger.warn({ runId, err: (err as Error).message }, 'reconciliation pass failed; retrying on the next tick');
      } finally {
        this.running = undefined;
        if (!this.stopped) {
          const waitMs = this.again ? 0 : this.deps.reconcileMs;
          this.again = false;
          this.timer = setTimeout(() => void this.pass(), waitMs);
          this.timer.unref();
        }
      }
    })();
    return this.running;
  }
}
