import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { ResultKind } from '../spec/index.js';
import { readJobOutcomes, type BullKeys } from './read-job-outcomes.js';
import type { LeaseToRecord, RunStore } from './run-store.js';

/** A Result this session acknowledged, as much of it as repairing the run's record needs. */
interface Delivered {
  readonly kind: ResultKind;
  /** The lease's position in the draft list (its `runLeases` score), when this session enqueued it. */
  readonly index: number | undefined;
}

/** What the watch needs from its session. */
export interface RollbackWatchDeps {
  readonly runId: string;
  readonly redis: Redis;
  readonly bull: BullKeys;
  readonly keys: QueueKeys;
  readonly store: RunStore;
  readonly logger: Logger;
  /** Lease ids whose drafts the session keeps and whose Result it still awaits (`DraftEnqueuer.keptAwaited`). */
  readonly keptAwaited: () => readonly string[];
  /** Adds again, from the kept drafts, the jobs of these kept leases still awaited; surviving jobs are left alone (`DraftEnqueuer.readd`). */
  readonly readd: (leaseIds: ReadonlySet<string>) => Promise<number>;
  /**
   * Marks leases delivered again in the run's record (fenced by the coordinator lease, as any
   * acknowledgement; counted once per lease): the session's `DeliveryFence.acknowledge`.
   */
  readonly reacknowledge: (delivered: readonly { readonly leaseId: string; readonly kind: ResultKind }[]) => Promise<void>;
  /** Stored artifacts may be lost too: store them again with the next job that names one (`ArtifactStorer.forget`). */
  readonly forgetArtifacts: () => void;
  /** The spec count this session knows (set on the record again when a rollback lost it), else undefined. */
  readonly specCount: () => number | undefined;
  /** False once the session is ending or over: nothing is added again then. */
  readonly live: () => boolean;
}

/** Leases read per `leaseFlags` round trip of a check (one script call each). */
const CHECK_BATCH = 1000;

/**
 * Notices that Redis lost writes this coordinator made, and repairs what it can from what it
 * knows (issue 33 item 3, case BR-49). A failover to a replica that lagged, a restart from an
 * older snapshot, or AOF `everysec` after a crash take Redis back to an older state with the run
 * record still there (unlike a restart without persistence, where it is gone: the session's
 * `RunRecordRestorer.restore`): finished jobs back in wait/active, jobs added since gone, acknowledgements
 * and counts rewound, the coordinator lease key expired or older.
 *
 * Signs, each cheap: the run's delivered set smaller than this session last saw it
 * ({@link observe}, every reconciliation pass; the set only grows while a run lives); a missing
 * job whose lease is no longer in `runLeases` although this session recorded it (a job added
 * after the snapshot; one removed by hand keeps its lease record); the coordinator lease found
 * free and retaken. On any of them, {@link recover} compares: leases this session delivered
 * that Redis no longer has as delivered are acknowledged again (so `status` counts and a later
 * resume agree with what was delivered; nothing is delivered again: the session's tracker never
 * awaits a delivered lease), and every kept lease whose job is gone is added again from its
 * draft. One warning says what was lost; a check that finds nothing logs nothing.
 *
 * Memory: about 100 bytes per delivered lease of the session (its id and kind), for the life of
 * the session.
 */
export class RollbackWatch {
  private readonly delivered = new Map<string, Delivered>();
  /** Index of accepted, not yet acknowledged leases this session enqueued. */
  private readonly acceptedIndex = new Map<string, number>();
  /** Size of the run's delivered set after this session's latest acknowledgement. */
  private deliveredSeen = 0;
  private recovering: Promise<void> | undefined;
  private again: string | undefined;
  private rolledBackValue = false;
  /** The one warning of a rollback was logged; later repairs of the same say so at info. */
  private warned = false;

  constructor(private readonly deps: RollbackWatchDeps) {}

  /**
   * True once a check found Redis went back to an older state. From then on a kept lease whose
   * job is missing is added again even when its lease record survived: a write in flight
   * across the failover (the lease's record) can land on the new primary after its job's add
   * was lost with the old one.
   */
  get rolledBack(): boolean {
    return this.rolledBackValue;
  }

  /** Resolves once no check is running (never rejects). */
  async idle(): Promise<void> {
    while (this.recovering) await this.recovering;
  }

  /** The lease's Result was accepted; `index` is its draft position when this session enqueued it. */
  accepted(leaseId: string, index: number | undefined): void {
    if (index !== undefined) this.acceptedIndex.set(leaseId, index);
  }

  /**
   * Results were acknowledged; `deliveredCount` is the run's delivered set size the
   * acknowledging script saw after adding them.
   */
  acknowledged(results: readonly { readonly leaseId: string; readonly kind: ResultKind }[], deliveredCount: number | undefined): void {
    const records: LeaseToRecord[] = [];
    for (const { leaseId, kind } of results) {
      const index = this.acceptedIndex.get(leaseId);
      this.delivered.set(leaseId, { kind, index });
      this.acceptedIndex.delete(leaseId);
      if (index !== undefined) records.push({ leaseId, index });
    }
    if (deliveredCount !== undefined) this.deliveredSeen = Math.max(this.deliveredSeen, deliveredCount);
    // After a rollback a lease added before it may finish after it, its lease record lost with
    // the older state: recorded again (ZADD NX: nothing for one that survived), so `enqueued`
    // and retention know it.
    if (this.rolledBackValue && records.length > 0) {
      const { store, runId, logger } = this.deps;
      store.recordLeases(runId, records, true).catch((err: Error) => logger.warn({ runId, err: err.message }, 'recording delivered leases again after a rollback failed; status may count fewer enqueued'));
    }
  }

