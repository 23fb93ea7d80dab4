/** Why `ctx.signal` aborted; the worker sends these strings as cancel reasons. */
export class RolloutAborted extends Error {
  constructor(readonly reason: string) {
    super(`rollout aborted: ${reason}`);
    this.name = 'AbortError';
  }
}

/**
 * One rollout's abort: its reason once aborted (the first abort wins, as with an
 * AbortController), the `ctx.signal` rollout code sees, and the stage awaiting it. The
 * AbortController behind `ctx.signal` is made when rollout code first reads it (aborted at
 * once if the rollout already is): a no-op or plain run never does, and a controller per
 * rollout costs its signal and an abort listener per stage in every child.
 */
export class RolloutAbort {
  #reason: RolloutAborted | undefined;
  #controller: AbortController | undefined;
  /** Rejects the stage {@link race} is waiting for. */
  #rejectStage: ((reason: RolloutAborted) => void) | undefined;

  /** Why it was aborted; undefined while it is not. */
  get reason(): RolloutAborted | undefined {
    return this.#reason;
  }

  /** The rollout's `ctx.signal`: the same signal on every read; aborted with {@link reason}. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#reason) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the rollout with `reason`: rejects the stage being raced, aborts `ctx.signal`. A second abort does nothing. */
  abort(reason: RolloutAborted): void {
    if (this.#reason) return;
    this.#reason = reason;
    this.#rejectStage?.(reason);
    this.#controller?.abort(reason);
  }

  /** `work`, or a rejection with the reason once the rollout is aborted, so an uncooperative stage cannot hold the result back. */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.#reason) return Promise.reject(this.#reason);
    return new Promise<T>((resolve, reject) => {
      this.#rejectStage = reject;
      work.then(resolve, reject);
    });
  }
}
