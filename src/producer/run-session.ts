import { CoordinatorLease } from './coordinator-lease.js';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import { CostTally, type Result } from '../spec/index.js';
import { ArtifactStorer } from './artifact-storer.js';
import { DeliveryFence } from './delivery-fence.js';
import { DraftEnqueuer } from './draft-enqueuer.js';
import { EvaluationCache } from './evaluation-cache.js';
import type { PlacementQueues } from './placement-queues.js';
import type { PlacementFor } from './producer-options.js';
import { LeaseDeadlines } from './lease-deadlines.js';
import { LeaseTracker } from './lease-tracker.js';
import type { JobOutcome } from './read-job-outcomes.js';
import { resultForMissingJob, resultFromFailedJob, resultFromReturnValue } from './result-from-job.js';
import { RunEnding, type Ending } from './run-ending.js';
import { RunReconciler } from './run-reconciler.js';
import { RollbackWatch } from './rollback-watch.js';
import { applyRetention, redisNowMs } from './run-retention.js';
import { endedEarlier, resumeRun, tellReuse } from './resume-run.js';
import { RunNotFoundError } from './run-not-found-error.js';
import { RunStoppedError } from './run-stopped-error.js';
import type { OpenedRun, RunCreation, RunHead, RunStore } from './run-store.js';
import { AcknowledgedLeases } from './acknowledged-leases.js';
import { restoredRunOf, type SessionPlan } from './session-plan.js';

export type { SessionPlan } from './session-plan.js';

/** Connections and settings a session shares with its `RolloutQueue`. */
export interface SessionDeps {
  readonly redis: Redis;
  /** The base queue and its placement queues. */
  readonly queue: PlacementQueues;
  readonly keys: QueueKeys;
  /** Producer option `placementFor`: labels for a draft's task when its spec names no placement. */
  readonly placementFor?: PlacementFor | undefined;
  /** Producer option `costCeilingUsd`: stop dispatching once the run's delivered receipts reach it, USD. */
  readonly costCeilingUsd?: number | undefined;
  readonly store: RunStore;
  readonly logger: Logger;
  readonly maxInFlight: number;
  /** Most Results held in memory for the consumer (`ProducerOptions.maxHeldResults`); default unbounded. */
  readonly maxHeldResults?: number;
  /** `ProducerOptions.fairShare`: jobs get fair-share priorities (default true). */
  readonly fairShare?: boolean;
  /** Most Results yielded and not yet acknowledged (`ProducerOptions.maxUnacknowledged`); default 1. */
  readonly maxUnacknowledged?: number;
  readonly maxSpecBytes: number;
  readonly maxTaskBytes: number;
  readonly reconcileMs: number;
  /** Retention of a run once every Result is delivered, ms (see `applyRetention`). */
  readonly retainMs: number;
  /**
   * Runs a session's wrap-up after its last Result was delivered (completion mark, retention,
   * lease release) off the consumer's path; the queue tracks it (`close()` awaits it) and logs its error.
   */
  readonly afterDelivery: (runId: string, work: () => Promise<void>) => void;
  /** Resolves once the run's wrap-up in this process (if any) is done; never rejects. */
  readonly wrappedUp: (runId: string) => Promise<void>;
  /** Routes QueueEvents of the run here; throws when the run already has a live session. */
  readonly register: (session: RunSession) => void;
  readonly unregister: (session: RunSession) => void;
}

/**
 * The engine behind one `mapRollouts` / `attach` iteration: enqueues drafts (back-pressured),
 * collects Results from QueueEvents and reconciliation, yields them in completion order, and
 * acknowledges them only once the consumer came back for more (or broke out), in batches of up
 * to `maxUnacknowledged`: at least once towards the consumer, counted exactly once in Redis. Stops on a caller Result, cancels
 * on abort, and can be abandoned by `close()` (then nothing more is acknowledged).
 */
