import { enqueuedAtOption, ROLLOUT_JOB_NAME } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import { withoutDefaults, type Result, type RolloutSpecInput } from '../spec/index.js';
import type { ArtifactStorer } from './artifact-storer.js';
import { callerResult } from './caller-result.js';
import { DraftSource } from './draft-source.js';
import { evaluationHash, type EvaluationCache } from './evaluation-cache.js';
import type { LeaseTracker } from './lease-tracker.js';
import type { PlacementQueues } from './placement-queues.js';
import { withPlacementFor } from './placement-for.js';
import type { PlacementFor } from './producer-options.js';
import { SecretScan } from './find-leaked-secret.js';
import { prepareDraft, type PreparedDraft } from './rollout-draft.js';
import type { RunStore } from './run-store.js';

/** What the enqueuer needs from its session. */
export interface EnqueuerDeps {
  readonly runId: string;
  /** Adds jobs, each to the queue of its placement and class. */
  readonly queue: Pick<PlacementQueues, 'addBulk'>;
  readonly store: RunStore;
  /** Labels for a draft whose spec names no placement (producer option `placementFor`). */
  readonly placementFor?: PlacementFor | undefined;
  readonly tracker: LeaseTracker;
  readonly logger: Logger;
  readonly maxInFlight: number;
  readonly maxSpecBytes: number;
  readonly maxTaskBytes: number;
  /** Creates (or finds) the run record on the first draft; resolves to the run's runAttemptId. */
  readonly prepareRun: () => Promise<string>;
  /** Receives the caller Result of a refused draft (the session decides whether to stop). */
  readonly onRefused: (result: Result) => void;
  /** Turns a spec into job data (a large artifact stored once, referenced by hash). */
  readonly artifacts: ArtifactStorer;
  /** Answers repeated evaluations without a job. */
  readonly evaluations?: EvaluationCache | undefined;
  /** Receives the cached answer of an evaluation (never enqueued). */
  readonly onCached?: (result: Result) => void;
}

type ValidDraft = Extract<PreparedDraft, { ok: true }>;

/** A prepared draft and its 0-based position in the caller's list (the lease's score in `runLeases`). */
interface Positioned<D extends PreparedDraft = PreparedDraft> {
  readonly draft: D;
  readonly index: number;
}

/** A lease's id and coordinator-side deadlines, as its enqueue clock records them. */
const leaseClock = (draft: ValidDraft): { leaseId: string; scheduleToStartMs: number | undefined; scheduleToCloseMs: number | undefined } => ({
  leaseId: draft.leaseId, scheduleToStartMs: draft.spec.timeouts.scheduleToStartMs, scheduleToCloseMs: draft.spec.timeouts.scheduleToCloseMs,
});

/**
 * Most drafts checked and added per round trip. Bounds the Lua scripts' argument lists and the
 * time Redis spends in one script, while cutting round trips per draft by ~100×.
 */
export const MAX_BATCH = 100;

/** Free slots a refill waits for: a tenth of `maxInFlight`, 1 to MAX_BATCH. */
const refillBatch = (maxInFlight: number): number => Math.max(1, Math.min(MAX_BATCH, Math.floor(maxInFlight / 10)));

/**
 * Enqueues drafts in batches, each draft as one BullMQ job (`jobId` = lease id, `attempts: 1`,
 * results kept in Redis: no removeOnComplete/removeOnFail), never holding more than
 * `maxInFlight` of the run's jobs unfinished. A batch is the next draft plus those the source
 * has ready at once ({@link DraftSource}), at most `min(free slots, MAX_BATCH)`: a draft is
 * pulled only when there is room to enqueue it, and a slow source is never waited on for more.
 *
 * Per batch: one script reads which leases are enqueued or delivered already (and stamps the
 * enqueue clock of those about to be added), one `addBulk`
 * adds the new jobs, one script records their leases in `runLeases` (ZADD NX). The job is
 * added before its lease is recorded, so a coordinator killed in between resumes cleanly
 * (BullMQ ignores an add whose jobId exists). A lease already recorded is never added again
 * (a job removed since must not come back) and counts in `alreadyEnqueued`.
 */
export class DraftEnqueuer {
  private stopped = false;
  private inFlight: Promise<unknown> = Promise.resolve();
  private runAttemptId: string | undefined;
  private pulledCount = 0;
  /** Distinct leases seen in this call (enqueued, already enqueued or refused). */
  private readonly seen = new Set<string>();
  /** Content hash of each evaluation lease enqueued in this call (its ok Result is cached under it). */
  private readonly evalHashes = new Map<string, string>();

