import type { Logger } from '../platform/logger.js';
import type { DraftEnqueuer } from './draft-enqueuer.js';
import type { RunHead, RunStore } from './run-store.js';
import { restoredRunOf, type SessionPlan } from './session-plan.js';

/** What making a lost run record again needs from its `RunSession`; the functions read the session's state live. */
export interface RunRecordRestorerDeps {
  readonly runId: string;
  readonly store: RunStore;
  readonly logger: Logger;
  /** The session's plan: what the record is made again with (see `restoredRunOf`). */
  readonly plan: SessionPlan;
  /** The run's stored runAttemptId once known (made or found by the session). */
  readonly runAttemptId: () => string | undefined;
  /** The run's spec count once a streamed draft list was exhausted. */
  readonly specCount: () => number | undefined;
  /** The run's head when it was stopped or cancelled before the session began, else undefined. */
  readonly earlier: () => RunHead | undefined;
  /** The session's enqueuer, once it has one (a session with drafts). */
  readonly enqueuer: () => DraftEnqueuer | undefined;
  /** Stored artifacts are lost too: store them again with the next job that names one (`ArtifactStorer.forget`). */
  readonly forgetArtifacts: () => void;
  /** False once the session is ending or over (abandoned, the run ended earlier, or ending): no job is added again then. */
  readonly live: () => boolean;
}

/**
 * Makes a run's record again after Redis lost it mid-run (restarted without persistence, or
 * flushed), and adds again the lost jobs whose drafts the session keeps.
 */
export class RunRecordRestorer {
  /** A {@link restore} in progress. */
  private restoring: Promise<void> | undefined;
  private recordRestored = false;

  constructor(private readonly deps: RunRecordRestorerDeps) {}

  /** This session made the run's record again: Redis lost the run's data while it ran. */
  get restored(): boolean {
    return this.recordRestored;
  }

  /**
   * Makes the run's record again after a write found it gone: Redis lost it mid-run (restarted
   * without persistence, or flushed). Without a record, what the session went on writing (jobs,
   * lease sets, the delivered set) was never expired by any retention and `status` knew no run;
   * with it, the run completes and expires as any other. The jobs Redis lost are added again
   * once it is made ({@link readdLostJobs}); counts restart (`RUN_FIELDS.restoredAt`).
   * Concurrent callers share one restore.
   * @throws the Redis error of `RunStore.restoreRun`.
   */
  restore(): Promise<void> {
    this.restoring ??= (async () => {
      const { runId, store, logger } = this.deps;
      logger.warn({ runId },
        "the run's record is gone from Redis (restarted without persistence, or flushed): making it again, and adding again the lost jobs whose drafts this coordinator holds; the run's counts in status start again now");
      this.deps.forgetArtifacts();
      this.recordRestored = true;
      await store.restoreRun(runId, restoredRunOf(this.deps.plan, { runAttemptId: this.deps.runAttemptId(), specCount: this.deps.specCount(), earlier: this.deps.earlier() }));
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
   * and started again got 120 ok). Surviving jobs are left alone. Never throws: a failure is logged.
   */
  readdLostJobs(): void {
    const enqueuer = this.deps.enqueuer();
    if (!enqueuer || !this.deps.live()) return;
    const { runId, logger } = this.deps;
    enqueuer.readd().then(
      (count) => {
        if (count > 0) logger.warn({ runId, leases: count }, 'added the jobs of the unfinished leases again (Redis lost the run\'s data; surviving jobs are left as they were)');
      },
      (err: Error) => logger.warn({ runId, err: err.message }, 'adding lost jobs again failed; those leases end as JobMissing'),
    );
  }
}