export class RunSession {
  readonly runId: string;
  private readonly tracker: LeaseTracker;
  /** Receipts of this session's delivered Results, for `costCeilingUsd`. */
  private readonly cost = new CostTally();
  private readonly reconciler: RunReconciler;
  private enqueuer: DraftEnqueuer | undefined;
  private enqueueDone = false;
  private failure: Error | undefined;
  private readonly ending: RunEnding;
  /** Set when the run was stopped or cancelled before this session began. */
  private earlier: RunHead | undefined;
  /** True until the session knows `earlier`; a cancel told meanwhile waits in `cancelWhenOpen`. */
  private opening = true;
  private cancelWhenOpen: string | undefined;
  private abandoned = false;
  private closedError: (() => Error) | undefined;
  /** This process's right to deliver the run (one coordinator per run at a time). */
  private coordinatorLease: CoordinatorLease | undefined;
  private fence: DeliveryFence | undefined;
  /** `coordinatorNote` of a session that re-opened a completed run, stored with its first acknowledgement. */
  private noteOnFirstDelivery: string | undefined;
  /** The run was completed when this session took it (a re-attach, or a re-run that re-opened it). */
  private completedAtOpen = false;
  /** This session acknowledged a Result. */
  private deliveredAny = false;
  /** The enqueuer's run and its follow-up (spec count); never rejects. */
  private enqueuing: Promise<void> = Promise.resolve();
  private readonly onAbort = (): void => this.ending.abortBy(this.plan.signal?.reason);
  /** The run did not exist when this session took its coordinator lease. */
  private madeRun = false;
  /** Leases this session acknowledged, while few enough to hand to retention. */
  private readonly acknowledgedIds = new AcknowledgedLeases();
  private artifactStorer: ArtifactStorer | undefined;
  /** The run's stored runAttemptId once known (made or found by this session). */
  private runAttemptId: string | undefined;
  /** The run's spec count once a streamed draft list was exhausted (set on the record then). */
  private finalSpecCount: number | undefined;
  /** A {@link restoreRecord} in progress. */
  private restoring: Promise<void> | undefined;
  /** This session made the run's record again: Redis lost the run's data while it ran. */
  private recordRestored = false;
  /** Notices Redis going back to an older state (failover, older snapshot) and repairs the run. */
  private readonly rollback: RollbackWatch;
  /** The coordinator lease's retake count when the last reconciliation pass looked. */
  private leaseEpochSeen = 0;

  constructor(private readonly deps: SessionDeps, private readonly plan: SessionPlan) {
    this.runId = plan.runId;
    // Turned-away Results are read again from Redis by a reconciliation pass once there is room.
    this.tracker = new LeaseTracker(deps.maxHeldResults, () => this.reconciler.poke());
    this.reconciler = new RunReconciler({
      runId: plan.runId, redis: deps.redis, bull: deps.queue, keys: deps.keys, store: deps.store, tracker: this.tracker,
      logger: deps.logger, reconcileMs: deps.reconcileMs,
      onHead: (head, floor) => this.noticeHead(head, floor),
      headFloor: () => this.rollback.floor(),
      onOutcome: (leaseId, outcome, head) => this.settle(leaseId, outcome, head),
      deadlines: new LeaseDeadlines({ runId: plan.runId, redis: deps.redis, keys: deps.keys, queue: deps.queue, logger: deps.logger }),
      onVerdict: (result) => this.accept(result),
    });
    this.rollback = new RollbackWatch({
      runId: plan.runId, redis: deps.redis, bull: deps.queue, keys: deps.keys, store: deps.store, logger: deps.logger,
      // Only leases whose add and record returned: one still being added has no job yet.
      keptAwaited: () => {
        const outstanding = new Set(this.tracker.outstanding());
        return (this.enqueuer?.keptAwaited() ?? []).filter((leaseId) => outstanding.has(leaseId));
      },
      readd: (leaseIds) => this.enqueuer?.readd(leaseIds) ?? Promise.resolve(0),
      reacknowledge: async (delivered) => {
        if (this.fence) await this.fence.acknowledge(delivered, () => this.abandoned);
      },
      forgetArtifacts: () => this.artifactStorer?.forget(),
      specCount: () => this.finalSpecCount,
      live: () => !this.abandoned && !this.earlier && !this.ending.begun,
    });
    this.ending = new RunEnding({
      runId: plan.runId, redis: deps.redis, queue: deps.queue, store: deps.store, logger: deps.logger, tracker: this.tracker,
      halt: () => this.enqueuer?.halt(),
      settled: () => this.enqueuer?.settled() ?? Promise.resolve(),
    });
  }

