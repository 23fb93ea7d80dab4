import { enqueuedAtOption, ROLLOUT_JOB_NAME } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import { withoutDefaults, type Result, type RolloutSpecInput } from '../spec/index.js';
import type { ArtifactStorer } from './artifact-storer.js';
import { callerResult } from './caller-result.js';
import { producerResult } from './producer-result.js';
import { withMeta } from './result-meta.js';
import { DraftSource } from './draft-source.js';
import { evaluationHash, type EvaluationCache } from './evaluation-cache.js';
import type { LeaseTracker } from './lease-tracker.js';
import type { PlacementQueues } from './placement-queues.js';
import { withPlacementFor } from './placement-for.js';
import type { PlacementFor } from './producer-options.js';
import { SecretScan } from './find-leaked-secret.js';
import { prepareDraft } from './rollout-draft.js';
import { batchCheckOf, leaseClock, MAX_BATCH, refillBatch, repeatRefusal, type OpeningBatch, type Positioned, type ValidDraft } from './draft-batch.js';
import { NO_RECORD, type BatchCheck, type CheckedBatch, type RunStore } from './run-store.js';

/** What the enqueuer needs from its session. */
export interface EnqueuerDeps {
  readonly runId: string;
  /** The caller's drafts (sync or async). */
  readonly drafts: Iterable<unknown> | AsyncIterable<unknown>;
  /** Adds jobs, each to the queue of its placement and class. */
  readonly queue: Pick<PlacementQueues, 'addBulk'>;
  readonly store: RunStore;
  /** Labels for a draft whose spec names no placement (producer option `placementFor`). */
  readonly placementFor?: PlacementFor | undefined;
  readonly tracker: LeaseTracker;
  readonly logger: Logger;
  readonly maxInFlight: number;
  /** The run's fair-share weight (`MapRolloutsOptions.weight`, checked): its jobs' BullMQ priorities come from it; undefined: no priorities (`ProducerOptions.fairShare` false). */
  readonly weight: number | undefined;
  readonly maxSpecBytes: number;
  readonly maxTaskBytes: number;
  /** Creates (or finds) the run record on the first draft; resolves to the run's runAttemptId. */
  readonly prepareRun: () => Promise<string>;
  /** Makes the run's record again after a write found it gone (see `NO_RECORD`); the session's `RunRecordRestorer.restore`. */
  readonly restoreRecord: () => Promise<void>;
  /** Receives the Result of a refused draft: `caller`, or `model` for a bad file inside `rendered.files` (the session decides whether to stop). */
  readonly onRefused: (result: Result) => void;
  /** Turns a spec into job data (a large artifact stored once, referenced by hash). */
  readonly artifacts: ArtifactStorer;
  /** Answers repeated evaluations without a job. */
  readonly evaluations?: EvaluationCache | undefined;
  /** Receives the cached answer of an evaluation (never enqueued). */
  readonly onCached?: (result: Result) => void;
}

/** Most drafts checked and added per round trip (defined in draft-batch.ts). */
export { MAX_BATCH } from './draft-batch.js';

