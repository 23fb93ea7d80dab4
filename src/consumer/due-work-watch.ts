/** How often the liveness check samples the queue (and the worker refreshes its info for `status`), ms. */
export const LIVENESS_SAMPLE_MS = 5_000;

/** TTL of the worker's info key (`keys.workerInfo`), ms: a few missed refreshes and it is gone. */
export const WORKER_INFO_TTL_MS = 6 * LIVENESS_SAMPLE_MS;

/**
 * The liveness check's memory: since when work has been due here (waiting jobs and a free slot,
 * as the last sample saw) and when this worker last started a rollout. Work due for long with no
 * start is the mark of a consumer stuck on a dead blocking connection (bullmq#4479, #4585).
 */
export class DueWorkWatch {
  private lastStartAt = Date.now();
  private dueSince: number | undefined;

  /** A rollout started here. */
  rolloutStarted(): void {
    this.lastStartAt = Date.now();
  }

  /** A liveness sample: `due` when jobs wait, a slot is free and the worker runs. */
  sample(due: boolean): void {
    if (due) this.dueSince ??= Date.now();
    else this.dueSince = undefined;
  }

  /** Why the worker looks stuck: work due for `livenessMs` or more with no start; undefined when it does not. */
  stuckReason(livenessMs: number): string | undefined {
    const now = Date.now();
    if (this.dueSince !== undefined && now - this.dueSince >= livenessMs && now - this.lastStartAt >= livenessMs) {
      return `work due for ${now - this.dueSince} ms with free slots and no rollout started`;
    }
    return undefined;
  }
}