  /** The Results, in completion order; see `RolloutQueue.mapRollouts` for what ends it. */
  async *results(): AsyncGenerator<Result, void, undefined> {
    /** Yielded and taken by the consumer (it came back for more), not yet acknowledged. */
    const taken: Result[] = [];
    /** The Result the consumer holds now (yielded; it has not come back since). */
    let held: Result | undefined;
    const max = this.deps.maxUnacknowledged ?? 1;
    try {
      await this.start();
      for (;;) {
        if (this.closedError) throw this.closedError();
        // The run's endings are read from `this.ending` at each use, never kept across an await:
        // a caller Result accepted during the acknowledgement below begins the stop, and one read
        // before it was yielded as an ordinary Result (fresh-user report: the loop then ended
        // normally, the run stopped in Redis, a draft without a Result).
        const stopNow = (): boolean => {
          const { stop } = this.ending;
          return stop !== undefined && stop.result === null && !(stop.drain && this.tracker.unfinishedCount > 0);
        };
        // Everything taken is acknowledged before the iteration ends or waits, so a Result
        // the consumer has is never left unacknowledged while nothing else happens.
        if (taken.length >= max || this.tracker.readyCount === 0 || this.ending.abort || this.failure || stopNow()) await this.acknowledge(taken.splice(0));
        if (this.ending.abort) throw await this.ended(this.ending.abort);
        if (this.failure) throw this.failure;
        // The fence: deliver only while holding the coordinator lease, and never a lease another
        // coordinator delivered while ours was lost. Nothing awaits between it and the yield.
        if (this.tracker.readyCount > 0 && this.fence && !this.fence.isOpen()) await this.fence.open();
        const result = this.tracker.takeReady();
        if (result) {
          held = result;
          yield result;
          held = undefined;
          taken.push(result);
          const { stop } = this.ending;
          if (stop && stop.result === result) {
            await this.acknowledge(taken.splice(0));
            throw await this.ended(stop);
          }
          continue;
        }
        if (this.ending.stop && stopNow()) throw await this.ended(this.ending.stop);
        if (this.enqueueDone && this.tracker.unfinishedCount === 0) return await this.finish();
        await this.tracker.changed();
      }
    } catch (err) {
      // After close() a Redis call may fail with "Connection is closed": say what really happened.
      throw this.closedError ? this.closedError() : err;
    } finally {
      // The consumer broke out (or threw) holding a Result: it was delivered, like those it took before.
      if (held) taken.push(held);
      await this.afterConsumer(taken.splice(0));
    }
  }

  /**
   * The iterator ends. Results the consumer took (it broke out or threw holding the last one:
   * `rollout()` always returns that way) were delivered: their acknowledgement and what follows
   * (the run's end if that was its last Result) run off the consumer's path ({@link wrapUp}),
   * tracked by the queue (`settled()`, `close()` and a new session of the run wait for them). A
   * process killed before the acknowledgement hands those Results to the run's next session
   * again, as one killed before a batch of taken Results was acknowledged does (at least once
   * towards the consumer, counted once). Else the session ends now.
   */
  private async afterConsumer(unacknowledged: readonly Result[]): Promise<void> {
    if (unacknowledged.length === 0 || this.abandoned) return this.teardown();
    // No live iterator any more: close() waits for the wrap-up instead of abandoning it, and a
    // late abort of the caller's signal must not cancel a delivered run.
    this.plan.signal?.removeEventListener('abort', this.onAbort);
    this.reconciler.stop();
    this.deps.unregister(this);
    this.deps.afterDelivery(this.runId, () => this.wrapUp(unacknowledged));
  }

  /** QueueEvents `completed` of one of this run's jobs (fast path). */
  onCompleted(leaseId: string, returnvalue: unknown): void {
    if (this.tracker.awaits(leaseId)) this.accept(resultFromReturnValue(leaseId, this.runId, returnvalue));
  }

  /** QueueEvents `failed` of one of this run's jobs: read the job's fields, then settle. */
  onFailed(leaseId: string): void {
    if (!this.tracker.awaits(leaseId)) return;
    this.reconciler.check([leaseId]).catch((err: Error) => this.deps.logger.warn({ leaseId, err: err.message }, 'reading a failed job; reconciliation will retry'));
  }

