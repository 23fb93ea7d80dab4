/**
 * No run of that id on the queue (never made, gone past its retention, or lost by a Redis that
 * restarted without persistence): thrown by `attach`, `cancel` and `purge`, so a caller can tell
 * it from a Redis failure with `instanceof` (fresh-user report: `attach` threw a plain Error, and
 * the class that `purge` threw was not exported). Nothing was changed.
 */
export class RunNotFoundError extends Error {
  /**
   * @param runId the id asked for.
   * @param queue the queue looked in, and `prefix` its key prefix.
   * @param consequence what the call did instead, one clause ("nothing to purge (…)").
   */
  constructor(readonly runId: string, readonly queue: string, readonly prefix: string, consequence: string) {
    super(`no run "${runId}" on queue "${queue}" (prefix "${prefix}"); ${consequence}`);
    this.name = 'RunNotFoundError';
  }
}
