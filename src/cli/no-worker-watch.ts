import { performance } from 'node:perf_hooks';
import { MSG } from './messages.js';
import { readStatus, type RolloutQueue } from './plane.js';

/** How often `run` looks for workers while it waits, ms. */
export const NO_WORKER_CHECK_MS = 30_000;

/**
 * Warns on `stderr` every {@link NO_WORKER_CHECK_MS} for as long as no worker serves the queue
 * (BullMQ `getWorkers()`), saying for how long and what happens to the leases (they end as
 * `NoWorker` after `timeouts.scheduleToStartMs`), and how to start one (`allowFlags`: the
 * `--allow` flags the run needs). A failed look (Redis down) says nothing.
 * @returns a function that stops watching.
 */
export function watchNoWorker(q: RolloutQueue, queue: string, prefix: string, stderr: NodeJS.WritableStream, everyMs = NO_WORKER_CHECK_MS, allowFlags = ''): () => void {
  let since: number | undefined = performance.now();
  const timer = setInterval(() => {
    readStatus(q).then(
      (status) => {
        if (status.workers.length > 0) {
          since = undefined;
          return;
        }
        since ??= performance.now();
        stderr.write(`${MSG.noWorkerStill(queue, prefix, Math.round((performance.now() - since) / 1000), allowFlags)}\n`);
      },
      () => undefined,
    );
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
