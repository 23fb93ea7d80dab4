import { CoordinatorLease } from './coordinator-lease.js';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { Result } from '../spec/index.js';
import { ArtifactStorer } from './artifact-storer.js';
import { DeliveryFence } from './delivery-fence.js';
import { DraftEnqueuer } from './draft-enqueuer.js';
import { EvaluationCache } from './evaluation-cache.js';
import type { PlacementQueues } from './placement-queues.js';
import type { PlacementFor } from './producer-options.js';
import { LeaseDeadlines } from './lease-deadlines.js';
import { LeaseTracker } from './lease-tracker.js';
import { LeaseOutcomes } from './lease-outcomes.js';
import { resultFromReturnValue } from './result-from-job.js';
import { RunEnding, type Ending } from './run-ending.js';
import { RunReconciler } from './run-reconciler.js';
import { RollbackWatch } from './rollback-watch.js';
import { RunCompletion } from './run-completion.js';
import { RunRecordRestorer } from './run-record-restorer.js';
import { RunHeadWatch } from './run-head-watch.js';
import { ResultAcknowledger } from './result-acknowledger.js';
import { endedEarlier, resumeRun, tellReuse } from './resume-run.js';
import { RunNotFoundError } from './run-not-found-error.js';
import type { OpenedRun, RunCreation, RunHead, RunStore } from './run-store.js';
import type { SessionPlan } from './session-plan.js';

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
  /** The run was completed when this session took it (a re-attach, or a re-run that re-opened it). */
  private completedAtOpen = false;
  /** The enqueuer's run and its follow-up (spec count); never rejects. */
  private enqueuing: Promise<void> = Promise.resolve();
  private readonly onAbort = (): void => this.ending.abortBy(this.plan.signal?.reason);
  /** The run did not exist when this session took its coordinator lease. */
  private madeRun = false;
  private artifactStorer: ArtifactStorer | undefined;
  /** The run's stored runAttemptId once known (made or found by this session). */
  private runAttemptId: string | undefined;
  /** The run's spec count once a streamed draft list was exhausted (set on the record then). */
  private finalSpecCount: number | undefined;
  /** Notices Redis going back to an older state (failover, older snapshot) and repairs the run. */
  private readonly rollback: RollbackWatch;
  /** Makes the run's record again when Redis lost it, and adds the lost jobs again. */
  private readonly restorer: RunRecordRestorer;
  /** Reads what each reconciliation pass's head read says (another process's stop, a rollback, a lost record). */
  private readonly headWatch: RunHeadWatch;
  /** Acknowledges delivered Results through the fence, and remembers what it acknowledged. */
  private readonly acks: ResultAcknowledger;
  /** Turns the run's job outcomes into Results. */
  private readonly outcomes: LeaseOutcomes;
  /** Records the end of a fully delivered run and starts its retention. */
  private readonly completion: RunCompletion;
  /** False once the session is ending or over: nothing is added again then. */
  private readonly live = (): boolean => !this.abandoned && !this.earlier && !this.ending.begun;

  constructor(private readonly deps: SessionDeps, private readonly plan: SessionPlan) {
    this.runId = plan.runId;
    // Turned-away Results are read again from Redis by a reconciliation pass once there is room.
    this.tracker = new LeaseTracker(deps.maxHeldResults, () => this.reconciler.poke());
    this.reconciler = new RunReconciler({
      runId: plan.runId, redis: deps.redis, bull: deps.queue, keys: deps.keys, store: deps.store, tracker: this.tracker,
      logger: deps.logger, reconcileMs: deps.reconcileMs,
      onHead: (head, floor) => this.headWatch.notice(head, floor),
      headFloor: () => this.rollback.floor(),
      onOutcome: (leaseId, outcome, head) => this.outcomes.settle(leaseId, outcome, head),
      deadlines: new LeaseDeadlines({ runId: plan.runId, redis: deps.redis, keys: deps.keys, queue: deps.queue, logger: deps.logger }),
      onVerdict: (result) => this.outcomes.accept(result),
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
      live: this.live,
    });
    this.ending = new RunEnding({
      runId: plan.runId, redis: deps.redis, queue: deps.queue, store: deps.store, logger: deps.logger, tracker: this.tracker,
      halt: () => this.enqueuer?.halt(),
      settled: () => this.enqueuer?.settled() ?? Promise.resolve(),
    });
    const enqueuer = (): DraftEnqueuer | undefined => this.enqueuer;
    const earlier = (): RunHead | undefined => this.earlier;
    const madeRun = (): boolean => this.madeRun;
    this.restorer = new RunRecordRestorer({
      runId: plan.runId, store: deps.store, logger: deps.logger, plan, enqueuer, earlier, live: this.live,
      runAttemptId: () => this.runAttemptId, specCount: () => this.finalSpecCount, forgetArtifacts: () => this.artifactStorer?.forget(),
    });
    this.acks = new ResultAcknowledger({
      runId: plan.runId, store: deps.store, rollback: this.rollback, fence: () => this.fence, abandoned: () => this.abandoned,
    });
    this.headWatch = new RunHeadWatch({
      runId: plan.runId, logger: deps.logger, ending: this.ending, rollback: this.rollback, restorer: this.restorer, live: this.live,
      coordinatorLease: () => this.coordinatorLease, runAttemptId: () => this.runAttemptId,
    });
    this.outcomes = new LeaseOutcomes({
      runId: plan.runId, redis: deps.redis, queue: deps.queue, keys: deps.keys, store: deps.store, logger: deps.logger, retainMs: deps.retainMs,
      costCeilingUsd: deps.costCeilingUsd, stopOnCaller: plan.stopOnCaller, tracker: this.tracker, rollback: this.rollback, ending: this.ending,
      enqueuer, earlier, madeRun, recordRestored: () => this.restorer.restored, readdLostJobs: () => this.restorer.readdLostJobs(),
    });
    this.completion = new RunCompletion({
      runId: plan.runId, redis: deps.redis, queue: deps.queue, keys: deps.keys, store: deps.store, logger: deps.logger, retainMs: deps.retainMs,
      plan, tracker: this.tracker, earlier, madeRun,
      completedAtOpen: () => this.completedAtOpen, deliveredAny: () => this.acks.deliveredAny, acknowledgedLeaseIds: () => this.acks.leaseIds,
      coordinatorLease: () => this.coordinatorLease, storedArtifacts: () => this.artifactStorer?.storedArtifacts() ?? [],
      ending: this.ending, enqueuer, enqueueDone: () => this.enqueueDone, enqueuing: () => this.enqueuing, failure: () => this.failure,
      acknowledge: (results, complete) => this.acks.acknowledge(results, complete), teardown: () => this.teardown(),
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
        if (taken.length >= max || this.tracker.readyCount === 0 || this.ending.abort || this.failure || stopNow()) await this.acks.acknowledge(taken.splice(0));
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
            await this.acks.acknowledge(taken.splice(0));
            throw await this.ended(stop);
          }
          continue;
        }
        if (this.ending.stop && stopNow()) throw await this.ended(this.ending.stop);
        if (this.enqueueDone && this.tracker.unfinishedCount === 0) return await this.completion.finish();
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
   * (the run's end if that was its last Result) run off the consumer's path (`RunCompletion.wrapUp`),
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
    this.deps.afterDelivery(this.runId, () => this.completion.wrapUp(unacknowledged));
  }

  /** QueueEvents `completed` of one of this run's jobs (fast path). */
  onCompleted(leaseId: string, returnvalue: unknown): void {
    if (this.tracker.awaits(leaseId)) this.outcomes.accept(resultFromReturnValue(leaseId, this.runId, returnvalue));
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
    this.fence = new DeliveryFence(this.runId, lease, store, this.tracker, logger, () => this.restorer.restore());
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
      if (this.completedAtOpen) this.acks.noteOnFirstDelivery = this.plan.coordinatorNote;
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
      restoreRecord: () => this.restorer.restore(),
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

  private async ended(ending: Ending): Promise<Error> {
    const error = await this.ending.errorOf(ending);
    return this.closedError ? this.closedError() : error;
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