/**
 * Enqueues drafts in batches, each draft as one BullMQ job (`jobId` = lease id, `attempts: 1`,
 * results kept in Redis: no removeOnComplete/removeOnFail), never holding more than
 * `maxInFlight` of the run's jobs unfinished. A batch is the next draft plus those the source
 * has ready at once ({@link DraftSource}), at most `min(free slots, MAX_BATCH)`: a draft is
 * pulled only when there is room to enqueue it, and a slow source is never waited on for more.
 *
 * Per batch: one script reads which leases are enqueued or delivered already (and stamps the
 * enqueue clock of those about to be added; for a new run's first batch, the session's opening
 * script does, {@link takeOpening}), one `addBulk` (`add` for one job)
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
  /** Leases of this call's drafts that the run delivered before this call (neither run nor yielded again). */
  private deliveredBeforeCount = 0;
  /** Lease ids named by the drafts prepared in this call, so a repeat is told apart ({@link prepare}). */
  private readonly named = new Set<string>();
  /** Content hash of each evaluation lease enqueued in this call (its ok Result is cached under it). */
  private readonly evalHashes = new Map<string, string>();
  private readonly source: DraftSource;
  private opening: OpeningBatch | undefined;
  /**
   * Drafts of the leases this enqueuer added whose Result is not in yet (at most about
   * `maxInFlight`): what {@link readd} adds again after Redis lost their jobs.
   */
  private readonly kept = new Map<string, Positioned<ValidDraft>>();
  private readding: Promise<number> | undefined;

  constructor(private readonly deps: EnqueuerDeps) {
    this.source = new DraftSource(deps.drafts);
  }

  /** Number of distinct leases in the draft list, known once {@link run} returned true. */
  get distinctLeases(): number {
    return this.seen.size;
  }

  /**
   * Leases of this call's drafts whose Result the run delivered before this call began (a run id
   * used again): they are neither run nor yielded again, even if their drafts changed.
   */
  get deliveredBefore(): number {
    return this.deliveredBeforeCount;
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
   * Takes the first batch of the drafts (as many as a new run has room for) and prepares it as a
   * new run's, with `runAttemptId`, before the session's opening script ran, so that script
   * checks and stamps it in its own round trip when the run is new (`RunStore.opener`). {@link run}
   * then enqueues it with what the script read; when the run existed (nothing read), those drafts
   * go back to the source and are prepared again as the run's own.
   * @returns the batch's check, or undefined when there are no drafts.
   * @throws whatever the draft source throws.
   */
  async takeOpening(runAttemptId: string): Promise<BatchCheck | undefined> {
    const first = await this.source.next();
    if (first.done) return undefined;
    const values = [first.value, ...(await this.source.takeReady(Math.min(this.deps.maxInFlight, MAX_BATCH) - 1))];
    const batch = this.prepare(values, 0, runAttemptId);
    this.opening = { values, batch, runAttemptId, check: batchCheckOf(batch, this.answersCached) };
    return this.opening.check;
  }

  /**
   * Enqueues every draft. Resolves true when the drafts were exhausted, false when halted.
   * @param opened what the session's opening script read of the batch {@link takeOpening} took (a new run).
   * @throws whatever the draft source throws, or a Redis error from enqueuing (the run stays resumable).
   */
  async run(opened?: CheckedBatch): Promise<boolean> {
    const { tracker, maxInFlight, runId, store } = this.deps;
    const source = this.source;
    let exhausted = false;
    try {
      let index = 0;
      const opening = this.opening;
      this.opening = undefined;
      if (opening && opened) {
        if (this.stopped) return false;
        this.runAttemptId = opening.runAttemptId;
        index = this.pulledCount = opening.values.length;
        await this.enqueue(opening.batch, opening.check, opened);
      } else if (opening) {
        source.putBack(opening.values);
        this.named.clear(); // prepared again, as the run's own
      }
      while (!this.stopped) {
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
        const batch = this.prepare(values, index, this.runAttemptId);
        index += values.length;
        this.pulledCount = index;
        const check = batchCheckOf(batch, this.answersCached);
        await this.enqueue(batch, check, await this.recorded(() => store.checkAndStamp(runId, check)));
      }
      return false;
    } finally {
      // Let a generator source run its own cleanup when we stop early.
      if (!exhausted) await source.close();
    }
  }

  /** Validates drafts taken from the source (`index`: the first one's position in the caller's list). */
  private prepare(values: readonly unknown[], index: number, runAttemptId: string): Positioned[] {
    const { runId, maxSpecBytes, maxTaskBytes } = this.deps;
    // One secret scan per batch: every read of process.env crosses into the runtime, and
    // the secret-looking variables are the same for every draft of the batch.
    const secrets = new SecretScan();
    return values.map((value, i) => {
      const prepared = prepareDraft(value, { runId, runAttemptId, index: index + i, maxSpecBytes, maxTaskBytes, secrets });
      const draft = this.named.has(prepared.leaseId) ? repeatRefusal(runId, prepared, index + i) : withPlacementFor(prepared, this.deps.placementFor);
      this.named.add(draft.leaseId);
      return { draft, index: index + i };
    });
  }

  /** The evaluation cache answers evaluations of this call: their leases are stamped once known fresh. */
  private get answersCached(): boolean {
    return this.deps.evaluations !== undefined && this.deps.onCached !== undefined;
  }

  /**
   * Sorts a batch, in draft order, into refused, already enqueued and new leases, and
   * adds the new ones. The jobs of the drafts before a refused one are added before the refusal
   * is reported: a stop it causes then waits for them and removes them (as when drafts went one
   * at a time), and nothing after it is added.
   */
  private async enqueue(batch: readonly Positioned[], check: BatchCheck, { flags, stampedAt }: CheckedBatch): Promise<void> {
    const { runId, store, logger } = this.deps;
    // The check stamps only leases it found neither enqueued nor delivered; addJobs stamps the others it adds.
    const stamped = new Set<string>();
    for (const { leaseId } of check.stamp) {
      const known = flags.get(leaseId);
      if (!known?.enqueued && !known?.delivered) stamped.add(leaseId);
    }
    let fresh: Positioned<ValidDraft>[] = [];
    let already = 0;
    for (const { draft, index } of batch) {
      if (this.stopped) break;
      const { leaseId } = draft;
      this.seen.add(leaseId);
      if (flags.get(leaseId)?.delivered) this.deliveredBeforeCount++;
      if (!draft.ok) {
        // A refused draft of a resumed run was answered before: never yield it twice.
        if (flags.get(leaseId)?.delivered) continue;
        await this.add(fresh, stamped, stampedAt);
        fresh = [];
        if (this.stopped) break;
        logger.warn({ runId, leaseId, type: draft.error.type }, `draft refused, not enqueued: ${draft.error.message}`);
        const refusal = draft.kind === 'model'
          ? producerResult('model', leaseId, runId, draft.taskId, draft.error.type, draft.error.message)
          : callerResult(leaseId, runId, draft.taskId, draft.error.type, draft.error.message);
        this.deps.onRefused(withMeta({ ...refusal, finishedAt: store.nowIso() }, draft.meta));
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
  private async answerCached(fresh: Positioned<ValidDraft>[], flags: ReadonlyMap<string, { readonly delivered: boolean }>): Promise<Positioned<ValidDraft>[]> {
    const { evaluations, onCached, runId } = this.deps;
    if (!evaluations || !onCached) return fresh;
    const evals = fresh.filter(({ draft }) => draft.spec.class === 'evaluation').map(({ draft }) => ({ leaseId: draft.leaseId, taskId: draft.taskId, runId, hash: evaluationHash(draft.spec), meta: draft.spec.meta }));
    if (evals.length === 0) return fresh;
    const hits = await evaluations.lookup(evals, this.deps.store.nowIso());
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

  /**
   * A write of the run's bookkeeping; where it found the run's record gone (`NO_RECORD`), the
   * session makes the record again and the write is made once more. `drafts` whose jobs may have
   * been added meanwhile get their artifacts stored again: what was stored before Redis lost it
   * is gone, and a job naming it would find nothing.
   * @throws Error when the record is gone again at once (something keeps deleting the run's keys).
   */
  private async recorded<T>(write: () => Promise<T | typeof NO_RECORD>, drafts: readonly Positioned<ValidDraft>[] = []): Promise<T> {
    const first = await write();
    if (first !== NO_RECORD) return first;
    await this.deps.restoreRecord();
    for (const { draft } of drafts) await this.deps.artifacts.jobData(draft.spec);
    const again = await write();
    if (again === NO_RECORD) throw new Error(`the run's record was deleted from Redis again right after it was made again (a purge or FLUSHDB while the run was enqueuing)`);
    return again;
  }

  private async addJobs(drafts: readonly Positioned<ValidDraft>[], stamped: ReadonlySet<string>, stampedAt: number): Promise<void> {
    const { tracker } = this.deps;
    try {
      await this.addAndRecord(drafts, stamped, stampedAt);
      for (const { draft } of drafts) tracker.confirm(draft.leaseId);
    } catch (err) {
      for (const { draft } of drafts) {
        tracker.forget(draft.leaseId);
        this.kept.delete(draft.leaseId);
      }
      throw err;
    }
  }

  /**
   * Stamps (those not in `stamped`), adds and records the jobs of `drafts`, keeping each draft
   * until its Result is in ({@link finished}). Adding a job whose id exists is a no-op in BullMQ
   * (`addJob` returns the existing id), which makes {@link readd} safe for jobs that survived.
   */
  private async addAndRecord(drafts: readonly Positioned<ValidDraft>[], stamped: ReadonlySet<string>, stampedAt: number): Promise<void> {
    const { queue, store, runId } = this.deps;
    const data: RolloutSpecInput[] = [];
    for (const { draft } of drafts) data.push(withoutDefaults(await this.deps.artifacts.jobData(draft.spec)));
    const leases = drafts.map(({ draft, index }) => ({ ...leaseClock(draft), index }));
    const unstamped = leases.filter(({ leaseId }) => !stamped.has(leaseId));
    const lateAt = unstamped.length > 0 ? await this.recorded(() => store.stampEnqueued(runId, unstamped), drafts) : stampedAt;
    const enqueuedAt = (leaseId: string): number => (stamped.has(leaseId) ? stampedAt : lateAt);
    // Kept before the add: a Result cannot come before its job exists, so `finished` always follows.
    for (const positioned of drafts) this.kept.set(positioned.draft.leaseId, positioned);
    await queue.addBulk(drafts.map(({ draft }, i) => ({
      name: ROLLOUT_JOB_NAME,
      data: data[i] as RolloutSpecInput,
      opts: { jobId: draft.leaseId, attempts: 1, ...enqueuedAtOption(enqueuedAt(draft.leaseId)) },
      evalHash: this.evalHashes.get(draft.leaseId),
    })), this.deps.weight === undefined ? undefined : { runId, weight: this.deps.weight });
    // Every lease was stamped above (by the batch's check or stampEnqueued), before its job existed.
    await this.recorded(() => store.recordLeases(runId, leases, true), drafts);
  }

  /** True while this enqueuer keeps the draft of `leaseId` (it added it; its Result is not in). */
  keeps(leaseId: string): boolean {
    return this.kept.has(leaseId);
  }

  /** The draft position (its `runLeases` score) of a kept lease, else undefined. */
  indexOf(leaseId: string): number | undefined {
    return this.kept.get(leaseId)?.index;
  }

  /** Kept leases whose Result is still awaited: those {@link readd} would add again. */
  keptAwaited(): string[] {
    return [...this.kept.keys()].filter((leaseId) => this.deps.tracker.awaits(leaseId));
  }

  /** The `meta` of a kept lease's draft (undefined when it has none or is not kept): for a Result the producer writes. */
  metaOf(leaseId: string): unknown {
    return this.kept.get(leaseId)?.draft.spec.meta;
  }

  /** The Result of `leaseId` is in: its draft is no longer kept. */
  finished(leaseId: string): void {
    this.kept.delete(leaseId);
  }

  /**
   * Adds again the job of every kept lease still awaited, after Redis lost the run's data
   * (restarted without persistence): a lease whose job Redis lost runs again instead of ending
   * JobMissing; a job that survived is left alone (see {@link addAndRecord}). Calls made while
   * one runs share it.
   * @param only just these leases (of those kept and awaited); default all.
   * @returns how many leases were added again (surviving ones included).
   */
  readd(only?: ReadonlySet<string>): Promise<number> {
    this.readding ??= (async () => {
      const drafts = [...this.kept.values()].filter(({ draft }) => this.deps.tracker.awaits(draft.leaseId) && (!only || only.has(draft.leaseId)));
      if (drafts.length > 0 && !this.stopped) await this.addAndRecord(drafts, new Set(), 0);
      return drafts.length;
    })().finally(() => {
      this.readding = undefined;
    });
    return this.readding;
  }
}
