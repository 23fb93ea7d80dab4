/**
 * Thrown by `RolloutWorker.create` when its `signal` aborted before the worker ran (the CLI's
 * first SIGTERM or SIGINT while the start waited for Redis). Everything the start opened
 * (connections, rollout children) is closed before it is thrown; no lease was taken.
 */
export class WorkerStartAborted extends Error {
  /** @param reason the signal's `reason` (the CLI passes the signal's name). */
  constructor(readonly reason: unknown) {
    super(`worker start aborted (${reason instanceof Error ? reason.message : String(reason)}) before the worker ran; nothing was taken from the queue`);
    this.name = 'WorkerStartAborted';
  }
}
