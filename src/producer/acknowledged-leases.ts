import type { Result } from '../spec/index.js';

/**
 * Most leases a session remembers acknowledging, so that retention of a run it made and
 * delivered whole need not read them back (`applyRetention`'s `known`): one script call's worth.
 */
export const KNOWN_LEASES_MAX = 500;

/**
 * The leases one `RunSession` acknowledged, while at most {@link KNOWN_LEASES_MAX}: past that it
 * forgets them all (retention then reads the run's sets), so a big run costs no memory here.
 */
export class AcknowledgedLeases {
  private leaseIds: string[] | undefined = [];

  /** Remembers the leases of `results`, or forgets every lease once they would pass the bound. */
  add(results: readonly Pick<Result, 'leaseId'>[]): void {
    if (!this.leaseIds) return;
    if (this.leaseIds.length + results.length > KNOWN_LEASES_MAX) this.leaseIds = undefined;
    else for (const result of results) this.leaseIds.push(result.leaseId);
  }

  /** Every lease acknowledged, in order; undefined once there were more than {@link KNOWN_LEASES_MAX}. */
  get all(): readonly string[] | undefined {
    return this.leaseIds;
  }
}
