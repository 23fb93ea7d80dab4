import type { RolloutSpec } from '../spec/index.js';

/** Runs remembered as cancelled, for starts that skip the ledger (oldest forgotten first). */
const MAX_CANCELLED_RUNS = 1000;

/**
 * Runs this worker saw cancelled (pub/sub or run record), newest last: run id → the runAttemptId
 * its record named then, or null when it had no record (then every attempt of the id is
 * cancelled). Bounded: the oldest is forgotten past {@link MAX_CANCELLED_RUNS}.
 */
export class CancelledRuns {
  private readonly runs = new Map<string, string | null>();

  /** Remembers the cancel of `runId`, of the attempt `runAttemptId` only (null: every attempt). */
  remember(runId: string, runAttemptId: string | null): void {
    this.runs.delete(runId);
    this.runs.set(runId, runAttemptId);
    if (this.runs.size > MAX_CANCELLED_RUNS) this.runs.delete(this.runs.keys().next().value as string);
  }

  /** This worker heard the cancel of the spec's run attempt. */
  heard(spec: RolloutSpec): boolean {
    const attempt = this.runs.get(spec.runId);
    return attempt !== undefined && (attempt === null || attempt === spec.runAttemptId);
  }
}
