import type { Logger } from '../platform/logger.js';
import { writeRefusalCode } from '../platform/write-refusal-code.js';

/** First pause after a refusal, ms; it doubles per failed probe up to {@link MAX_PAUSE_MS}. */
export const FIRST_PAUSE_MS = 1_000;
/** Longest pause between write probes, ms. */
export const MAX_PAUSE_MS = 30_000;

/** What {@link WriteBackoff} pauses and resumes: BullMQ's `Worker#pause(doNotWaitActive)` / `resume()`. */
export interface PausableIntake {
  pause(doNotWaitActive?: boolean): Promise<void>;
  resume(): void | Promise<void>;
}

/**
 * Bounds what a worker does while Redis refuses writes: on the first refusal it pauses job
 * intake (BullMQ's own `pause(true)`: no new jobs, running rollouts go on) and logs ONE line;
 * then it probes with one small write after 1 s, 2 s, 4 s … (capped at 30 s), logging one
 * line per step, and resumes intake when a probe succeeds. Refusals reported in between (lock
 * renewals, finishes) are absorbed without a log line. `/healthz` reads {@link refusing}.
 */
export class WriteBackoff {
  private step = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The refusal code while writes fail (e.g. `OOM`), else undefined. */
  refusing: string | undefined;

  /**
   * @param intake the BullMQ worker.
   * @param probe one write that throws while Redis refuses writes.
   * @param logger where the one line per step goes.
   * @param address the redacted Redis address, for the log line.
   */
  constructor(
    private readonly intake: PausableIntake,
    private readonly probe: () => Promise<unknown>,
    private readonly logger: Logger,
    private readonly address: string,
  ) {}

  /**
   * Handles an error of the worker if it is a write refusal.
   * @returns true when it was one (and is handled here), false otherwise.
   */
  onError(err: unknown): boolean {
    const code = writeRefusalCode(err);
    if (!code) return false;
    if (this.refusing || this.closed) return true;
    this.refusing = code;
    this.step = 0;
    void this.intake.pause(true).catch(() => undefined);
    this.logger.error({ redis: this.address, refusal: code, retryMs: this.pauseMs() }, `Redis at ${this.address} refuses writes (${oneLine(err)}); job intake paused, retrying in ${this.pauseMs() / 1000} s`);
    this.schedule();
    return true;
  }

  /** Stops probing (worker closing). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private pauseMs(): number {
    return Math.min(FIRST_PAUSE_MS * 2 ** this.step, MAX_PAUSE_MS);
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.tryAgain(), this.pauseMs());
    this.timer.unref();
  }

  private async tryAgain(): Promise<void> {
    if (this.closed) return;
    try {
      await this.probe();
    } catch (err) {
      if (this.closed) return;
      this.step += 1;
      const code = writeRefusalCode(err) ?? this.refusing;
      this.logger.warn({ redis: this.address, refusal: code, retryMs: this.pauseMs() }, `Redis at ${this.address} still refuses writes (${oneLine(err)}); retrying in ${this.pauseMs() / 1000} s`);
      this.schedule();
      return;
    }
    if (this.closed) return;
    this.refusing = undefined;
    this.logger.info({ redis: this.address }, `Redis at ${this.address} accepts writes again; job intake resumed`);
    await Promise.resolve(this.intake.resume()).catch(() => undefined);
  }
}

/** The first line of an error's message, without BullMQ's script hash detail. */
function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split('\n')[0] ?? message).replace(/\s*script: [0-9a-f]{40}, on @user_script:\d+\.?/, '').trim().replace(/\.+$/, '');
}
