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
 * regex) silences them. This timer runs in the worker's main process and calls `onOverrun`
 * once when the current stage's deadline plus `graceMs` has passed. `hangMs` stays the plane's
 * backstop for children wedged otherwise.
 *
 * The stage is not pushed by the child: `rewardSince` reads when the attempt's reward started
 * (ms since the epoch; undefined while it has not), written by the child before it calls the
 * reward (see stage-board.ts). It is read only when a deadline could have passed:
 * - at `runMs` (+ grace): the stage then names the overrun (`RunTimeout` or `RewardTimeout`);
 * - when `rewardMs` is shorter than `runMs`: at the earliest moment the reward's own deadline
 *   could be due. A reward that had not started by a read starts no earlier than that read, so
 *   the next read is `rewardMs` later; once it has started at `t`, its deadline is `t + rewardMs`
 *   exactly when that is before the end of `runMs` (else `runMs` ends it, as stage `reward`).
 */
export class StageDeadline {
  private readonly startedAt = Date.now();
  private readonly runTimer: NodeJS.Timeout;
  private rewardTimer: NodeJS.Timeout | undefined;
  private fired = false;

  constructor(
    private readonly limits: StageLimits,
    private readonly rewardSince: () => number | undefined,
    private readonly onOverrun: (overrun: Overrun) => void,
  ) {
    this.runTimer = setTimeout(() => {
      this.fire({ stage: this.rewardStart() === undefined ? 'run' : 'reward', limit: 'runMs', limitMs: limits.runMs });
    }, limits.runMs + limits.graceMs);
    this.watchRewardFrom(this.startedAt);
  }

  /** Stops the timers (the attempt ended). */
  clear(): void {
    clearTimeout(this.runTimer);
    clearTimeout(this.rewardTimer);
  }

  private get runEnd(): number {
    return this.startedAt + this.limits.runMs;
  }

  /** When the reward started, kept inside [start of the attempt, now] whatever the board says. */
  private rewardStart(): number | undefined {
    const since = this.rewardSince();
    return since === undefined ? undefined : Math.min(Math.max(since, this.startedAt), Date.now());
  }

  /** Arms the reward's own deadline check for a reward that starts at `earliest` or later. */
  private watchRewardFrom(earliest: number): void {
    const { rewardMs, graceMs } = this.limits;
    if (earliest + rewardMs >= this.runEnd) return; // the runMs deadline comes first
    this.rewardTimer = setTimeout(() => {
      const since = this.rewardStart();
      if (since === undefined) return this.watchRewardFrom(Date.now());
      if (since + rewardMs >= this.runEnd) return;
      this.rewardTimer = setTimeout(() => this.fire({ stage: 'reward', limit: 'rewardMs', limitMs: rewardMs }), Math.max(0, since + rewardMs + graceMs - Date.now()));
    }, Math.max(0, earliest + rewardMs + graceMs - Date.now()));
  }

  private fire(overrun: Overrun): void {
    if (this.fired) return;
    this.fired = true;
    this.clear();
    this.onOverrun(overrun);
  }
}