  /**
   * What the run's delivered set held at least, by this session's acknowledgements: take it
   * *before* reading the set, and compare with {@link observe}.
   */
  floor(): number {
    return this.deliveredSeen;
  }

  /**
   * A read of the run's delivered set size (`RunHead.delivered`), and the {@link floor} taken
   * before that read: smaller means Redis went back to an older state.
   */
  observe(delivered: number | undefined, floor: number): void {
    if (delivered !== undefined && delivered < floor) void this.recover(`the run's delivered set holds ${delivered} leases, ${floor} before`);
  }

  /**
   * Compares what this session knows with Redis and repairs it (see the class). Calls made while
   * one runs are folded into one more run after it. Never rejects: a failure is logged and the
   * next sign tries again.
   * @param sign what was noticed, for the warning.
   */
  recover(sign: string): Promise<void> {
    if (this.recovering) {
      this.again = sign;
      return this.recovering;
    }
    this.recovering = this.check(sign)
      .catch((err: Error) => this.deps.logger.warn({ runId: this.deps.runId, err: err.message }, 'checking what Redis lost failed; the next reconciliation pass checks again'))
      .finally(() => {
        this.recovering = undefined;
        const again = this.again;
        this.again = undefined;
        if (again !== undefined) void this.recover(again);
      });
    return this.recovering;
  }

  private async check(sign: string): Promise<void> {
    const { runId, store, redis, bull, keys, logger } = this.deps;
    // Delivered by this session, no longer known as delivered by Redis; and those of them this
    // session enqueued whose lease record is gone (delivered after the older state was made,
    // or acknowledged again just now: either way `enqueued` lost them).
    const ids = [...this.delivered.keys()];
    const forgotten: string[] = [];
    const records: LeaseToRecord[] = [];
    for (let i = 0; i < ids.length; i += CHECK_BATCH) {
      const batch = ids.slice(i, i + CHECK_BATCH);
      const flags = await store.leaseFlags(runId, batch);
      for (const leaseId of batch) {
        const flag = flags.get(leaseId);
        if (!flag?.delivered) forgotten.push(leaseId);
        const { index } = this.delivered.get(leaseId) as Delivered;
        if (!flag?.enqueued && index !== undefined) records.push({ leaseId, index });
      }
    }
    // Kept leases whose job is gone. One whose lease record is gone too was lost by Redis (a job
    // removed by hand keeps its lease record, and ends JobMissing as before); once Redis is known
    // to have gone back ({@link rolledBack}), every kept lease whose job is gone is added again.
    const kept = this.deps.live() ? this.deps.keptAwaited() : [];
    const outcomes = kept.length > 0 ? await readJobOutcomes(redis, bull, keys, kept) : new Map();
    const missing = kept.filter((leaseId) => outcomes.get(leaseId)?.state === 'missing');
    const flags = await store.leaseFlags(runId, missing);
    const unrecorded = missing.filter((leaseId) => !flags.get(leaseId)?.enqueued);
    // Not a sign on its own: a lease may be delivered before its batch's record write returned.
    if (!this.rolledBackValue && forgotten.length === 0 && unrecorded.length === 0) records.length = 0;
    if ((forgotten.length > 0 || unrecorded.length > 0) && !this.rolledBackValue) {
      this.rolledBackValue = true;
      // Acknowledged while this check read (a Map keeps insertion order): from now on
      // `acknowledged` records them again itself; these fell in between.
      for (const leaseId of [...this.delivered.keys()].slice(ids.length)) {
        const { index } = this.delivered.get(leaseId) as Delivered;
        if (index !== undefined) records.push({ leaseId, index });
      }
    }
    const gone = this.rolledBackValue ? missing : [];
    if (forgotten.length === 0 && gone.length === 0 && records.length === 0) return;

    // Of the forgotten ones, those whose job is back in wait/active may run again.
    const rerun = forgotten.length > 0 ? [...(await readJobOutcomes(redis, bull, keys, forgotten)).values()].filter((outcome) => outcome.state === 'unfinished').length : 0;
    if (gone.length > 0) {
      this.deps.forgetArtifacts();
      await this.deps.readd(new Set(gone));
    }
    // Recorded again (stamped: their enqueue clock is history; counted in `enqueued` once), then
    // marked delivered again, each counted once.
    if (records.length > 0) await store.recordLeases(runId, records, true);
    if (forgotten.length > 0) {
      await this.deps.reacknowledge(forgotten.map((leaseId) => ({ leaseId, kind: (this.delivered.get(leaseId) as Delivered).kind })));
    }
    const specCount = this.deps.specCount();
    if (specCount !== undefined) await store.setSpecCount(runId, specCount);
    const fields = { runId, sign, forgottenDelivered: forgotten.length, jobsAddedAgain: gone.length, mayRunAgain: rerun, recordedAgain: records.length };
    if (this.warned) {
      logger.info(fields, 'repaired more of what Redis lost in the rollback reported above');
      return;
    }
    this.warned = true;
    logger.warn(
      fields,
      `Redis lost writes of this run (it went back to an older state: a failover to a replica that lagged, or a restart from an older snapshot or AOF): ` +
        `${forgotten.length} delivered Results it no longer knew were marked delivered again (status counts repaired; none is delivered again` +
        `${rerun > 0 ? `, though ${rerun} of their jobs are back in the queue and may run again` : ''}), ` +
        `and ${gone.length} jobs it lost were added again from the drafts this coordinator holds`,
    );
  }
}