  /** The run was cancelled by `RolloutQueue.cancel` in this process. */
  cancelledElsewhere(reason: string): void {
    // Still opening, it does not know yet whether the run had ended before it: told once it knows.
    if (this.opening) this.cancelWhenOpen = reason;
    else if (!this.earlier) this.ending.cancelledElsewhere(reason);
  }

  /** `close()` of the queue: end at once, acknowledge nothing more; `error()` is what the consumer gets. */
  abandon(error: () => Error): void {
    this.abandoned = true;
    this.closedError = error;
    // Ends a wait for a lost lease too (waitHeld throws once the lease is released).
    void this.coordinatorLease?.release();
    this.enqueuer?.halt();
    this.reconciler.stop();
    this.tracker.notify();
  }

  private async start(): Promise<void> {
    const { store, logger } = this.deps;
    // A wrap-up of this run still holds its coordinator lease: wait for it rather than for the lease.
    await this.deps.wrappedUp(this.runId);
    this.deps.register(this);
    const { signal, drafts } = this.plan;
    if (signal?.aborted) return this.ending.abortBy(signal.reason);
    signal?.addEventListener('abort', this.onAbort, { once: true });
    // A non-empty list has a first draft for sure: its run record is made with the lease, in one
    // round trip (a stream makes it when its first draft arrives, DraftEnqueuer.prepareRun).
    const { runAttemptId, specCount, sourceFingerprint } = this.plan;
    const record: RunCreation = { runAttemptId, specCount, ...(sourceFingerprint !== undefined ? { sourceFingerprint } : {}) };
    const create = Array.isArray(drafts) && drafts.length > 0 ? record : undefined;
    let created: OpenedRun['created'];
    const prepareRun = async (): Promise<string> => (this.runAttemptId = created ? created.runAttemptId : await store.ensureRun(this.runId, record));
    const enqueuer = drafts ? this.enqueuerOf(drafts, prepareRun) : undefined;
    // A new run's first batch is checked and stamped by the same script (one round trip less).
    const opening = create ? await enqueuer?.takeOpening(this.plan.runAttemptId) : undefined;
    const { lease, value: opened } = await CoordinatorLease.acquire(this.deps.redis, this.deps.keys.runCoordinator(this.runId), this.runId, logger, store.opener(this.runId, create, opening));
    created = opened.created;
    this.coordinatorLease = lease;
    this.fence = new DeliveryFence(this.runId, lease, store, this.tracker, logger, () => this.restoreRecord());
    const { head } = opened;
    this.runAttemptId = created?.runAttemptId ?? head?.runAttemptId ?? undefined;
    this.madeRun = !head;
    if (!head && !drafts) {
      throw new RunNotFoundError(this.runId, this.deps.keys.queue, this.deps.keys.prefix, 'check the run id, queue and prefix');
    }
    // Only now, holding the run: a coordinator refused as busy never overwrites the note of the one
    // that delivers. A completed run's note says where its Results went: it changes only once this
    // session delivers one (a re-run that grew the run), not for a session that finds nothing.
    this.completedAtOpen = head?.status === 'completed';
    if (head && !this.completedAtOpen && this.plan.checkPreviousNote) await this.plan.checkPreviousNote(await store.readNote(this.runId));
    if (this.plan.coordinatorNote !== undefined) {
      if (this.completedAtOpen) this.noteOnFirstDelivery = this.plan.coordinatorNote;
      else await store.noteCoordinator(this.runId, this.plan.coordinatorNote);
    }
    if (head) {
      // Known before resumeRun tracks the undelivered leases: a Result accepted meanwhile is an ended
      // run's, never a new stop (CI under load: a drain's Cancelled Result stopped it again).
      this.earlier = endedEarlier(head);
      await resumeRun(this.deps, this.tracker, this.runId, head, opened, drafts !== undefined);
    }
    this.opening = false;
    if (this.cancelWhenOpen !== undefined) this.cancelledElsewhere(this.cancelWhenOpen);
    // A new run has nothing to reconcile before its first job is added: its first pass waits.
    this.reconciler.start(!head);
    if (!enqueuer || this.earlier) {
      this.enqueueDone = true;
      return;
    }
    this.enqueuer = enqueuer;
    this.enqueuing = enqueuer.run(created?.checked).then(async (exhausted) => {
      // specCount becomes the number of distinct leases, which attach compares with what it finds.
      const stored = created?.specCount;
      if (exhausted && enqueuer.prepared) this.finalSpecCount = enqueuer.distinctLeases;
      if (exhausted && enqueuer.prepared && !this.abandoned && stored !== enqueuer.distinctLeases) await store.setSpecCount(this.runId, enqueuer.distinctLeases);
      if (exhausted && enqueuer.deliveredBefore > 0 && !this.abandoned) {
        const error = tellReuse(this.runId, enqueuer, this.deps.logger, this.plan);
        if (error) this.failure ??= error;
      }
      this.enqueueDone ||= exhausted;
      this.tracker.notify();
    }).catch((err: Error) => {
      if (!this.abandoned) this.failure ??= new Error(`run "${this.runId}": enqueuing failed: ${err.message}; the run is resumable: call mapRollouts again with the same runId`, { cause: err });
      this.tracker.notify();
    });
  }

