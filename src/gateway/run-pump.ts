import type { Logger } from '../platform/logger.js';
import { AbortError, RunStoppedError, type RolloutDraft, type RolloutQueue } from '../producer/index.js';
import type { RunLog } from './run-log.js';

/**
 * Drives one run of the runs API in the background: `mapRollouts(drafts, { runId })`, each
 * Result appended to the run's log before the producer is asked for the next one (which
 * acknowledges it), so a Result is listed exactly once across gateway restarts. The end is
 * recorded as the log's state: `completed`, `stopped` (a caller Result stopped it), `cancelled`,
 * or `failed` (enqueuing failed; posting the run again resumes it). A pump ended by the
 * gateway's own shutdown records nothing: the run stays `running` and resumes when posted again.
 */
export class RunPump {
  private stopping = false;
  readonly done: Promise<void>;

  constructor(rq: RolloutQueue, log: RunLog, logger: Logger, readonly runId: string, drafts: readonly RolloutDraft[]) {
    this.done = (async () => {
      await log.setState(runId, 'running');
      try {
        for await (const result of rq.mapRollouts(drafts, { runId })) await log.append(runId, result);
        await log.setState(runId, 'completed');
      } catch (err) {
        if (this.stopping) return;
        if (err instanceof RunStoppedError) await log.setState(runId, 'stopped', err.message);
        else if (err instanceof AbortError) await log.setState(runId, 'cancelled', err.message);
        else {
          logger.warn({ runId, err: (err as Error).message }, 'run of the runs API failed; posting it again resumes it');
          await log.setState(runId, 'failed', (err as Error).message).catch(() => undefined);
        }
      }
    })();
  }

  /** The gateway is closing: whatever the iterator throws now is not the run's end. */
  stop(): void {
    this.stopping = true;
  }
}
