import type { Result } from '../spec/index.js';
import { isAbort, runBusyBy, runStoppedBy, type RunStop } from './plane.js';
import type { Progress } from './progress.js';
import { ResultsWriteError, type ResultsFile } from './results-file.js';

/** How collecting a run's results ended. */
export type CollectOutcome =
  | { readonly kind: 'completed' }
  | ({ readonly kind: 'stopped' } & RunStop)
  | { readonly kind: 'interrupted' }
  | { readonly kind: 'cancelled'; readonly reason: string }
  /** Another live coordinator delivers the run (RunBusyError): this one delivered nothing. */
  | { readonly kind: 'refused'; readonly holder: string }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'writeFailed'; readonly error: ResultsWriteError };

/**
 * Pulls results and writes each one to the file **before** pulling the next: the producer
 * acknowledges a result when its iterator resumes, so every acknowledged result is already
 * on disk. A lease already in the file (a re-attached run) is not written again.
 *
 * `interrupt` ends the wait at once without resuming the iterator, so the result in hand,
 * if any, stays unacknowledged in Redis and comes back on the next attach. Any other error of
 * the producer ends collection as `failed`, so the caller can still summarise what arrived.
 * A line that cannot be written ends collection at once as `writeFailed` (never retried): the
 * result in hand is not acknowledged, so it stays in Redis.
 */
export async function collectResults(
  results: AsyncIterable<Result>,
  file: ResultsFile,
  progress: Progress,
  interrupt?: AbortSignal,
): Promise<CollectOutcome> {
  const iterator = results[Symbol.asyncIterator]();
  const interrupted = new Promise<'interrupted'>((resolve) => {
    if (interrupt?.aborted) resolve('interrupted');
    interrupt?.addEventListener('abort', () => resolve('interrupted'), { once: true });
  });
  try {
    return await collect(iterator, file, progress, interrupted);
  } catch (err) {
    if (err instanceof ResultsWriteError) return { kind: 'writeFailed', error: err };
    throw err;
  }
}

async function collect(
  iterator: AsyncIterator<Result>,
  file: ResultsFile,
  progress: Progress,
  interrupted: Promise<'interrupted'>,
): Promise<CollectOutcome> {
  for (;;) {
    let next: IteratorResult<Result> | 'interrupted';
    try {
      next = await Promise.race([iterator.next(), interrupted]);
    } catch (err) {
      const stop = runStoppedBy(err);
      if (stop?.cancelled) return { kind: 'cancelled', reason: stop.message };
      if (stop) {
        if (stop.result) file.append(stop.result);
        progress.update({ done: file.count, kinds: file.tally.kinds });
        return { kind: 'stopped', ...stop };
      }
      const busy = runBusyBy(err);
      if (busy) return { kind: 'refused', holder: busy.holder };
      // No signal is passed to the producer, so an AbortError means `cancel` from elsewhere.
      if (isAbort(err)) return { kind: 'cancelled', reason: (err as Error).message };
      return { kind: 'failed', error: err instanceof Error ? err : new Error(String(err)) };
    }
    if (next === 'interrupted') return { kind: 'interrupted' };
    if (next.done) return { kind: 'completed' };
    file.append(next.value);
    progress.update({ done: file.count, kinds: file.tally.kinds });
  }
}