  /** The enqueuer of this session's drafts; `prepareRun` makes (or finds) the run record. */
  private enqueuerOf(drafts: Iterable<unknown> | AsyncIterable<unknown>, prepareRun: () => Promise<string>): DraftEnqueuer {
    const { store, logger } = this.deps;
    return new DraftEnqueuer({
      runId: this.runId, drafts, queue: this.deps.queue, store, tracker: this.tracker, logger, placementFor: this.deps.placementFor,
      maxInFlight: this.deps.maxInFlight, weight: this.deps.fairShare === false ? undefined : this.plan.weight, maxSpecBytes: this.deps.maxSpecBytes, maxTaskBytes: this.deps.maxTaskBytes,
      prepareRun,
      restoreRecord: () => this.restoreRecord(),
      artifacts: (this.artifactStorer = new ArtifactStorer(this.deps.redis, this.deps.keys)),
      evaluations: new EvaluationCache(this.deps.redis, this.deps.keys, this.deps.retainMs),
      onCached: (result) => this.tracker.pushReady(result),
      onRefused: (result) => {
        this.tracker.pushReady(result);
        // A `model` refusal (a bad file the model wrote in rendered.files) never stops the run.
        if (result.kind === 'caller' && this.plan.stopOnCaller && !this.earlier) this.ending.stopAt(result);
      },
    });
  }

  /**
   * Makes the run's record again after a write found it gone: Redis lost it mid-run (restarted
   * without persistence, or flushed). Without a record, what the session went on writing (jobs,
   * lease sets, the delivered set) was never expired by any retention and `status` knew no run;
   * with it, the run completes and expires as any other. The jobs Redis lost are added again
   * once it is made ({@link readdLostJobs}); counts restart (`RUN_FIELDS.restoredAt`).
   * Concurrent callers share one restore.
   */
  private restoreRecord(): Promise<void> {
    this.restoring ??= (async () => {
      const { store, logger } = this.deps;
      logger.warn({ runId: this.runId },
        "the run's record is gone from Redis (restarted without persistence, or flushed): making it again, and adding again the lost jobs whose drafts this coordinator holds; the run's counts in status start again now");
      this.artifactStorer?.forget();
      this.recordRestored = true;
      await store.restoreRun(this.runId, restoredRunOf(this.plan, { runAttemptId: this.runAttemptId, specCount: this.finalSpecCount, earlier: this.earlier }));
    })().finally(() => {
      this.restoring = undefined;
      // Not awaited here: adding jobs again writes the record (recorded), which may restore it again.
      this.readdLostJobs();
    });
    return this.restoring;
  }

  /**
   * After Redis lost the run's data: the jobs of the leases this session added and still awaits
   * are added again from the drafts it kept (`DraftEnqueuer.readd`), so they run instead of
   * ending JobMissing (fresh-user report: 100 of 120 ended JobMissing while a coordinator killed
   * and started again got 120 ok). Surviving jobs are left alone.
   */
  private readdLostJobs(): void {
    const enqueuer = this.enqueuer;
    if (!enqueuer || this.abandoned || this.earlier || this.ending.begun) return;
    enqueuer.readd().then(
      (count) => {
        if (count > 0) this.deps.logger.warn({ runId: this.runId, leases: count }, 'added the jobs of the unfinished leases again (Redis lost the run\'s data; surviving jobs are left as they were)');
      },
      (err: Error) => this.deps.logger.warn({ runId: this.runId, err: err.message }, 'adding lost jobs again failed; those leases end as JobMissing'),
    );
  }

