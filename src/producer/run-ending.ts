import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';
import type { Result } from '../spec/index.js';
import { AbortError } from './abort-error.js';
import { cancelRun } from './cancel-run.js';
import type { LeaseTracker } from './lease-tracker.js';
import { removeWaitingJobs } from './remove-waiting-jobs.js';
import { RunStoppedError } from './run-stopped-error.js';
import type { RunStore } from './run-store.js';
import type { RemovableQueue } from './remove-waiting-jobs.js';

/**
 * An early end decided while Results may still be queued: the Result that caused it (if any),
 * its Redis work, and what to throw (`error`, unless the work found a better explanation).
 */
export interface Ending {
  readonly result: Result | null;
  readonly error: Error;
  readonly work: Promise<Error | undefined>;
  /** Running leases still deliver their Results before the error is thrown (the cost ceiling). */
  readonly drain?: boolean;
}

/** What ending a run needs from its session. */
export interface RunEndingDeps {
  readonly runId: string;
  readonly redis: Redis;
  /** The base queue and its placement queues (waiting jobs are removed from each). */
  readonly queue: RemovableQueue;
  readonly store: RunStore;
  readonly logger: Logger;
  readonly tracker: LeaseTracker;
  /** Stops the enqueuer (nothing more is pulled or added). */
  readonly halt: () => void;
  /** Resolves once no add of the enqueuer is in flight. */
  readonly settled: () => Promise<void>;
}

/**
 * How a live run ends early, and the Redis work each way needs. The order is always: halt the
 * enqueuer, wait for its in-flight add (else a job could land after the clean-up), then record
 * and clean up. At most one stop and one abort are begun; later causes are ignored.
 */
export class RunEnding {
  stop: Ending | undefined;
  abort: Ending | undefined;

  constructor(private readonly deps: RunEndingDeps) {}

  /** True once the run is ending one way or another. */
  get begun(): boolean {
    return this.stop !== undefined || this.abort !== undefined;
  }

  /** A caller Result with `stopOnCaller`: status `stopped`, waiting jobs removed. */
  stopAt(result: Result): void {
    if (this.begun) return;
    const { runId, store, logger } = this.deps;
    const reason = `caller Result of lease ${result.leaseId}: ${result.error?.type ?? 'caller'}: ${result.error?.message ?? ''}`.slice(0, 2000);
    this.stop = {
      result,
      error: RunStoppedError.fromResult(result),
      work: this.afterHalt(async () => {
        const stopped = await store.setStatus(runId, 'stopped', ['running'], reason);
        await this.removeWaiting();
        if (!stopped) {
          // Someone cancelled the run first (its rollouts then answer "Cancelled"): that is what ended it.
          const head = await store.readHead(runId);
          if (head?.status === 'cancelled') return this.cancelledError(head.stopReason ?? 'cancelled by another process');
        }
        // info, not warn: the caller gets the same words as RunStoppedError (the CLI printed them twice).
        logger.info({ runId, leaseId: result.leaseId }, `run stopped: ${reason}`);
        return undefined;
      }),
    };
  }

  /**
   * The run's cost reached `costCeilingUsd`: status `stopped`, nothing more enqueued, waiting
   * jobs removed; leases already running finish and are delivered before the error.
   */
  stopAtCeiling(totalUsd: number, ceilingUsd: number): void {
    if (this.begun) return;
    const { runId, store, logger } = this.deps;
    const reason = `cost ceiling reached: $${totalUsd.toFixed(4)} of costCeilingUsd $${ceilingUsd}`;
    const message = `run "${runId}" stopped: ${reason}. No new leases were dispatched and its waiting jobs were removed; running ones finished and were delivered. ` +
      'Raise costCeilingUsd (run --cost-ceiling-usd) and run the same run id again to run the rest';
    this.stop = {
      result: null,
      drain: true,
      error: new RunStoppedError(runId, null, message),
      work: this.afterHalt(async () => {
        await store.setStatus(runId, 'stopped', ['running'], reason);
        await this.removeWaiting();
        logger.warn({ runId, totalUsd, ceilingUsd }, `run stopped: ${reason}; running leases finish`);
      }),
    };
  }

  /** Another coordinator stopped the run (seen in its record). */
  stoppedElsewhere(reason: string): void {
    if (this.begun) return;
    const message = `run "${this.deps.runId}" was stopped by another coordinator (${reason}); start a new run id to run it again`;
    this.stop = { result: null, error: new RunStoppedError(this.deps.runId, null, message), work: this.afterHalt(() => this.removeWaiting()) };
  }

  /** The caller's AbortSignal: cancel the run (status, waiting jobs, workers told). */
  abortBy(reason: unknown): void {
    if (this.abort) return;
    const { runId, redis, queue, store, logger, tracker } = this.deps;
    const why = reason instanceof Error ? reason.message : reason === undefined ? 'signal aborted' : String(reason);
    this.abort = {
      result: null,
      error: new AbortError(runId, `run "${runId}" was cancelled (${why}); its waiting jobs were removed and workers were told to stop its active rollouts`, { cause: reason }),
      work: this.afterHalt(async () => {
        const outcome = await cancelRun(redis, queue, store, logger, runId, `cancelled by the caller's AbortSignal: ${why}`);
        outcome.removed.forEach((leaseId) => tracker.forget(leaseId));
        return undefined;
      }),
    };
  }

  /** `RolloutQueue.cancel` (here or in another process) cancelled the run. */
  cancelledElsewhere(reason: string): void {
    if (this.abort) return;
    this.abort = { result: null, error: this.cancelledError(reason), work: this.afterHalt(() => this.removeWaiting()) };
  }

  /** Waits for an ending's work and returns the error to throw. */
  async errorOf(ending: Ending): Promise<Error> {
    const better = await ending.work.catch((err: Error) => {
      this.deps.logger.error({ runId: this.deps.runId, err: err.message }, 'ending the run failed');
      return undefined;
    });
    return better ?? ending.error;
  }

  /** Resolves once every begun ending's work is done (never rejects). */
  async settled(): Promise<void> {
    await Promise.all([this.stop?.work, this.abort?.work].map((work) => work?.catch(() => undefined)));
  }

  private afterHalt(then: () => Promise<Error | undefined | void>): Promise<Error | undefined> {
    this.deps.halt();
    this.deps.tracker.notify();
    return (async () => {
      await this.deps.settled();
      return (await then()) ?? undefined;
    })();
  }

  private async removeWaiting(): Promise<undefined> {
    for (const leaseId of await removeWaitingJobs(this.deps.redis, this.deps.queue, this.deps.runId)) this.deps.tracker.forget(leaseId);
    return undefined;
  }

  private cancelledError(reason: string): AbortError {
    const { runId } = this.deps;
    return new AbortError(runId, `run "${runId}" was cancelled (${reason}); its waiting jobs were removed and workers were told to stop its active rollouts`);
  }
}
