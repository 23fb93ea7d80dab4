/**
 * How the worker stops one running attempt: {@link abort} once, heard by the attempt's one
 * listener. Not an AbortController: in Node 20 making an AbortSignal and adding and removing a
 * listener costs ~8 µs (EventTarget set-up), for every rollout, on the event loop that holds
 * the locks, and only a few rollouts are ever aborted.
 */
export class AttemptAbort {
  #reason: string | undefined;
  #listener: (() => void) | undefined;

  /** The reason given to {@link abort}; undefined while not aborted. */
  get reason(): string | undefined {
    return this.#reason;
  }

  /** Aborts with `reason` and calls the listener; false (nothing changes) when aborted already. */
  abort(reason: string): boolean {
    if (this.#reason !== undefined) return false;
    this.#reason = reason;
    this.#listener?.();
    return true;
  }

  /** Sets the one listener, called on {@link abort}; returns what removes it. */
  listen(listener: () => void): () => void {
    this.#listener = listener;
    return () => {
      if (this.#listener === listener) this.#listener = undefined;
    };
  }
}
