const NOT_YET = Symbol('not yet');

/** Resolves after the current macrotask: every microtask queued so far has run by then. */
const nextMacrotask = (): Promise<typeof NOT_YET> => new Promise((resolve) => setImmediate(resolve, NOT_YET));

/**
 * The caller's drafts (sync or async iterable), read in batches without ever waiting for a
 * draft the source does not have yet: {@link next} waits as long as the source takes, then
 * {@link takeReady} adds only the drafts that are available at once. For an async source,
 * "at once" means its `next()` settled before the next macrotask (a generator over an array
 * does; one awaiting I/O or a model call does not): waiting longer would hold back drafts
 * already in hand, so a slow source still gets its jobs enqueued one by one as they come.
 *
 * A `next()` that lost that race is kept and becomes the start of the following batch, never
 * called twice. The caller asks {@link takeReady} for at most as many drafts as it has free
 * slots, so a draft is only pulled from the source when there is room to enqueue it.
 */
export class DraftSource {
  private readonly sync: Iterator<unknown> | undefined;
  private readonly async: AsyncIterator<unknown> | undefined;
  private pending: Promise<IteratorResult<unknown>> | undefined;
  private finished = false;
  /** Drafts handed back by {@link putBack}: taken again before anything else. */
  private readonly back: unknown[] = [];
  /** An error of the source met while taking ready drafts, thrown by the next {@link next}. */
  private failure: { readonly error: unknown } | undefined;

  constructor(items: Iterable<unknown> | AsyncIterable<unknown>) {
    if (Symbol.asyncIterator in items) this.async = items[Symbol.asyncIterator]();
    else this.sync = items[Symbol.iterator]();
  }

  /**
   * The next draft, however long the source takes.
   * @throws whatever the source throws.
   */
  async next(): Promise<IteratorResult<unknown>> {
    if (this.back.length > 0) return { done: false, value: this.back.shift() };
    if (this.failure) throw this.failure.error;
    if (this.finished) return { done: true, value: undefined };
    return this.note(this.sync ? this.sync.next() : await this.pull());
  }

  /**
   * Up to `limit` more drafts, only those available at once (possibly none). A source error
   * here ends the batch; the drafts taken before it are returned and {@link next} throws it,
   * so they are still enqueued before the run fails, as when drafts went one at a time.
   */
  async takeReady(limit: number): Promise<unknown[]> {
    const values = this.back.splice(0, limit);
    try {
      while (values.length < limit && !this.finished && !this.failure) {
        let step: IteratorResult<unknown>;
        if (this.sync) step = this.sync.next();
        else {
          const next = this.pull();
          const raced = await Promise.race([next, nextMacrotask()]);
          if (raced === NOT_YET) {
            this.pending = next;
            break;
          }
          step = raced;
        }
        if (this.note(step).done) break;
        values.push(step.value);
      }
    } catch (error) {
      this.failure = { error };
    }
    return values;
  }

  /**
   * Hands back drafts taken and not enqueued (an opening batch prepared for a new run, when the
   * run existed): {@link next} and {@link takeReady} return them again first, in order.
   */
  putBack(values: readonly unknown[]): void {
    this.back.unshift(...values);
  }

  /** Lets the source run its own clean-up (a generator's `finally`) when we stop before its end. */
  async close(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    const iterator = this.sync ?? this.async;
    const ended = Promise.resolve(iterator?.return?.()).catch(() => undefined);
    // An async generator queues return() behind a pending next(): a source blocked there must
    // not block whoever stops us, so only wait when nothing is pending.
    if (!this.pending) await ended;
  }

  private pull(): Promise<IteratorResult<unknown>> {
    const next = this.pending ?? Promise.resolve((this.async as AsyncIterator<unknown>).next());
    this.pending = undefined;
    return next;
  }

  private note(step: IteratorResult<unknown>): IteratorResult<unknown> {
    if (step.done) this.finished = true;
    return step;
  }
}
