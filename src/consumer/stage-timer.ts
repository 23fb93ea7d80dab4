/**
 * A rollout child's time limit (`timeouts.runMs`, `timeouts.rewardMs`), armed once per rollout
 * on one reused Timeout: arming again with the same milliseconds refreshes it. A timer made and
 * cleared per rollout costs more than its object: Node drops a timer list once its last timer
 * is cleared and makes a new one (with a priority-queue insert) at the next `setTimeout` of that
 * duration, in every child, every rollout. Disarmed, the Timeout may still run out: then it
 * calls nothing.
 */
export class StageTimer {
  #timeout: NodeJS.Timeout | undefined;
  #ms = 0;
  #onFire: (() => void) | undefined;

  /**
   * Calls `onFire` once, `ms` milliseconds from now, unless {@link disarm} or `arm` is called
   * first (the new arming replaces it).
   */
  arm(ms: number, onFire: () => void): void {
    this.#onFire = onFire;
    if (this.#timeout && this.#ms === ms) {
      this.#timeout.refresh();
      return;
    }
    clearTimeout(this.#timeout);
    this.#ms = ms;
    this.#timeout = setTimeout(() => {
      const fire = this.#onFire;
      this.#onFire = undefined;
      fire?.();
    }, ms);
  }

  /** The armed `onFire` will not be called. */
  disarm(): void {
    this.#onFire = undefined;
  }
}
