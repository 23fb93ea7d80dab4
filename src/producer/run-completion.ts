import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { Result } from '../spec/index.js';
import type { CoordinatorLease } from './coordinator-lease.js';
import type { DraftEnqueuer } from './draft-enqueuer.js';
import type { LeaseTracker } from './lease-tracker.js';
import type { BullKeys } from './read-job-outcomes.js';
import type { RunEnding } from './run-ending.js';
import { applyRetention } from './run-retention.js';
import { RunStoppedError } from './run-stopped-error.js';
import type { RunHead, RunStore } from './run-store.js';
import type { SessionPlan } from './session-plan.js';

/** What the end of a fully delivered run needs from its `RunSession`; the functions read the session's state live. */
export interface RunCompletionDeps {
  readonly runId: string;
  readonly redis: Redis;
  /** The base queue and its placement queues (retention takes the run's jobs out of each). */
  readonly queue: BullKeys;
  readonly keys: QueueKeys;
  readonly store: RunStore;
  readonly logger: Logger;
  /** Retention of a run once every Result is delivered, ms (see `applyRetention`). */
  readonly retainMs: number;
  /** The session's tracker: the wrap-up ends the run only with nothing unfinished or ready; leases still unfinished make retention read the run's sets. */
  readonly tracker: Pick<LeaseTracker, 'unfinishedCount' | 'readyCount'>;
  /** `drafts` undefined: an `attach`, which says what was never enqueued; `specCount` 1: a `rollout()` call (retention logged at debug). */
  readonly plan: Pick<SessionPlan, 'drafts' | 'specCount'>;
  /** The run's head when it was stopped or cancelled before the session began, else undefined. */
  readonly earlier: () => RunHead | undefined;
  /** The run was completed when the session took it (a re-attach, or a re-run that re-opened it). */
  readonly completedAtOpen: () => boolean;
  /** The session acknowledged a Result. */
  readonly deliveredAny: () => boolean;
  /** The run did not exist when the session took its coordinator lease. */
  readonly madeRun: () => boolean;
  /** Every lease the session acknowledged, in order; undefined once too many (`AcknowledgedLeases.all`). */
  readonly acknowledgedLeaseIds: () => readonly string[] | undefined;
  /** The session's coordinator lease, once taken. */
  readonly coordinatorLease: () => CoordinatorLease | undefined;
  /** The sha256 of every artifact the session stored (`ArtifactStorer.storedArtifacts`); [] without a storer. */
  readonly storedArtifacts: () => readonly string[];
  /** The run's early end, if one began: then the wrap-up marks nothing. */
  readonly ending: Pick<RunEnding, 'begun'>;
  /** The session's enqueuer, once it has one (a session with drafts). */
  readonly enqueuer: () => DraftEnqueuer | undefined;
  /** Enqueuing is over: the draft list was exhausted, or the session enqueues nothing. */
  readonly enqueueDone: () => boolean;
  /** The enqueuer's run and its follow-up (spec count); never rejects. */
  readonly enqueuing: () => Promise<void>;
  /** What ended enqueuing with an error, if anything did. */
  readonly failure: () => Error | undefined;
  /**
   * Acknowledges delivered Results through the session's `DeliveryFence`; with `complete`, the same
   * call marks a running run completed. Resolves true when it marked the run completed; rejects
   * with the Redis error of the acknowledgement.
   */
  readonly acknowledge: (results: readonly Result[], complete: boolean) => Promise<boolean>;
  /** Ends the session (its coordinator lease is released there). */
  readonly teardown: () => Promise<void>;
}

/**
 * The end of a run whose every lease was answered and acknowledged by its `RunSession`, and the
 * wrap-up that gets there after the consumer took its last Results: marks the run completed (or
 * says why it is not) and starts its retention (`applyRetention`), releasing the coordinator
 * lease with the same call when the session knows every lease of the run.
 */
export class RunCompletion {
  constructor(private readonly deps: RunCompletionDeps) {}

