import { createLogger } from '../../platform/logger.js';
import { cliLogDestination } from '../log-lines.js';
import { cliEnvironment } from '../environment.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { MSG } from '../messages.js';
import { checkMetricsPort, metricsPortError, RolloutWorker, WorkerStartAborted } from '../plane.js';
import { waitForRedis } from '../redis-preflight.js';
import { onStopSignals } from '../signals.js';
import type { WorkerCommandOptions } from '../commands/worker.js';

/** How long a second signal waits for the hand-back before exiting anyway, ms. */
const HARD_EXIT_MS = 15_000;

/**
 * `rollout-queue worker`: serve one queue until SIGTERM/SIGINT. The first signal closes the
 * worker gracefully (no new rollouts, active ones finish within the grace period, the rest
 * are handed back); a second signal hands everything back at once and exits. While Redis is
 * unreachable at start it waits with capped backoff, logging the redacted address, instead of
 * crash-looping; wrong credentials fail at once (exit 1), bad options exit 2, `--containment
 * strict` on a host without a PID namespace and a cgroup memory limit exits 1 naming what is missing.
 */
export async function workerAction(options: WorkerCommandOptions): Promise<void> {
  const env = cliEnvironment();
  const logger = createLogger({ component: 'worker', queue: options.queue }, cliLogDestination('service'));
  const stop = new AbortController();
  let worker: RolloutWorker | undefined;
  const dispose = onStopSignals(
    (signal) => {
      logger.info({ signal }, MSG.workerStopping(options.shutdownGraceMs));
      stop.abort(signal);
    },
    (signal) => {
      logger.warn({ signal }, MSG.workerStoppingNow);
      setTimeout(() => process.exit(EXIT.ok), HARD_EXIT_MS).unref();
      void (worker ? worker.close({ graceMs: 0 }) : Promise.resolve()).finally(() => process.exit(EXIT.ok));
    },
  );
  try {
    if (options.metricsPort !== undefined) await checkMetricsPort({ port: options.metricsPort, host: options.metricsHost ?? '127.0.0.1' });
    const ready = await waitForRedis(env, (problem, retryMs) => logger.warn({ address: env.address, retryMs }, MSG.redisRetrying(problem, retryMs)), stop.signal);
    if (!ready) return;
    worker = await createWorker(stop.signal, {
      redisUrl: env.redisUrl,
      queue: options.queue,
      prefix: env.prefix,
      ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
      ...(options.children !== undefined ? { children: options.children } : {}),
      ...(options.blockedLoopMs !== undefined ? { blockedLoopMs: options.blockedLoopMs } : {}),
      ...(options.allow ? { allow: options.allow } : {}),
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.metricsPort !== undefined ? { metricsPort: options.metricsPort } : {}),
      ...(options.metricsHost !== undefined ? { metricsHost: options.metricsHost } : {}),
      ...(options.lockDurationMs !== undefined ? { lockDurationMs: options.lockDurationMs } : {}),
      ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
      ...(options.maxSpecBytes !== undefined ? { maxSpecBytes: options.maxSpecBytes } : {}),
      ...(options.stalledIntervalMs !== undefined ? { stalledIntervalMs: options.stalledIntervalMs } : {}),
      ...(options.shutdownGraceMs !== undefined ? { shutdownGraceMs: options.shutdownGraceMs } : {}),
      ...(options.containment !== undefined ? { containment: options.containment } : {}),
      ...(options.allowNetwork ? { allowNetwork: true } : {}),
      ...(options.expose ? { exposeReadOnly: options.expose } : {}),
      ...(options.allowEviction ? { allowEviction: true } : {}),
      ...(options.placement ? { placement: options.placement } : {}),
      ...(options.fingerprint !== undefined ? { fingerprint: options.fingerprint } : {}),
      ...(options.evalConcurrency !== undefined ? { evalConcurrency: options.evalConcurrency } : {}),
      logger,
    });
    if (!worker) return;
    if (!stop.signal.aborted) await new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
    await worker.close();
  } finally {
    dispose();
  }
}

/**
 * Creates the worker; an option the consumer refuses (out of range, malformed allowlist
 * pattern) is a usage error (exit 2), naming the option. A metrics port that cannot be
 * listened on (taken, privileged) is one line naming the port and the fix (exit 1). A stop
 * signal during the start (Redis went away after the preflight) ends it: undefined, exit 0.
 */
async function createWorker(signal: AbortSignal, options: Parameters<typeof RolloutWorker.create>[0]): Promise<RolloutWorker | undefined> {
  try {
    return await RolloutWorker.create(options, { signal });
  } catch (err) {
    if (err instanceof WorkerStartAborted) return undefined;
    const error = err as Error;
    if (error.message.startsWith('worker option') || error.name === 'AllowlistError') throw new UsageError(MSG.badWorkerOption(error.message));
    if (error.name === 'ContainmentError') throw new CliError(MSG.containmentRefused(error.message));
    if (error.name === 'EvictionPolicyError') throw new CliError(error.message);
    const metricsPort = options?.metricsPort;
    if (metricsPort !== undefined && (err as { syscall?: string }).syscall === 'listen') throw metricsPortError(metricsPort, err);
    throw err;
  }
}
