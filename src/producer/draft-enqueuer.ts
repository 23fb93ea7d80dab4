import type { Queue } from 'bullmq';
import { ROLLOUT_JOB_NAME } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { Result } from '../spec/index.js';
import { callerResult } from './caller-result.js';
import type { LeaseTracker } from './lease-tracker.js';
import { prepareDraft, type PreparedDraft } from './rollout-draft.js';
import type { RunStore } from './run-store.js';

/** What the enqueuer needs from its session. */
export interface EnqueuerDeps {
  readonly runId: string;
  readonly queue: Queue;
  readonly store: RunStore;
  readonly tracker: LeaseTracker;
  readonly logger: Logger;
  readonly maxInFlight: number;
  readonly maxSpecBytes: number;
  /** Creates (or finds) the run record on the first draft; resolves to the run's runAttemptId. */
  readonly prepareRun: () => Promise<string>;
  /** Receives the caller Result of a refused draft (the session decides whether to stop). */
  readonly onRefused: (result: Result) => void;
}

type ValidDraft = Extract<PreparedDraft, { ok: true }>;

function iteratorOf<T>(items: Iterable<T> | AsyncIterable<T>): Iterator<T> | AsyncIterator<T> {
  return Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
}

/**
 * Pulls drafts one at a time and enqueues each as one BullMQ job (`jobId` = lease id,
 * `attempts: 1`, results kept in Redis: no removeOnComplete/removeOnFail), never holding more
 * than `maxInFlight` of the run's jobs unfinished. A draft is pulled only when the previous one
 * is settled, so a lazy (async) draft source is never read ahead of the queue.
 *
 * Order per lease, chosen so a coordinator killed at any point can resume: the job is added
 * first, then the lease is recorded in `runLeases` (ZADD NX). A lease already recorded is never
 * added again (BullMQ would ignore the add anyway, but a job removed since must not come back)
 * and counts in `alreadyEnqueued`.
 */
export class DraftEnqueuer {
  private stopped = false;
  private inFlight: Promise<unknown> = Promise.resolve();
  private runAttemptId: string | undefined;
  /** Distinct leases seen in this call (enqueued, already enqueued or refused). */
  private readonly seen = new Set<string>();

  constructor(private readonly deps: EnqueuerDeps) {}

  /** Number of distinct leases in the draft list, known once {@link run} returned true. */
  get distinctLeases(): number {
    return this.seen.size;
  }

  /** True once the run record exists (the first draft was read). */
  get prepared(): boolean {
    return this.runAttemptId !== undefined;
  }

  /** Stops after the current draft; nothing more is pulled or enqueued. */
  halt(): void {
    this.stopped = true;
    this.deps.tracker.notify();
  }

  /** Resolves once no `Queue.add` of this enqueuer is in flight (call after {@link halt}). */
  async settled(): Promise<void> {
    await this.inFlight.catch(() => undefined);
  }

  /**
   * Enqueues every draft. Resolves true when the drafts were exhausted, false when halted.
   * @throws whatever the draft source throws, or a Redis error from enqueuing (the run stays resumable).
   */
  async run(drafts: Iterable<unknown> | AsyncIterable<unknown>): Promise<boolean> {
    const { tracker, maxInFlight } = this.deps;
    const iterator = iteratorOf(drafts);
    let exhausted = false;
    try {
      for (let index = 0; !this.stopped; index++) {
        const step = await iterator.next();
        if (step.done) return (exhausted = true);
        if (this.stopped) break;
        this.runAttemptId ??= await this.deps.prepareRun();
        const prepared = prepareDraft(step.value, {
          runId: this.deps.runId, runAttemptId: this.runAttemptId, index, maxSpecBytes: this.deps.maxSpecBytes,
        });
        const accepted = await this.accept(prepared);
        if (!accepted) continue;
        while (!this.stopped && tracker.unfinishedCount >= maxInFlight) await tracker.changed();
        if (this.stopped) break;
        tracker.track(accepted.leaseId, 'adding');
        this.inFlight = this.add(accepted, index);
        await this.inFlight;
      }
      return false;
    } finally {
      // Let a generator source run its own cleanup when we stop early.
      if (!exhausted) await Promise.resolve(iterator.return?.()).catch(() => undefined);
    }
  }

  /** Handles refused and repeated drafts; returns the draft when it is a new lease to add. */
  private async accept(prepared: PreparedDraft): Promise<ValidDraft | undefined> {
    const { runId, store, logger } = this.deps;
    const { leaseId } = prepared;
    const repeated = this.seen.has(leaseId);
    this.seen.add(leaseId);
    if (!prepared.ok) {
      // A refused draft of a resumed run was answered before: never yield it twice.
      if (!repeated && !(await store.isDelivered(runId, leaseId))) {
        logger.warn({ runId, leaseId, type: prepared.error.type }, `draft refused, not enqueued: ${prepared.error.message}`);
        this.deps.onRefused(callerResult(leaseId, runId, prepared.taskId, prepared.error.type, prepared.error.message));
      }
      return undefined;
    }
    if (repeated) {
      await store.countAlreadyEnqueued(runId);
      logger.warn({ runId, leaseId }, 'draft repeats a lease id of this call: already enqueued, it gets one job and one Result; give each task a distinct taskKey or task.id');
      return undefined;
    }
    if (await store.isEnqueued(runId, leaseId)) {
      await store.countAlreadyEnqueued(runId);
      logger.debug({ runId, leaseId }, 'lease already enqueued (resumed run): not added again');
      return undefined;
    }
    return prepared;
  }

  private async add(prepared: ValidDraft, index: number): Promise<void> {
    const { queue, store, tracker, runId } = this.deps;
    try {
      await queue.add(ROLLOUT_JOB_NAME, prepared.spec, { jobId: prepared.leaseId, attempts: 1 });
      await store.recordLease(runId, prepared.leaseId, index);
      tracker.confirm(prepared.leaseId);
    } catch (err) {
      tracker.forget(prepared.leaseId);
      throw err;
    }
  }
}