  private accept(result: Result): void {
    if (!this.tracker.finish(result)) return;
    this.rollback.accepted(result.leaseId, this.enqueuer?.indexOf(result.leaseId));
    this.enqueuer?.finished(result.leaseId);
    this.deps.logger.debug({ runId: this.runId, leaseId: result.leaseId, kind: result.kind }, 'result ready');
    if (result.kind === 'caller' && this.plan.stopOnCaller && !this.earlier) this.ending.stopAt(result);
    if (result.kind === 'ok' && !result.cached) {
      this.cacheEvaluation(result).catch((err: Error) => this.deps.logger.warn({ leaseId: result.leaseId, err: err.message }, 'storing the evaluation in the cache failed; it runs again next time'));
    }
    const ceiling = this.deps.costCeilingUsd;
    if (ceiling !== undefined) {
      this.cost.add(result.cost, result.leaseId);
      if (this.cost.totalUsd >= ceiling && !this.earlier) this.ending.stopAtCeiling(this.cost.totalUsd, ceiling);
    }
  }

  /**
   * Stores an `ok` evaluation Result in the evaluation cache. The hash of a lease an earlier
   * session of the run enqueued (this one resumed it: `attach`, or the run again after a crash)
   * is read from its lease record (fresh-user report: an evaluation delivered by `resume` was run
   * and paid for again by the next identical run). A lease of a run this session made is known here.
   */
  private async cacheEvaluation(result: Result): Promise<void> {
    const { queue } = this.deps;
    let hash = this.enqueuer?.evaluationHashOf(result.leaseId) ?? queue.evaluationHashOf(result.leaseId);
    if (hash === undefined && !this.madeRun) {
      await queue.resolve([result.leaseId]);
      hash = queue.evaluationHashOf(result.leaseId);
    }
    if (hash !== undefined) await new EvaluationCache(this.deps.redis, this.deps.keys, this.deps.retainMs).store(hash, result);
  }

  private async settle(leaseId: string, outcome: JobOutcome, head: RunHead | undefined): Promise<void> {
    if (!this.tracker.awaits(leaseId)) return;
    if (outcome.state === 'completed') return this.accept(resultFromReturnValue(leaseId, this.runId, outcome.returnvalue));
    if (outcome.state === 'failed') {
      const result = resultFromFailedJob(leaseId, this.runId, outcome, await redisNowMs(this.deps.redis));
      if (result.error?.type === 'WorkerLost') {
        await this.deps.store.quarantine(this.runId, leaseId, { reason: outcome.failedReason, exitCode: null, signal: null, stderrTail: '' });
      }
      return this.accept(result);
    }
    if (outcome.state === 'missing') {
      // A stopped or cancelled run's waiting jobs were removed on purpose: nothing will answer them.
      const ending = this.ending.begun || this.earlier || (head && head.status !== 'running' && head.status !== 'completed');
      if (ending) this.tracker.forget(leaseId);
      // Redis lost the run's data (its record is gone, or was made again by this session): the
      // job is added again from its kept draft rather than ended (readdLostJobs; the record is
      // made again on the way, by noticeHead or by the add's own record write).
      else if ((!head || this.recordRestored) && this.enqueuer?.keeps(leaseId)) this.readdLostJobs();
      // Redis went back to an older state (a failover, an older snapshot; BR-49): its lease
      // record is gone too although this session recorded it (a job removed by hand keeps it),
      // or a check already found Redis rolled back. Added again from the kept draft.
      else if (this.enqueuer?.keeps(leaseId) && (await this.lostByRollback(leaseId))) {
        void this.rollback.recover(`the job of lease ${leaseId} is gone`);
      } else this.accept(resultForMissingJob(leaseId, this.runId, this.deps.keys.queue, this.enqueuer?.metaOf(leaseId)));
    }
  }

