import type { Logger } from '../platform/logger.js';
import { AbortError, RunStoppedError, stoppedAtText, type RolloutDraft, type RolloutQueue } from '../producer/index.js';
import type { RunLog } from './run-log.js';

/**
 * The end line's error of a run a caller Result stopped, with the fix an HTTP client has (the
 * producer's own text advises `stopOnCaller`, a library option: fresh-user report).
 */
function stoppedText(err: RunStoppedError): string {
  if (!err.result) return err.message;
  return `${stoppedAtText(err.result)} No further drafts were enqueued and its waiting jobs were removed; fix the draft or its Ref and post the drafts under a new runId`;
}

/**
 * Drives one run of the runs API in the background: `mapRollouts(drafts, { runId })`, each
 * Result appended to the run's log before the producer is asked for the next one (which
 * acknowledges it), so a Result is listed exactly once across gateway restarts. The end is
 * recorded as the log's state: `completed`, `stopped` (a caller Result stopped it), `cancelled`,
 * or `failed` (enqueuing failed; posting the run again resumes it). A stopped or cancelled run's
 * rollouts that were running go on to their Results: those are listed too, through
 * `attach(runId)`, which also starts the run's retention, before the end is recorded (as the
 * CLI's `resume` does). A pump ended by the gateway's own shutdown records nothing: the run
 * stays `running` and resumes when posted again.
 */
export class RunPump {
  private stopping = false;
  readonly done: Promise<void>;

  /** @param weight the run's fair-share weight (`MapRolloutsOptions.weight`), checked by the route. */
  constructor(rq: RolloutQueue, log: RunLog, logger: Logger, readonly runId: string, drafts: readonly RolloutDraft[], weight?: number) {
    this.done = (async () => {
      await log.setState(runId, 'running');
      try {
        for await (const result of rq.mapRollouts(drafts, { runId, ...(weight !== undefined ? { weight } : {}) })) await log.append(runId, result);
        await log.setState(runId, 'completed');
      } catch (err) {
        if (this.stopping) return;
        if (err instanceof RunStoppedError || err instanceof AbortError) {
          // Fresh-user report: the stream ended without the rollouts still running, and the run never expired.
          await this.drain(rq, log, logger);
          if (this.stopping) return;
          await log.setState(runId, err instanceof RunStoppedError ? 'stopped' : 'cancelled', err instanceof RunStoppedError ? stoppedText(err) : err.message);
        } else {
          logger.warn({ runId, err: (err as Error).message }, 'run of the runs API failed; posting it again resumes it');
          await log.setState(runId, 'failed', (err as Error).message).catch(() => undefined);
        }
      }
    })();
  }

  /**
   * Lists the Results of a stopped or cancelled run still to come (its running rollouts): a
   * session of the ended run delivers them, then throws `RunStoppedError` (the run ended
   * earlier), its expected end. Another error is logged: posting the run again lists the rest.
   */
  private async drain(rq: RolloutQueue, log: RunLog, logger: Logger): Promise<void> {
    try {
      for await (const result of rq.attach(this.runId)) await log.append(this.runId, result);
    } catch (err) {
      if (!(err instanceof RunStoppedError) && !this.stopping) logger.warn({ runId: this.runId, err: (err as Error).message }, 'collecting the running rollouts of an ended run failed; posting the run again lists them');
    }
  }

  /** The gateway is closing: whatever the iterator throws now is not the run's end. */
  stop(): void {
    this.stopping = true;
  }
}
