/**
 * Thrown by `mapRollouts` / `attach` when the run was cancelled: through the caller's
 * `AbortSignal`, or by `RolloutQueue.cancel` (possibly from another process, e.g. the CLI).
 * `name` is `"AbortError"`, like the DOM's, so `err.name === 'AbortError'` checks work.
 * `cause` holds `signal.reason` when there was one.
 */
export class AbortError extends Error {
  readonly runId: string;

  constructor(runId: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AbortError';
    this.runId = runId;
  }
}