  /** True when the missing job of kept lease `leaseId` was lost by Redis going back to an older state (see `RollbackWatch`). */
  private async lostByRollback(leaseId: string): Promise<boolean> {
    // A check under way (started by this pass's record read) decides first.
    await this.rollback.idle();
    if (this.rollback.rolledBack) return true;
    return !(await this.deps.store.leaseFlags(this.runId, [leaseId])).get(leaseId)?.enqueued;
  }

  /**
   * A status change made by another process (the CLI's cancel, another coordinator's stop); or
   * Redis back at an older state: its delivered set smaller than `floor` (what this session's
   * acknowledgements left before the read), or the coordinator lease found free and retaken.
   */
  private noticeHead(head: RunHead | undefined, floor = 0): void {
    if (this.ending.begun || this.earlier || this.abandoned) return;
    // A record this session made again (Redis came back empty) has its own rule: counts start
    // at its restoredAt (restoreRecord), and the lost jobs are added again there.
    const older = head !== undefined && !this.recordRestored;
    if (older) this.rollback.observe(head.delivered, floor);
    const epoch = this.coordinatorLease?.epoch ?? 0;
    if (older && epoch !== this.leaseEpochSeen) {
      this.leaseEpochSeen = epoch;
      void this.rollback.recover('the coordinator lease was found free and taken again');
    }
    if (!head) {
      // The record existed (this session made or found it): Redis lost it. Made again within a
      // pass (reconcileMs), not at the next write: with every job lost, none may come.
      if (this.runAttemptId !== undefined) void this.restoreRecord().catch((err: Error) => this.deps.logger.warn({ runId: this.runId, err: err.message }, 'making the lost run record again failed; retrying on the next pass'));
      return;
    }
    if (head.status === 'cancelled') this.ending.cancelledElsewhere(head.stopReason ?? 'cancelled by another process');
    else if (head.status === 'stopped') this.ending.stoppedElsewhere(head.stopReason ?? 'no reason recorded');
  }

  private async ended(ending: Ending): Promise<Error> {
    const error = await this.ending.errorOf(ending);
    return this.closedError ? this.closedError() : error;
  }

  /**
   * Acknowledges delivered Results through the fence (see `DeliveryFence.acknowledge`); with
   * `complete`, the same call marks a running run completed.
   * @returns true when it marked the run completed.
   */
  private async acknowledge(results: readonly Result[], complete = false): Promise<boolean> {
    if (this.abandoned || !this.fence || results.length === 0) return false;
    const note = this.noteOnFirstDelivery;
    if (note !== undefined) {
      this.noteOnFirstDelivery = undefined;
      await this.deps.store.noteCoordinator(this.runId, note);
    }
    const { completed, delivered } = await this.fence.acknowledge(results, () => this.abandoned, complete);
    this.rollback.acknowledged(results, delivered);
    this.deliveredAny = true;
    // An abandoned session gave up without acknowledging: it is never retained by this process.
    if (!this.abandoned) this.acknowledgedIds.add(results);
    return completed;
  }

  /** Every lease answered and acknowledged: record the end, or say what is missing. */
  private async finish(): Promise<void> {
    const { store } = this.deps;
    if (this.earlier) {
      // Every Result of the stopped run is delivered now: its retention starts.
      await this.retain();
      throw new RunStoppedError(this.runId, null, `run "${this.runId}" was ${this.earlier.status} earlier (${this.earlier.stopReason ?? 'no reason recorded'}); ` +
        'its remaining Results were delivered and nothing new was enqueued; start a new run id to run its specs again', this.earlier.status === 'cancelled' ? 'cancelled' : 'stopped');
    }
    if (!this.plan.drafts) {
      const [head, known] = await Promise.all([store.readHead(this.runId), store.knownLeases(this.runId)]);
      if (head?.status === 'running' && (head.specCount === null || head.specCount > known)) {
        const missing = head.specCount === null ? 'an unknown number of' : String(head.specCount - known);
        throw new Error(`run "${this.runId}": ${missing} specs were never enqueued (the coordinator stopped while enqueuing); ` +
          'every Result of the enqueued ones was delivered; call mapRollouts again with the same runId and the specs to run the rest');
      }
    }
    await this.retainCompleted(await store.setStatus(this.runId, 'completed', ['running']));
  }

