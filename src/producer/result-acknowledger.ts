import type { Result } from '../spec/index.js';
import { AcknowledgedLeases } from './acknowledged-leases.js';
import type { DeliveryFence } from './delivery-fence.js';
import type { RollbackWatch } from './rollback-watch.js';
import type { RunStore } from './run-store.js';

/** What acknowledging delivered Results needs from its `RunSession`; the functions read the session's state live. */
export interface ResultAcknowledgerDeps {
  readonly runId: string;
  readonly store: RunStore;
  /** Told of each acknowledgement (`RollbackWatch.acknowledged`). */
  readonly rollback: Pick<RollbackWatch, 'acknowledged'>;
  /** The session's delivery fence, once it holds the coordinator lease. */
  readonly fence: () => DeliveryFence | undefined;
  /** The session was abandoned (`close()`): nothing more is acknowledged. */
  readonly abandoned: () => boolean;
}

/**
 * Acknowledges the Results a `RunSession` delivered, through its `DeliveryFence`, and remembers
 * what it acknowledged for the run's end (`RunCompletion`): whether anything was, and which leases
 * while few enough to hand to retention.
 */
export class ResultAcknowledger {
  /** `coordinatorNote` of a session that re-opened a completed run, stored with its first acknowledgement. */
  noteOnFirstDelivery: string | undefined;
  private delivered = false;
  /** Leases this session acknowledged, while few enough to hand to retention. */
  private readonly acknowledgedIds = new AcknowledgedLeases();

  constructor(private readonly deps: ResultAcknowledgerDeps) {}

  /** This session acknowledged a Result. */
  get deliveredAny(): boolean {
    return this.delivered;
  }

  /** Every lease this session acknowledged, in order; undefined once too many (`AcknowledgedLeases.all`). */
  get leaseIds(): readonly string[] | undefined {
    return this.acknowledgedIds.all;
  }

  /**
   * Acknowledges delivered Results through the fence (see `DeliveryFence.acknowledge`); with
   * `complete`, the same call marks a running run completed. Nothing is acknowledged by an
   * abandoned session, before the fence exists, or for no Results.
   * @returns true when it marked the run completed.
   * @throws the Redis error of the coordinator note or of the acknowledgement.
   */
  async acknowledge(results: readonly Result[], complete = false): Promise<boolean> {
    // The fence is made once, when the session takes the coordinator lease.
    const fence = this.deps.fence();
    if (this.deps.abandoned() || !fence || results.length === 0) return false;
    const note = this.noteOnFirstDelivery;
    if (note !== undefined) {
      this.noteOnFirstDelivery = undefined;
      await this.deps.store.noteCoordinator(this.deps.runId, note);
    }
    const { completed, delivered } = await fence.acknowledge(results, () => this.deps.abandoned(), complete);
    this.deps.rollback.acknowledged(results, delivered);
    this.delivered = true;
    // An abandoned session gave up without acknowledging: it is never retained by this process.
    if (!this.deps.abandoned()) this.acknowledgedIds.add(results);
    return completed;
  }
}
