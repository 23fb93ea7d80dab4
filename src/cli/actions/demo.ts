import path from 'node:path';
import { startDashboard, type Dashboard } from '../../dashboard/server.js';
import { dashboardStartError } from './dashboard.js';
import { loadDemoDrafts } from '../demo-inputs.js';
import { removeDemoQueue } from '../demo-queue-removal.js';
import { provideDemoRedis, type DemoRedis } from '../demo-redis.js';
import { spawnDemoWorkers, type DemoWorkers } from '../demo-workers.js';
import { cliEnvironment, type CliEnvironment } from '../environment.js';
import { CliError, EXIT, type ExitCode } from '../errors.js';
import { executeRun } from '../execute-run.js';
import { checkOutFile } from '../results-file.js';
import { MSG } from '../messages.js';
import { coordinatorLogger, openQueue } from '../plane.js';
import { requireRedis } from '../redis-preflight.js';
import { defaultOutFile, generateRunId } from '../run-id.js';
import { onStopSignals } from '../signals.js';
import type { DemoCommandOptions } from '../commands/demo.js';

/** How long the demo waits for its workers to connect before running anyway, ms. */
const READY_TIMEOUT_MS = 30_000;

/**
 * `rollout-queue demo`: the main job end to end on one machine. Redis (REDIS_URL, else a
 * private redis-server, else a testcontainers Redis), `--workers` real worker processes on a
 * fresh queue, the dashboard, then `examples/arithmetic` through the same code path as
 * `run`, with progress and summary. Stops everything afterwards unless `--keep` (then at
 * Ctrl-C). On a `REDIS_URL` Redis it then removes its queue: nothing serves it once its workers
 * stop, so an interrupted run of it could never finish (fresh-user report: Ctrl-C left a
 * `running` run of 180 waiting jobs that `purge` refused), and a finished one is in the results file.
 */
export async function demoAction(options: DemoCommandOptions): Promise<ExitCode> {
  const drafts = await loadDemoDrafts(options.tasks);
  // Before Redis, workers and the dashboard start, as `run` checks it (fresh-user report: a
  // directory given as --out was refused only after all three were up).
  if (options.out !== undefined) checkOutFile(options.out);
  const interrupt = new AbortController();
  let redis: DemoRedis | undefined;
  let workers: DemoWorkers | undefined;
  let dashboard: Dashboard | undefined;
  let env: CliEnvironment | undefined;
  let queue: string | undefined;
  let out: string | undefined;
  /** The run ended (every Result, or a stop) before any Ctrl-C: one during `--keep` interrupts nothing. */
  let runEnded = false;
  const dispose = onStopSignals(
    (signal) => interrupt.abort(signal),
    () => {
      workers?.kill();
      redis?.kill();
      process.exit(EXIT.interrupted);
    },
  );
  const say = (line: string): void => void process.stderr.write(`${line}\n`);
  try {
    redis = await provideDemoRedis();
    env = cliEnvironment({ ...process.env, REDIS_URL: redis.url });
    say(MSG.demoRedis(redis.source, env.address));
    await requireRedis(env);
    queue = generateRunId().replace(/^run-/, 'demo-');
    // The dashboard before the workers: a taken --port is refused before anything else starts
    // (fresh-user report: two workers started, then the error came last).
    dashboard = await startDashboard({ redisUrl: redis.url, prefix: env.prefix, queues: [queue], port: options.port }).catch((err: unknown) => {
      throw dashboardStartError(options.port, err);
    });
    workers = spawnDemoWorkers({
      count: options.workers,
      queue,
      redisUrl: redis.url,
      prefix: env.prefix,
      concurrency: options.concurrency,
      logDir: path.resolve('.rollout-queue', queue),
    });
    say(MSG.demoWorkers(options.workers, queue, workers.logDir));
    say(MSG.dashboardUrl(dashboard.url));
    const probe = await openQueue(env, queue, coordinatorLogger('demo'));
    try {
      const ready = await workers.waitReady(probe, READY_TIMEOUT_MS);
      if (ready < options.workers) say(MSG.demoWorkersNotReady(ready, options.workers, READY_TIMEOUT_MS / 1000, workers.logDir));
    } finally {
      await probe.close();
    }
    if (interrupt.signal.aborted) return EXIT.interrupted;
    const runId = generateRunId();
    out = options.out ?? defaultOutFile(runId);
    const code = await executeRun({
      env,
      queue,
      runId,
      out,
      source: { kind: 'map', drafts },
      interrupt: interrupt.signal,
      resumeHint: false,
    });
    runEnded = code !== EXIT.interrupted;
    if (options.keep && !interrupt.signal.aborted) {
      const ownRedis = redis.source !== 'REDIS_URL';
      say(dashboard ? MSG.demoDashboardKept(dashboard.url, ownRedis) : MSG.demoKeep(ownRedis));
      await new Promise((resolve) => interrupt.signal.addEventListener('abort', resolve, { once: true }));
    }
    return code;
  } catch (err) {
    if (interrupt.signal.aborted && !(err instanceof CliError)) return EXIT.interrupted;
    throw err;
  } finally {
    const ownRedis = redis !== undefined && redis.source !== 'REDIS_URL';
    const started = [workers && 'the workers', dashboard && 'the dashboard', ownRedis && 'Redis'].filter((part): part is string => typeof part === 'string');
    if (started.length > 0) say(MSG.demoStopping(started));
    await workers?.stop();
    await dashboard?.close();
    if (dashboard && !options.keep) say(MSG.demoDashboardClosed(dashboard.url));
    if (interrupt.signal.aborted && !runEnded && out !== undefined) say(MSG.demoInterrupted(out, ownRedis));
    // Only once workers started: before that nothing of the queue is in Redis (the dashboard writes nothing).
    if (redis?.source === 'REDIS_URL' && env !== undefined && queue !== undefined && workers) {
      const { address, prefix } = env;
      const name = queue;
      const ran = out !== undefined;
      await removeDemoQueue(redis.url, prefix, name).then(
        () => say(MSG.demoQueueRemoved(name, address, ran)),
        (err: Error) => say(MSG.demoQueueNotRemoved(`${prefix}:${name}`, address, err.message)),
      );
    }
    await redis?.stop();
    dispose();
  }
}