  constructor(private readonly deps: EnqueuerDeps) {}

  /** Number of distinct leases in the draft list, known once {@link run} returned true. */
  get distinctLeases(): number {
    return this.seen.size;
  }

  /** Drafts taken from the source so far (a finite list is all taken when this equals its length). */
  get pulled(): number {
    return this.pulledCount;
  }

  /** The evaluation-cache hash of a lease this call enqueued as an evaluation, else undefined. */
  evaluationHashOf(leaseId: string): string | undefined {
    return this.evalHashes.get(leaseId);
  }

  /** True once the run record exists (the first draft was read). */
  get prepared(): boolean {
    return this.runAttemptId !== undefined;
  }

  /** Stops after the current batch's add; nothing more is pulled or enqueued. */
  halt(): void {
    this.stopped = true;
    this.deps.tracker.notify();
  }

  /** Resolves once no `addBulk` of this enqueuer is in flight (call after {@link halt}). */
  async settled(): Promise<void> {
    await this.inFlight.catch(() => undefined);
  }

  /**
   * Enqueues every draft. Resolves true when the drafts were exhausted, false when halted.
   * @throws whatever the draft source throws, or a Redis error from enqueuing (the run stays resumable).
   */
  async run(drafts: Iterable<unknown> | AsyncIterable<unknown>): Promise<boolean> {
    const { tracker, maxInFlight, runId, maxSpecBytes, maxTaskBytes } = this.deps;
    const source = new DraftSource(drafts);
    let exhausted = false;
    try {
      for (let index = 0; !this.stopped; ) {
        const first = await source.next();
        if (first.done) return (exhausted = true);
        if (this.stopped) break;
        this.runAttemptId ??= await this.deps.prepareRun();
        // Refill in batches (up to MAX_BATCH): wait for a tenth of maxInFlight to free up rather
        // than one add per finished lease. Below maxInFlight the first batch goes out at once.
        const lowWater = index === 0 ? maxInFlight : maxInFlight - refillBatch(maxInFlight);
        while (!this.stopped && tracker.unfinishedCount > Math.min(lowWater, maxInFlight - 1)) await tracker.changed();
        if (this.stopped) break;
        const room = Math.min(maxInFlight - tracker.unfinishedCount, MAX_BATCH);
        const values = [first.value, ...(await source.takeReady(room - 1))];
        if (this.stopped) break;
        const runAttemptId = this.runAttemptId;
        // One secret scan per batch: every read of process.env crosses into the runtime, and
        // the secret-looking variables are the same for every draft of the batch.
        const secrets = new SecretScan();
        const batch = values.map((value, i) => ({ draft: withPlacementFor(prepareDraft(value, { runId, runAttemptId, index: index + i, maxSpecBytes, maxTaskBytes, secrets }), this.deps.placementFor), index: index + i }));
        index += values.length;
        this.pulledCount = index;
        await this.enqueue(batch);
      }
      return false;
    } finally {
      // Let a generator source run its own cleanup when we stop early.
      if (!exhausted) await source.close();
    }
  }

  /**
   * Sorts a batch, in draft order, into refused, repeated, already enqueued and new leases, and
   * adds the new ones. The jobs of the drafts before a refused one are added before the refusal
   * is reported: a stop it causes then waits for them and removes them (as when drafts went one
   * at a time), and nothing after it is added.
   */
  private async enqueue(batch: readonly Positioned[]): Promise<void> {
    const { runId, store, logger } = this.deps;
    const first = new Map<string, PreparedDraft>();
    for (const { draft } of batch) if (!this.seen.has(draft.leaseId) && !first.has(draft.leaseId)) first.set(draft.leaseId, draft);
    // The enqueue clock rides along with the flags check: every valid draft seen first here
    // that the evaluation cache cannot answer (those are stamped once known fresh). One this
    // batch then does not add (a stop halted it) keeps a stamp, as after a crash before addBulk.
    const cached = this.deps.evaluations !== undefined && this.deps.onCached !== undefined;
    const stamp = [...first.values()].filter((draft): draft is ValidDraft => draft.ok && !(cached && draft.spec.class === 'evaluation')).map(leaseClock);
    const { flags, stampedAt } = await store.checkAndStamp(runId, [...first.keys()], stamp);
    const stamped = new Set(stamp.map(({ leaseId }) => leaseId));
    let fresh: Positioned<ValidDraft>[] = [];
    let already = 0;
    for (const { draft, index } of batch) {
      if (this.stopped) break;
      const { leaseId } = draft;
      const repeated = this.seen.has(leaseId);
      this.seen.add(leaseId);
      if (!draft.ok) {
        // A refused draft of a resumed run was answered before: never yield it twice.
        if (repeated || flags.get(leaseId)?.delivered) continue;
        await this.add(fresh, stamped, stampedAt);
        fresh = [];
        if (this.stopped) break;
        logger.warn({ runId, leaseId, type: draft.error.type }, `draft refused, not enqueued: ${draft.error.message}`);
        this.deps.onRefused(callerResult(leaseId, runId, draft.taskId, draft.error.type, draft.error.message));
      } else if (repeated) {
        already++;
        logger.warn({ runId, leaseId }, 'draft repeats a lease id of this call: already enqueued, it gets one job and one Result; give each task a distinct taskKey or task.id');
      } else if (flags.get(leaseId)?.enqueued) {
        already++;
        logger.debug({ runId, leaseId }, 'lease already enqueued (resumed run): not added again');
      } else {
        fresh.push({ draft, index });
      }
    }
    fresh = await this.answerCached(fresh, flags);
    await Promise.all([this.add(fresh, stamped, stampedAt), already > 0 ? store.countAlreadyEnqueued(runId, already) : undefined]);
  }

