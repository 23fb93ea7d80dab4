/** Which limit a rollout attempt ran past, seen from the worker's main process. */
export interface Overrun {
  /** The stage that was running: `run` (Ref resolution included) or `reward`. */
  readonly stage: 'run' | 'reward';
  /** The limit that ended it: the shared `timeouts.runMs`, or the reward's own `timeouts.rewardMs`. */
  readonly limit: 'runMs' | 'rewardMs';
  /** That limit's value, ms. */
  readonly limitMs: number;
}

/** Limits of {@link StageDeadline}, ms. */
export interface StageLimits {
  /** `timeouts.runMs`: run and reward together, from the start of the attempt. */
  readonly runMs: number;
  /** `timeouts.rewardMs`: the reward alone, inside what is left of `runMs`. */
  readonly rewardMs: number;
  /**
   * Extra time given to the child to report the overrun itself (its own timers abort
   * `ctx.signal` at the limit; an answer then is the same `model` Result). Past it, the
   * child's event loop is presumed blocked and it is killed.
   */
  readonly graceMs: number;
}

/**
 * The outside enforcement of a rollout's time limits (issue 11, BR-35): the child runs its own
 * timers, but a run or reward that blocks the child's event loop synchronously (a catastrophic
 * regex) silences them. This timer runs in the worker's main process, follows the child's
 * stage messages, and calls `onOverrun` once when the current stage's deadline plus
 * `graceMs` has passed. `hangMs` stays the plane's backstop for children wedged otherwise.
 */
export class StageDeadline {
  private readonly startedAt = Date.now();
  private stage: Overrun['stage'] = 'run';
  private timer: NodeJS.Timeout | undefined;
  private fired = false;

  constructor(
    private readonly limits: StageLimits,
    private readonly onOverrun: (overrun: Overrun) => void,
  ) {
    this.arm(this.startedAt + limits.runMs, 'runMs');
  }

  /** The child reported that the reward starts now: its deadline is the earlier of the two limits. */
  enterReward(): void {
    if (this.fired) return;
    this.stage = 'reward';
    const runEnd = this.startedAt + this.limits.runMs;
    const rewardEnd = Date.now() + this.limits.rewardMs;
    if (rewardEnd < runEnd) this.arm(rewardEnd, 'rewardMs');
  }

  /** Stops the timer (the attempt ended). */
  clear(): void {
    clearTimeout(this.timer);
  }

  private arm(at: number, limit: Overrun['limit']): void {
    clearTimeout(this.timer);
    const limitMs = limit === 'runMs' ? this.limits.runMs : this.limits.rewardMs;
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onOverrun({ stage: this.stage, limit, limitMs });
    }, Math.max(0, at - Date.now()) + this.limits.graceMs);
  }
}
