/**
 * The one place the CLI meets the producer and the consumer. Commands import from here, so a
 * change in either library API is absorbed in this file.
 */
import { createServer } from 'node:net';
import { RolloutWorker, WorkerStartAborted } from '../consumer/index.js';
import type { RunRecord } from '../lease/index.js';
import { createLogger, type Logger } from '../platform/logger.js';
import { serveMetrics, type MetricsEndpoint } from '../platform/metrics-endpoint.js';
import { CoordinatorMetrics, RolloutQueue, type PlacementStatus, type RunShareStatus } from '../producer/index.js';
import type { CostSummary, Result } from '../spec/index.js';
import type { CliEnvironment } from './environment.js';
import { CliError } from './errors.js';
import { cliLogDestination } from './log-lines.js';
import { MSG } from './messages.js';

export { RolloutQueue, RolloutWorker, WorkerStartAborted };

/**
 * A coordinator-side logger on stderr (stdout is for the summary), level `LOG_LEVEL` or `warn`:
 * pino-pretty on a terminal, else lines of text among the command's own (`warn: … (runId=…)`);
 * `LOG_FORMAT` (pretty, json, text) chooses (see `cliLogDestination`).
 */
export function coordinatorLogger(component: string): Logger {
  const logger = createLogger({ component }, cliLogDestination('command'));
  logger.level = process.env.LOG_LEVEL ?? 'warn';
  return logger;
}

/**
 * Serves `CoordinatorMetrics` of `runId` on `address` until the endpoint is closed.
 * @throws CliError naming --metrics-port when the port is taken or needs privileges.
 */
export async function serveCoordinatorMetrics(q: RolloutQueue, runId: string, address: { port: number; host: string }): Promise<MetricsEndpoint> {
  const metrics = new CoordinatorMetrics(q);
  metrics.track(runId);
  try {
    return await serveMetrics(metrics.registry, address);
  } catch (err) {
    throw metricsPortError(address.port, err);
  }
}

/** The one-line error of a `--metrics-port` that cannot be listened on (taken, privileged). */
export function metricsPortError(port: number, err: unknown): CliError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new CliError(MSG.metricsPortInUse(port));
  return new CliError(MSG.metricsPortDenied(port, code ?? (err as Error).message));
}

/**
 * Refuses a `--metrics-port` that cannot be listened on before anything else happens (a run id
 * announced, a queue opened, a worker started): listens on it and lets go at once (fresh-user
 * report: `run` announced a run id to re-attach to, and `worker` wrote the queue's BullMQ meta
 * key, before failing on a taken port). Port 0 always passes. A port taken between this check
 * and the real listen is refused then, with the same line.
 * @throws CliError (see {@link metricsPortError}).
 */
export async function checkMetricsPort(address: { readonly port: number; readonly host: string }): Promise<void> {
  if (address.port === 0) return;
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address.port, address.host, () => resolve());
    });
  } catch (err) {
    throw metricsPortError(address.port, err);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * Opens the coordinator side of one queue.
 * @param options.maxInFlight undefined: the producer's default.
 * @param options.maxSpecBytes producer option maxSpecBytes, bytes; undefined: the producer's default.
 * @param options.retainMs retention of a delivered run, ms; undefined: the producer's default.
 * @param options.costCeilingUsd producer option costCeilingUsd, USD; undefined: none.
 * @param options.writeQueueMeta producer option writeQueueMeta: false for commands that only read or end runs.
 */
export async function openQueue(
  env: CliEnvironment,
  queue: string,
  logger: Logger,
  options: { maxInFlight?: number | undefined; maxSpecBytes?: number | undefined; retainMs?: number | undefined; costCeilingUsd?: number | undefined; writeQueueMeta?: boolean } = {},
): Promise<RolloutQueue> {
  return RolloutQueue.create({
    redisUrl: env.redisUrl,
    queue,
    prefix: env.prefix,
    ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}),
    ...(options.maxSpecBytes !== undefined ? { maxSpecBytes: options.maxSpecBytes } : {}),
    ...(options.retainMs !== undefined ? { retainMs: options.retainMs } : {}),
    ...(options.costCeilingUsd !== undefined ? { costCeilingUsd: options.costCeilingUsd } : {}),
    ...(options.writeQueueMeta !== undefined ? { writeQueueMeta: options.writeQueueMeta } : {}),
    logger,
  });
}