  /** Retains the run once it is completed: marked so now (`changed`), or found so (by another session). */
  private async retainCompleted(changed: boolean): Promise<void> {
    if (!changed && this.completedAtOpen && !this.deliveredAny && (await this.deps.store.hasEnded(this.runId))) {
      // A session that found the run completed and delivered nothing (a re-attach to re-read it)
      // leaves its retention alone: it started when the run ended, and endedAt says when that was.
      return;
    }
    if (changed || (await this.deps.store.readHead(this.runId))?.status === 'completed') await this.retain();
  }

  /**
   * After the consumer took its last Results (off the consumer's path): once the enqueuer of a
   * fully taken draft list finished recording, acknowledges them, and a run with nothing left is
   * marked completed (by the same script call when the session has drafts) and retained; then
   * the session ends (its coordinator lease is released last, so no other coordinator starts the
   * run again before it is marked). A failed acknowledgement ends the session without marking anything.
   */
  private async wrapUp(taken: readonly Result[]): Promise<void> {
    try {
      const finite = Array.isArray(this.plan.drafts) ? this.plan.drafts.length : undefined;
      // Its jobs were added but their leases may still be being recorded: wait, not skip the end.
      if (!this.enqueueDone && this.enqueuer && finite !== undefined && this.enqueuer.pulled >= finite) await this.enqueuing;
      const last = this.enqueueDone && !this.failure && this.tracker.unfinishedCount === 0 && this.tracker.readyCount === 0 && !this.ending.begun;
      // The completion mark rides with the acknowledgement, except where finish() checks more
      // first (a run stopped earlier, attach).
      const complete = last && !this.earlier && this.plan.drafts !== undefined;
      const acknowledged = await this.acknowledge(taken, complete).then((completed) => ({ completed }), (err: Error) => {
        this.deps.logger.warn({ runId: this.runId, leases: taken.length, err: err.message }, 'acknowledge failed; those Results are delivered again by the next session of the run');
        return undefined;
      });
      if (!acknowledged) return;
      if (complete) await this.retainCompleted(acknowledged.completed);
      else if (last) await this.finish();
    } finally {
      await this.teardown();
    }
  }

  private async retain(): Promise<void> {
    const lease = this.coordinatorLease;
    const known = this.knownLeases();
    // With the leases known, the same call also releases the coordinator lease (teardown's release is then a no-op).
    const release = known && lease ? { key: this.deps.keys.runCoordinator(this.runId), token: lease.token } : undefined;
    await applyRetention(this.deps.redis, this.deps.queue, this.deps.keys, this.runId, this.deps.retainMs, known, release);
    if (release) lease?.markReleased();
    // A run of one spec (every rollout() call) says it at debug: a line per call is noise at info.
    const level = this.plan.specCount === 1 ? 'debug' : 'info';
    this.deps.logger[level]({ runId: this.runId, retainMs: this.deps.retainMs }, 'every Result delivered; the run expires from Redis after its retention');
  }

  /**
   * Every lease of the run and its stored artifacts, when this session knows them all: it made
   * the run, no other coordinator can have held it since (its lease was never found free and
   * retaken, `CoordinatorLease.epoch`), and it acknowledged every lease itself (a completed run's
   * leases are all delivered). Else undefined: retention reads them from the run's sets.
   */
  private knownLeases(): { leaseIds: readonly string[]; artifacts: readonly string[] } | undefined {
    const leaseIds = this.acknowledgedIds.all;
    if (!this.madeRun || !leaseIds || this.earlier || this.coordinatorLease?.epoch !== 0 || this.tracker.unfinishedCount > 0) return undefined;
    return { leaseIds, artifacts: this.artifactStorer?.storedArtifacts() ?? [] };
  }

  private async teardown(): Promise<void> {
    // The batch being added is added and recorded before the session ends: a status read after
    // it (the CLI's "N not yet" on Ctrl-C) counts every job, and no other coordinator takes
    // the run while this one still adds to it.
    this.enqueuer?.halt();
    await this.enqueuer?.settled();
    await this.coordinatorLease?.release();
    this.reconciler.stop();
    this.plan.signal?.removeEventListener('abort', this.onAbort);
    await this.ending.settled();
    this.deps.unregister(this);
  }
}
