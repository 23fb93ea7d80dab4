import type { Logger } from '../platform/logger.js';
import type { CoordinatorLease } from './coordinator-lease.js';
import type { RollbackWatch } from './rollback-watch.js';
import type { RunEnding } from './run-ending.js';
import type { RunRecordRestorer } from './run-record-restorer.js';
import type { RunHead } from './run-store.js';

/** What reading the run's head needs from its `RunSession`; the functions read the session's state live. */
export interface RunHeadWatchDeps {
  readonly runId: string;
  readonly logger: Logger;
  /** Ends the run when another process stopped or cancelled it. */
  readonly ending: Pick<RunEnding, 'cancelledElsewhere' | 'stoppedElsewhere'>;
  readonly rollback: Pick<RollbackWatch, 'observe' | 'recover'>;
  readonly restorer: Pick<RunRecordRestorer, 'restored' | 'restore'>;
  /** The session's coordinator lease, once taken (its `epoch` counts retakes). */
  readonly coordinatorLease: () => CoordinatorLease | undefined;
  /** The run's stored runAttemptId once known (made or found by the session). */
  readonly runAttemptId: () => string | undefined;
  /** False once the session is ending or over (abandoned, the run ended earlier, or ending): nothing is noticed then. */
  readonly live: () => boolean;
}

/**
 * What each reconciliation pass's read of the run's head (`RunReconciler`'s `onHead`) tells a
 * live session: the run stopped or cancelled by another process, Redis back at an older state
 * (`RollbackWatch`), or the run's record gone (`RunRecordRestorer`).
 */
export class RunHeadWatch {
  /** The coordinator lease's retake count when the last reconciliation pass looked. */
  private leaseEpochSeen = 0;

  constructor(private readonly deps: RunHeadWatchDeps) {}

  /**
   * A status change made by another process (the CLI's cancel, another coordinator's stop); or
   * Redis back at an older state: its delivered set smaller than `floor` (what this session's
   * acknowledgements left before the read), or the coordinator lease found free and retaken.
   * `head` undefined: the run's record is gone. Never throws: a failed restore is logged.
   */
  notice(head: RunHead | undefined, floor = 0): void {
    const { runId, logger, ending, rollback, restorer } = this.deps;
    if (!this.deps.live()) return;
    // A record this session made again (Redis came back empty) has its own rule: counts start
    // at its restoredAt (RunRecordRestorer.restore), and the lost jobs are added again there.
    const older = head !== undefined && !restorer.restored;
    if (older) rollback.observe(head.delivered, floor);
    const epoch = this.deps.coordinatorLease()?.epoch ?? 0;
    if (older && epoch !== this.leaseEpochSeen) {
      this.leaseEpochSeen = epoch;
      void rollback.recover('the coordinator lease was found free and taken again');
    }
    if (!head) {
      // The record existed (this session made or found it): Redis lost it. Made again within a
      // pass (reconcileMs), not at the next write: with every job lost, none may come.
      if (this.deps.runAttemptId() !== undefined) void restorer.restore().catch((err: Error) => logger.warn({ runId, err: err.message }, 'making the lost run record again failed; retrying on the next pass'));
      return;
    }
    if (head.status === 'cancelled') ending.cancelledElsewhere(head.stopReason ?? 'cancelled by another process');
    else if (head.status === 'stopped') ending.stoppedElsewhere(head.stopReason ?? 'no reason recorded');
  }
}