/**
 * What a run stopped on, when `err` is the producer's RunStoppedError: the lease and its caller
 * result, or nulls when an earlier coordinator had already stopped the run (the message says why).
 */
export interface RunStop {
  readonly leaseId: string | null;
  readonly result: Result | null;
  readonly message: string;
  /** The run was cancelled before (`cancel`), not stopped: `resume` ends as `run` does for a cancel. */
  readonly cancelled: boolean;
}

/** The {@link RunStop} of a RunStoppedError, else undefined. */
export function runStoppedBy(err: unknown): RunStop | undefined {
  if (!(err instanceof Error) || err.name !== 'RunStoppedError') return undefined;
  const { leaseId, result, status } = err as Error & { leaseId?: unknown; result?: unknown; status?: unknown };
  return {
    leaseId: typeof leaseId === 'string' ? leaseId : null,
    result: result && typeof result === 'object' ? (result as Result) : null,
    message: err.message,
    cancelled: status === 'cancelled',
  };
}

/** Who delivers the run, when `err` is the producer's RunBusyError (another live coordinator holds the run), else undefined. */
export function runBusyBy(err: unknown): { readonly holder: string } | undefined {
  if (!(err instanceof Error) || err.name !== 'RunBusyError') return undefined;
  const { holder } = err as Error & { holder?: unknown };
  return { holder: typeof holder === 'string' ? holder : 'unknown' };
}

/** Whether `err` is an abort (the producer throws an error named `AbortError`). */
export function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

/** A connected worker as `status` shows it: its name and a few CLIENT LIST fields. */
export interface WorkerView {
  readonly name: string;
  readonly details: Readonly<Record<string, string>>;
}

/** What `status` shows for a queue and, optionally, one run. */
export interface StatusView {
  /** Jobs by BullMQ state (waiting, active, completed, failed, delayed, …). */
  readonly counts: Readonly<Record<string, number>>;
  readonly run: RunRecord | undefined;
  readonly workers: readonly WorkerView[];
  /** Placement queues (one per distinct placement and class): labels, waiting, active, workers. Default none. */
  readonly placements?: readonly PlacementStatus[];
  /** Runs with rollouts waiting or active on the queue: weight, waiting, active and share (docs/fair-share.md). Default none. */
  readonly shares?: readonly RunShareStatus[];
  /** Cost receipts of the run so far (with a run id). */
  readonly cost?: CostSummary;
  /** With a run id: a coordinator holds the run's lease now (see `QueueStatus.delivering`). */
  readonly delivering?: boolean;
  /** While delivering: who holds the lease (`QueueStatus.coordinator`). */
  readonly coordinator?: { readonly pid: number | null; readonly host: string | null };
  /** The pid of a lease holder on this host that no longer runs (killed): its lease is about to lapse. */
  readonly coordinatorGone?: number;
  /** With a run id: the absolute results file its last CLI coordinator writes (`run.coordinatorNote`), when one said so. */
  readonly resultsFile?: string;
  /** With the id of a cancelled or stopped run no coordinator delivers: its Results still to be delivered (`RolloutQueue.pendingResults`). */
  readonly undelivered?: number;
}

/** CLIENT LIST fields worth showing per worker connection: address, age and idle seconds. */
const WORKER_FIELDS = ['addr', 'age', 'idle'] as const;

/**
 * A worker from BullMQ `getWorkers()`: BullMQ names worker connections
 * `<prefix>:<base64 queue>:w:<worker name>` (`rawname`), and reports `name` as the queue.
 */
function workerView(client: Readonly<Record<string, string>>): WorkerView {
  const raw = client.rawname ?? '';
  const at = raw.indexOf(':w:');
  const details: Record<string, string> = {};
  for (const field of WORKER_FIELDS) if (client[field] !== undefined) details[field] = client[field];
  return { name: at >= 0 ? raw.slice(at + 3) : (client.name ?? '?'), details };
}

/** Reads the status of the queue (and of `runId` when given) through the producer. */
export async function readStatus(queue: RolloutQueue, runId?: string): Promise<StatusView> {
  const status = await queue.status(runId);
  return {
    counts: status.counts, run: status.run ?? undefined, workers: status.workers.map(workerView), placements: status.placements, shares: status.shares,
    ...(status.cost ? { cost: status.cost } : {}), ...(status.delivering !== undefined ? { delivering: status.delivering } : {}),
    ...(status.coordinator ? { coordinator: status.coordinator } : {}),
  };
}
