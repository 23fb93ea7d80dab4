/**
 * Settles as `work` does, or rejects with `onAbort(signal.reason)` once `signal` aborts first.
 * `work` itself goes on; it must be safe to leave (its result is dropped). Needed where the work
 * cannot be cut off from outside: an ioredis command queued while the client reconnects is never
 * failed by `disconnect()` (ioredis 5.x `Redis.disconnect` clears the reconnect timer but flushes
 * its offline queue only on a socket close that already happened), so it would wait for ever.
 */
export function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined, onAbort: (reason: unknown) => Error): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(onAbort(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(onAbort(signal.reason));
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err);
      },
    );
  });
}
