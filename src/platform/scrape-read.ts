/**
 * One read of outside state per scrape, shared by every metric that reports from it.
 * prom-client's `Registry.metrics()` calls every metric's `collect` at once (Promise.all), so
 * metrics filled from one Redis read must each await the same read instead of one collect
 * filling the others (they would be read before it finished and show the last scrape's values).
 * The read is bounded by `timeoutMs`; a read that fails or times out yields undefined.
 */
export function scrapeRead<T>(read: () => Promise<T>, timeoutMs: number): () => Promise<T | undefined> {
  let pending: Promise<T | undefined> | undefined;
  return () => {
    pending ??= within(read(), timeoutMs).finally(() => {
      pending = undefined;
    });
    return pending;
  };
}

/** `promise`'s value, or undefined when it rejects or takes longer than `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  return Promise.race([promise.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}