  /**
   * Takes the evaluations the cache answers out of `fresh` (their cached Result is handed to
   * `onCached`; a lease answered so before, on a resumed run, is skipped), and remembers the hash
   * of the other evaluations.
   */
  private async answerCached(fresh: Positioned<ValidDraft>[], flags: Map<string, { delivered?: boolean }>): Promise<Positioned<ValidDraft>[]> {
    const { evaluations, onCached, runId } = this.deps;
    if (!evaluations || !onCached) return fresh;
    const evals = fresh.filter(({ draft }) => draft.spec.class === 'evaluation').map(({ draft }) => ({ leaseId: draft.leaseId, taskId: draft.taskId, runId, hash: evaluationHash(draft.spec) }));
    if (evals.length === 0) return fresh;
    const hits = await evaluations.lookup(evals, new Date().toISOString());
    for (const { leaseId, hash } of evals) if (!hits.has(leaseId)) this.evalHashes.set(leaseId, hash);
    const rest: Positioned<ValidDraft>[] = [];
    for (const item of fresh) {
      const hit = hits.get(item.draft.leaseId);
      if (!hit) rest.push(item);
      else if (!flags.get(item.draft.leaseId)?.delivered) onCached(hit);
    }
    return rest;
  }

  /**
   * Adds jobs unless halted; {@link settled} waits for it. Leases in `stamped` had their enqueue
   * clock written at `stampedAt` by the batch's check; the others are stamped here first.
   */
  private async add(drafts: readonly Positioned<ValidDraft>[], stamped: ReadonlySet<string>, stampedAt: number): Promise<void> {
    if (drafts.length === 0 || this.stopped) return;
    for (const { draft } of drafts) this.deps.tracker.track(draft.leaseId, 'adding');
    this.inFlight = this.addJobs(drafts, stamped, stampedAt);
    await this.inFlight;
  }

  private async addJobs(drafts: readonly Positioned<ValidDraft>[], stamped: ReadonlySet<string>, stampedAt: number): Promise<void> {
    const { queue, store, tracker, runId } = this.deps;
    try {
      const data: RolloutSpecInput[] = [];
      for (const { draft } of drafts) data.push(withoutDefaults(await this.deps.artifacts.jobData(draft.spec)));
      const leases = drafts.map(({ draft, index }) => ({ ...leaseClock(draft), index }));
      const unstamped = leases.filter(({ leaseId }) => !stamped.has(leaseId));
      const lateAt = unstamped.length > 0 ? await store.stampEnqueued(runId, unstamped) : stampedAt;
      const enqueuedAt = (leaseId: string): number => (stamped.has(leaseId) ? stampedAt : lateAt);
      await queue.addBulk(drafts.map(({ draft }, i) => ({ name: ROLLOUT_JOB_NAME, data: data[i] as RolloutSpecInput, opts: { jobId: draft.leaseId, attempts: 1, ...enqueuedAtOption(enqueuedAt(draft.leaseId)) } })));
      await store.recordLeases(runId, leases);
      for (const { draft } of drafts) tracker.confirm(draft.leaseId);
    } catch (err) {
      for (const { draft } of drafts) tracker.forget(draft.leaseId);
      throw err;
    }
  }
}
