import { setTimeout as sleep } from 'node:timers/promises';
import { Worker, type Job, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { queueKeys, ROLLOUT_JOB_NAME } from '../../src/lease/index.js';
import { resultEnding, type Result, type ResultKind, type RolloutSpec } from '../../src/spec/index.js';

/**
 * A stand-in for the real worker (src/consumer), for producer tests: a raw BullMQ `Worker` on
 * the same queue and prefix that honours the wire contract (complete every lease with a
 * `Result`, abort a run's active rollouts on a cancel message) and is steered by task fields:
 * - `task.delayMs`: how long the rollout "runs" (abortable), default 0;
 * - `task.kind`: the Result kind (default `ok`), with `task.errorType` as error type;
 * - `task.reward`: reward of an `ok` Result (default 1);
 * - `task.fail: true`: the processor throws (message `task.failMessage`), so BullMQ fails the job.
 */
export interface StubWorker {
  readonly worker: Worker;
  /** Lease ids in the order their jobs started. */
  readonly started: string[];
  /** Lease ids aborted by a cancel message. */
  readonly cancelled: string[];
  /** Cancels what runs, closes the worker and its connections. */
  stop(): Promise<void>;
}

/** Options of {@link startStubWorker}. */
export interface StubWorkerOptions {
  readonly url: string;
  readonly queue: string;
  readonly prefix: string;
  /** Jobs in parallel (default 4). */
  readonly concurrency?: number;
  /** Called when a job starts, before it "runs" (e.g. to sample queue counts). */
  readonly onStart?: (job: Job<RolloutSpec>) => Promise<void> | void;
  /** Extra BullMQ Worker options (e.g. short `lockDuration`/`stalledInterval` for restart tests). */
  readonly workerOptions?: Partial<Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'>>;
}

const int = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

function resultOf(job: Job<RolloutSpec>, kind: ResultKind, startedAt: number, errorType?: string): Result {
  const task = job.data.task;
  return {
    leaseId: String(job.id),
    runId: job.data.runId,
    taskId: String(task.id ?? job.id),
    ...resultEnding(
      kind,
      { echo: task.id ?? null },
      kind === 'ok' ? int(task.reward, 1) : null,
      kind === 'ok' ? null : { type: errorType ?? (typeof task.errorType === 'string' ? task.errorType : 'StubError'), message: `stub ${kind} result` },
    ),
    attempts: job.attemptsStarted,
    redispatched: 0,
    worker: 'stub',
    queuedMs: Math.max(0, startedAt - job.timestamp),
    runMs: Date.now() - startedAt,
    finishedAt: new Date().toISOString(),
    cost: [],
  };
}

/** Starts a stub worker; `stop()` it in `afterEach`/`finally`. */
export async function startStubWorker(options: StubWorkerOptions): Promise<StubWorker> {
  const connection = new Redis(options.url, { maxRetriesPerRequest: null });
  const subscriber = new Redis(options.url, { maxRetriesPerRequest: null });
  for (const client of [connection, subscriber]) client.on('error', () => undefined); // Redis restarts in tests
  const started: string[] = [];
  const cancelled: string[] = [];
  const active = new Map<string, string>(); // leaseId → runId

  const processor = async (job: Job<RolloutSpec>, _token?: string, signal?: AbortSignal): Promise<Result> => {
    if (job.name !== ROLLOUT_JOB_NAME) throw new Error(`unexpected job name ${job.name}`);
    const leaseId = String(job.id);
    const startedAt = Date.now();
    started.push(leaseId);
    active.set(leaseId, job.data.runId);
    try {
      await options.onStart?.(job);
      const task = job.data.task;
      if (task.fail === true) throw new Error(typeof task.failMessage === 'string' ? task.failMessage : 'stub worker failed on purpose');
      try {
        await sleep(int(task.delayMs, 0), undefined, { signal });
      } catch {
        cancelled.push(leaseId);
        return resultOf(job, 'caller', startedAt, 'Cancelled');
      }
      const kind = typeof task.kind === 'string' ? (task.kind as ResultKind) : 'ok';
      return resultOf(job, kind, startedAt);
    } finally {
      active.delete(leaseId);
    }
  };

  const worker = new Worker<RolloutSpec, Result>(options.queue, processor, {
    connection,
    prefix: options.prefix,
    concurrency: options.concurrency ?? 4,
    ...options.workerOptions,
    // No removeOnComplete/removeOnFail: finished jobs stay, as the contract needs (results wait in Redis).
  });
  worker.on('error', () => undefined);
  const keys = queueKeys(options.prefix, options.queue);
  await subscriber.subscribe(keys.cancelChannel());
  subscriber.on('message', (_channel: string, runId: string) => {
    for (const [leaseId, run] of active) if (run === runId) worker.cancelJob(leaseId, 'Cancelled');
  });
  await worker.waitUntilReady();

  return {
    worker,
    started,
    cancelled,
    async stop() {
      worker.cancelAllJobs('stub worker stopping');
      await worker.close();
      await subscriber.quit();
      await connection.quit();
    },
  };
}