  /**
   * After the consumer took its last Results (off the consumer's path): once the enqueuer of a
   * fully taken draft list finished recording, acknowledges them, and a run with nothing left is
   * marked completed (by the same script call when the session has drafts) and retained; then
   * the session ends (its coordinator lease is released last, so no other coordinator starts the
   * run again before it is marked). A failed acknowledgement ends the session without marking anything.
   * @param taken the Results the consumer took and the session has not acknowledged yet.
   * @throws what {@link finish} or {@link retainCompleted} throws (the session has ended by then).
   */
  async wrapUp(taken: readonly Result[]): Promise<void> {
    const { runId, plan, tracker, logger } = this.deps;
    try {
      const finite = Array.isArray(plan.drafts) ? plan.drafts.length : undefined;
      const enqueuer = this.deps.enqueuer();
      // Its jobs were added but their leases may still be being recorded: wait, not skip the end.
      if (!this.deps.enqueueDone() && enqueuer && finite !== undefined && enqueuer.pulled >= finite) await this.deps.enqueuing();
      const last = this.deps.enqueueDone() && !this.deps.failure() && tracker.unfinishedCount === 0 && tracker.readyCount === 0 && !this.deps.ending.begun;
      // The completion mark rides with the acknowledgement, except where finish() checks more
      // first (a run stopped earlier, attach).
      const complete = last && !this.deps.earlier() && plan.drafts !== undefined;
      const acknowledged = await this.deps.acknowledge(taken, complete).then((completed) => ({ completed }), (err: Error) => {
        logger.warn({ runId, leases: taken.length, err: err.message }, 'acknowledge failed; those Results are delivered again by the next session of the run');
        return undefined;
      });
      if (!acknowledged) return;
      if (complete) await this.retainCompleted(acknowledged.completed);
      else if (last) await this.finish();
    } finally {
      await this.deps.teardown();
    }
  }

  /**
   * Every lease answered and acknowledged: record the end, or say what is missing.
   * @throws RunStoppedError when the run was stopped or cancelled before the session began (its
   *   retention is started first); Error from an `attach` when specs of a running run were never
   *   enqueued; the Redis error of a read, the status change or retention.
   */
  async finish(): Promise<void> {
    const { runId, store, plan } = this.deps;
    const earlier = this.deps.earlier();
    if (earlier) {
      // Every Result of the stopped run is delivered now: its retention starts.
      await this.retain();
      throw new RunStoppedError(runId, null, `run "${runId}" was ${earlier.status} earlier (${earlier.stopReason ?? 'no reason recorded'}); ` +
        'its remaining Results were delivered and nothing new was enqueued; start a new run id to run its specs again', earlier.status === 'cancelled' ? 'cancelled' : 'stopped');
    }
    if (!plan.drafts) {
      const [head, known] = await Promise.all([store.readHead(runId), store.knownLeases(runId)]);
      if (head?.status === 'running' && (head.specCount === null || head.specCount > known)) {
        const missing = head.specCount === null ? 'an unknown number of' : String(head.specCount - known);
        throw new Error(`run "${runId}": ${missing} specs were never enqueued (the coordinator stopped while enqueuing); ` +
          'every Result of the enqueued ones was delivered; call mapRollouts again with the same runId and the specs to run the rest');
      }
    }
    await this.retainCompleted(await store.setStatus(runId, 'completed', ['running']));
  }

  /**
   * Retains the run once it is completed: marked so now (`changed`), or found so (by another session).
   * @throws the Redis error of a read or of retention.
   */
  async retainCompleted(changed: boolean): Promise<void> {
    if (!changed && this.deps.completedAtOpen() && !this.deps.deliveredAny() && (await this.deps.store.hasEnded(this.deps.runId))) {
      // A session that found the run completed and delivered nothing (a re-attach to re-read it)
      // leaves its retention alone: it started when the run ended, and endedAt says when that was.
      return;
    }
    if (changed || (await this.deps.store.readHead(this.deps.runId))?.status === 'completed') await this.retain();
  }

  private async retain(): Promise<void> {
    const { runId, redis, queue, keys, retainMs, logger } = this.deps;
    const lease = this.deps.coordinatorLease();
    const known = this.knownLeases();
    // With the leases known, the same call also releases the coordinator lease (teardown's release is then a no-op).
    const release = known && lease ? { key: keys.runCoordinator(runId), token: lease.token } : undefined;
    await applyRetention(redis, queue, keys, runId, retainMs, known, release);
    if (release) lease?.markReleased();
    // A run of one spec (every rollout() call) says it at debug: a line per call is noise at info.
    const level = this.deps.plan.specCount === 1 ? 'debug' : 'info';
    logger[level]({ runId, retainMs }, 'every Result delivered; the run expires from Redis after its retention');
  }

  /**
   * Every lease of the run and its stored artifacts, when the session knows them all: it made
   * the run, no other coordinator can have held it since (its lease was never found free and
   * retaken, `CoordinatorLease.epoch`), and it acknowledged every lease itself (a completed run's
   * leases are all delivered). Else undefined: retention reads them from the run's sets.
   */
  private knownLeases(): { leaseIds: readonly string[]; artifacts: readonly string[] } | undefined {
    const leaseIds = this.deps.acknowledgedLeaseIds();
    if (!this.deps.madeRun() || !leaseIds || this.deps.earlier() || this.deps.coordinatorLease()?.epoch !== 0 || this.deps.tracker.unfinishedCount > 0) return undefined;
    return { leaseIds, artifacts: this.deps.storedArtifacts() };
  }
}
