import os from 'node:os';
import { Queue, type ConnectionOptions, type JobType } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { queueKeys, type LeaseClass, type QueueKeys } from '../lease/index.js';
import { PlacementWatcher } from './placement-watcher.js';
import { childLogger, createLogger, type Logger } from '../platform/logger.js';
import type { Result } from '../spec/index.js';
import { createRedisClient, forBullMQ, missingDatabase, redactRedisUrl, redisDb, redisOptionsFromUrl } from '../platform/redis-connection.js';
import { checkEvictionPolicy } from '../platform/check-eviction-policy.js';
import { abortable } from '../platform/abortable.js';
import { RedisClock } from '../platform/redis-clock.js';
import { subscribeWhenReady } from '../platform/subscribe-when-ready.js';
import { SandboxSpecSchema } from '../spec/index.js';
import { ArtifactCache } from './artifact-cache.js';
import { detectContainment, gapNames, useContainment, type Containment } from '../sandbox/index.js';
import type { ChildPool } from './child-pool.js';
import { LeaseLedger } from './lease-ledger.js';
import { RolloutProcessor } from './rollout-processor.js';
import { triageWorkerError } from './worker-error-triage.js';
import { sweepDeadAttempts } from './dead-attempt-sweep.js';
import { serveMetrics, type MetricsEndpoint } from '../platform/metrics-endpoint.js';
import { compileWorkerOptions, type CompiledWorkerOptions, type WorkerOptions } from './worker-options.js';
import { WorkerMetrics } from './worker-metrics.js';
import { WorkerStartAborted } from './worker-start-aborted.js';
import { WriteBackoff } from './write-backoff.js';
import { redisTimeoutMs } from '../platform/redis-timeout.js';
import { RedisStallGuard } from './redis-stall-guard.js';
import { quietUntilWatched, RedisReachability } from './redis-reachability.js';
import { logWorkerStart } from './worker-start-log.js';
import { RunCancelWatch } from './run-cancel-watch.js';
import { bullConnectionFor, bullWorker, type RolloutBullWorker } from './bull-worker.js';
import { workerChildPool } from './worker-child-pool.js';
import { DueWorkWatch, LIVENESS_SAMPLE_MS, WORKER_INFO_TTL_MS } from './due-work-watch.js';
import { boundedBy } from './bounded-by.js';

/** Heap limit of a spec that names none (`sandbox.memoryMb`): the limit warm children are forked with. */
const DEFAULT_MEMORY_MB = SandboxSpecSchema.parse({}).memoryMb;

/** Settles as the given wait for Redis does, or rejects with `WorkerStartAborted` at the start's signal. */
type UntilAborted = <T>(work: Promise<T>) => Promise<T>;

/** Lifecycle of a worker; errors print the current state. */
export type WorkerState = 'starting' | 'running' | 'closing' | 'closed';

/** After the shutdown grace, how long to wait for BullMQ to hand leases back before giving up, ms. */
const CLOSE_MARGIN_MS = 5_000;

/**
 * A rollout worker: one BullMQ `Worker` whose processor runs in this process and drives a
 * supervised pool of child processes; its `concurrency` slots share `children` of them (many
 * rollouts per child). The lock stays with this process's event loop, which never runs rollout code.
 *
 * Create with {@link RolloutWorker.create}; stop with {@link RolloutWorker.close}.
 */
export class RolloutWorker {
  private state: WorkerState = 'starting';
  private closing: Promise<void> | undefined;
  /** Due work with no rollout started: the liveness check (see {@link health}). */
  private readonly dueWork = new DueWorkWatch();
  /** Whether Redis is reachable, as this worker's and BullMQ's clients report it. */
  private readonly reachability: RedisReachability;
  /** Cancel messages and cancelled run records: abort the run's active rollouts here. */
  private readonly cancels: RunCancelWatch;
  private livenessTimer: NodeJS.Timeout | undefined;
  private metricsEndpoint: MetricsEndpoint | undefined;
  /** The client handed to BullMQ in Cluster mode; BullMQ never closes a client it was given. */
  private sharedBullClient: Redis | Cluster | undefined;
  /** Port of the metrics endpoint when one was asked for (0 picks a free one). */
  metricsPort: number | undefined;
  /** BullMQ workers of the placement queues served here, by queue name. */
  private readonly placementWorkers = new Map<string, RolloutBullWorker>();
  private readonly watcher: PlacementWatcher;
  /** Pauses job intake with capped back-off while Redis refuses writes (OOM, EXECABORT, READONLY). */
  private readonly writeBackoff: WriteBackoff;
  /** A Redis that stops answering: `/healthz`, kept answers, locks taken back (docs/redis-trouble.md). */
  private readonly stallGuard: RedisStallGuard;

  private constructor(
    readonly options: CompiledWorkerOptions,
    private readonly keys: QueueKeys,
    private readonly logger: Logger,
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly queue: Queue,
    private readonly pool: ChildPool,
    private readonly processor: RolloutProcessor,
    private readonly metrics: WorkerMetrics,
    private readonly worker: RolloutBullWorker,
    /** How rollout attempts are contained here (chosen at start; see src/sandbox). */
    readonly containment: Containment,
    /** Re-sampled by each liveness sample, so its extrapolation never runs long. */
    private readonly clock: RedisClock,
  ) {
    this.reachability = new RedisReachability(logger, redactRedisUrl(options.redisUrl));
    this.cancels = new RunCancelWatch(redis, keys, processor, logger);
    this.watcher = new PlacementWatcher(redis, keys, options.labels, options.placementPollMs, (name, leaseClass) => this.serve(name, leaseClass), logger);
    const probeKey = keys.writeProbe();
    // Intake of every served queue (base and placement queues) pauses and resumes together.
    const intake = {
      pause: async (doNotWaitActive?: boolean) => void (await Promise.all(this.allWorkers().map((w) => w.pause(doNotWaitActive)))),
      resume: () => this.allWorkers().forEach((w) => w.resume()),
    };
    this.writeBackoff = new WriteBackoff(intake, () => redis.set(probeKey, options.name, 'PX', 10_000), logger, redactRedisUrl(options.redisUrl));
    this.stallGuard = new RedisStallGuard(
      redis,
      { address: redactRedisUrl(options.redisUrl), prefix: options.prefix, lockDurationMs: options.lockDurationMs, stalledIntervalMs: options.stalledIntervalMs, timeoutMs: redisTimeoutMs() },
      logger,
      () => this.allWorkers(),
      (leaseId) => this.countDropped(leaseId),
    );
    worker.answerKeeper = this.stallGuard.keeper;
  }

  /** A finished answer dropped because another attempt has its lease: a late duplicate, counted once. */
  private countDropped(leaseId: string): void {
    const runId = this.processor.finishing.get(leaseId);
    this.processor.finishing.delete(leaseId);
    this.countDuplicate(runId);
  }

  /** Counts a late duplicate answer: in the metrics, and in the run's record when its run is known. */
  private countDuplicate(runId: string | undefined): void {
    this.metrics.duplicate();
    if (runId !== undefined) void new LeaseLedger(this.redis, this.keys, this.options.maxRedispatches).countDuplicate(runId).catch(() => undefined);
  }

  /** The worker's name, as it appears in Results (`worker`) and BullMQ (`processedBy`). */
  get name(): string {
    return this.options.name;
  }

  /** Current lifecycle state. */
  get status(): WorkerState {
    return this.state;
  }

  /** Pids of this worker's live rollout children. */
  childPids(): number[] {
    return this.pool.pids();
  }

  /**
   * Starts a worker: picks the containment of rollout attempts (the strongest the host
   * allows, or what `containment` asks), removes what dead attempts left (work dirs, cgroups),
   * connects to Redis (retrying with backoff while it is unreachable), subscribes to
   * cancellations and starts consuming.
   * @throws Error naming the option when `options` are invalid.
   * @throws ContainmentError for `containment: 'sealed'` (or `'strict'`) on a host with any containment gap (each named with its fix).
   * @throws EvictionPolicyError when Redis may evict keys and `allowEviction` is not set.
   * @throws Error when Redis has no database of `redisUrl`'s number (`missingDatabase`).
   * @throws WorkerStartAborted when `control.signal` aborts while the start waits for Redis
   *   (the CLI's first SIGTERM when Redis went away after its preflight: else the start would
   *   wait for it for ever); what the start opened is closed first.
   */
  static async create(input: WorkerOptions = {}, control: { readonly signal?: AbortSignal } = {}): Promise<RolloutWorker> {
    const options = compileWorkerOptions(input);
    const containment = detectContainment(options.containment, { allowNetwork: options.allowNetwork, exposeReadOnly: options.exposeReadOnly });
    useContainment(containment);
    const keys = queueKeys(options.prefix, options.queue);
    const logger = childLogger(input.logger ?? createLogger({ component: 'worker' }), { worker: options.name, queue: options.queue });
    const redis = createRedisClient(options.redisUrl, { connectionName: `${options.prefix}:rollout-queue:ledger` });
    quietUntilWatched(redis, logger, redactRedisUrl(options.redisUrl));
    const untilAborted: UntilAborted = (work) => abortable(work, control.signal, (reason) => new WorkerStartAborted(reason));
    let clock: RedisClock;
    try {
      // Before any BullMQ client exists: a refused start is then one line, not BullMQ's warnings first.
      await untilAborted(checkEvictionPolicy(redis, logger, { refuse: !options.allowEviction }));
      const missing = await untilAborted(missingDatabase(redis, redactRedisUrl(options.redisUrl)));
      if (missing !== undefined) throw new Error(missing);
      clock = await untilAborted(RedisClock.start(redis));
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    const subscriber = createRedisClient(options.redisUrl, { connectionName: `${options.prefix}:rollout-queue:cancel` });
    quietUntilWatched(subscriber, logger, redactRedisUrl(options.redisUrl));
    const bullConnection = bullConnectionFor(options);
    const queue = new Queue(options.queue, { connection: bullConnection, prefix: options.prefix });
    const metrics = new WorkerMetrics();
    const pool = workerChildPool(options, logger, metrics, containment);
    let self: RolloutWorker | undefined;
    const processor = new RolloutProcessor(options, pool, new LeaseLedger(redis, keys, options.maxRedispatches), logger, {
      onResult: (kind, runMs) => metrics.result(kind, runMs),
      onRedispatch: (cause) => metrics.redispatch(cause),
      onStart: () => {
        self?.dueWork.rolloutStarted();
      },
    }, new ArtifactCache(redis, keys), clock);
    const worker = bullWorker(options.queue, options.concurrency, processor, options, bullConnection, clock);
    self = new RolloutWorker(options, keys, logger, redis, subscriber, queue, pool, processor, metrics, worker, containment, clock);
    if (bullConnection instanceof Redis || bullConnection instanceof Cluster) self.sharedBullClient = bullConnection;
    const self_ = self;
    metrics.bind({
      queue: options.queue,
      slots: options.concurrency,
      slotsBusy: () => processor.active.size,
      children: () => pool.pids().length,
      redisUp: () => !self_.reachability.down,
      jobCounts: (states) => queue.getJobCounts(...(states as JobType[])),
    });
    try {
      await self.start(untilAborted);
    } catch (err) {
      // Refused at start (eviction policy, metrics port) or aborted: leave no connection or child behind.
      await self.close({ graceMs: 0 }).catch(() => undefined);
      throw err;
    }
    return self;
  }

  /**
   * Starts a BullMQ worker on a placement queue (found by {@link PlacementWatcher}): its own
   * locks, stalled checks and concurrency (`evalConcurrency` for evaluations, else `concurrency`).
   */
  private serve(queueName: string, leaseClass: LeaseClass): void {
    if (this.state === 'closing' || this.state === 'closed' || this.placementWorkers.has(queueName)) return;
    const concurrency = leaseClass === 'evaluation' ? this.options.evalConcurrency : this.options.concurrency;
    const worker = bullWorker(queueName, concurrency, this.processor, this.options, forBullMQ(redisOptionsFromUrl(this.options.redisUrl)) as ConnectionOptions, this.clock);
    worker.answerKeeper = this.stallGuard.keeper;
    this.placementWorkers.set(queueName, worker);
    this.wire(worker);
    void worker.run().catch((err: unknown) => this.logger.error({ err, placementQueue: queueName }, 'worker loop stopped'));
    // Found while Redis refuses writes: paused like the others until the probe succeeds.
    if (this.writeBackoff.refusing) void worker.pause(true).catch(() => undefined);
  }

  /** Every BullMQ worker of this process: the base queue's, then the placement queues'. */
  private allWorkers(): RolloutBullWorker[] {
    return [this.worker, ...this.placementWorkers.values()];
  }

  private wire(worker: RolloutBullWorker): void {
    const { logger } = this;
    worker.on('error', (err) => this.onWorkerError(err));
    worker.on('completed', (job, result: Result | undefined) => {
      this.processor.finishing.delete(String(job.id));
      this.metrics.queued(result?.queuedMs ?? null);
    });
    worker.on('failed', (job) => job && this.processor.finishing.delete(String(job.id)));
    worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const leaseId of jobIds) void this.onLockLost(worker, leaseId);
    });
  }

  /**
   * A lock renewal failed: aborts the attempt so it cannot race the re-dispatched one, unless the
   * lock was lost to a Redis stall and nobody else took the lease (then it is taken back).
   */
  private async onLockLost(worker: RolloutBullWorker, leaseId: string): Promise<void> {
    if (await this.stallGuard.keepAfterLockLoss(worker, leaseId)) return;
    if (this.processor.abort({ leaseId }, 'lock-lost') > 0) this.logger.warn({ leaseId }, 'lock renewal failed; aborting the attempt so it cannot race the re-dispatched one');
  }

  /** @param untilAborted wraps each wait for Redis, so the start's signal ends it. */
  private async start(untilAborted: UntilAborted): Promise<void> {
    const { options, logger } = this;
    const address = redactRedisUrl(options.redisUrl);
    const { containment } = this;
    logWorkerStart(logger, options, containment, address);
    this.metrics.containment(containment.level, gapNames(containment.gaps));
    await sweepDeadAttempts(containment, logger, false);
    for (const client of [this.redis, this.subscriber]) this.reachability.watch(client);
    this.stallGuard.start();
    this.wire(this.worker);
    this.queue.on('error', (err) => this.onWorkerError(err));
    await untilAborted(subscribeWhenReady(this.subscriber, this.keys.cancelChannel(redisDb(this.redis))));
    this.subscriber.on('message', (_channel: string, runId: string) => void this.cancels.onMessage(runId));
    await untilAborted(this.publishInfo());
    if (options.metricsPort !== undefined) {
      this.metricsEndpoint = await serveMetrics(this.metrics.registry, { port: options.metricsPort, host: options.metricsHost, health: () => this.health() });
      this.metricsPort = this.metricsEndpoint.port;
    }
    this.livenessTimer = setInterval(() => void this.sampleLiveness(), LIVENESS_SAMPLE_MS);
    this.livenessTimer.unref();
    // Warm children before taking work: the first burst does not pay ~100 ms CPU per fork.
    await this.pool.warm(DEFAULT_MEMORY_MB, options.children);
    void this.worker.run().catch((err: unknown) => logger.error({ err }, 'worker loop stopped'));
    this.state = 'running';
    await untilAborted(this.watcher.start());
    logger.info({ redis: address }, 'worker running');
  }

  private onWorkerError(err: Error): void {
    triageWorkerError(err, { writeBackoff: this.writeBackoff, reachability: this.reachability, finishing: this.processor.finishing, countDuplicate: (runId) => this.countDuplicate(runId), logger: this.logger });
  }

  /**
   * Refreshes this worker's info key (containment level for `status`). Best effort: `status`
   * only shows it, so a Redis that refuses writes (OOM) must not stop the worker from starting;
   * the refusal goes to the write back-off like BullMQ's own, and the next sample retries.
   */
  private async publishInfo(): Promise<void> {
    const info = {
      containment: this.containment.level, gaps: this.containment.gaps, pid: process.pid, host: os.hostname(),
      labels: this.options.labels, placementQueues: [...this.placementWorkers.keys()],
    };
    try {
      await this.redis.set(this.keys.workerInfo(this.options.name), JSON.stringify(info), 'PX', WORKER_INFO_TTL_MS);
    } catch (err) {
      if (err instanceof Error) this.onWorkerError(err);
    }
  }

  /** Samples the queue for the liveness check: due work with free slots and no start here. */
  private async sampleLiveness(): Promise<void> {
    // Each command would wait out the timeout: the probe speaks for Redis meanwhile.
    if (this.stallGuard.silent) return;
    try {
      await this.publishInfo();
      await this.clock.sample();
      await this.cancels.abortCancelledRuns();
      // A failed sweep (a dir still being written) is retried by the next sample.
      await sweepDeadAttempts(this.containment, this.logger, true).catch(() => undefined);
      // Producers add rollouts with a priority (fair share between runs): they wait in `prioritized`.
      const waiting = await this.queue.getJobCountByTypes('waiting', 'prioritized');
      const free = this.processor.active.size < this.options.concurrency;
      this.dueWork.sample(waiting > 0 && free && this.state === 'running');
    } catch {
      // Redis unreachable: health() reports that.
    }
  }

  /**
   * Liveness: unhealthy when Redis is unreachable or refuses writes (OOM at `maxmemory`), or when work has been due (waiting jobs,
   * free slots here) for `livenessMs` without this worker starting a rollout, the mark of
   * a consumer stuck on a dead blocking connection (bullmq#4479, #4585).
   */
  health(): { ok: boolean; reason: string } {
    if (this.state !== 'running') return { ok: false, reason: `state ${this.state}` };
    if (this.reachability.down) return { ok: false, reason: `Redis at ${redactRedisUrl(this.options.redisUrl)} unreachable` };
    if (this.writeBackoff.refusing) return { ok: false, reason: `Redis at ${redactRedisUrl(this.options.redisUrl)} refuses writes (${this.writeBackoff.refusing})` };
    const silent = this.stallGuard.healthReason();
    if (silent) return { ok: false, reason: silent };
    const stuck = this.dueWork.stuckReason(this.options.livenessMs);
    if (stuck) return { ok: false, reason: stuck };
    return { ok: true, reason: `${this.processor.active.size}/${this.options.concurrency} slots busy` };
  }

  /**
   * Stops the worker: takes no new jobs, lets active rollouts finish for `graceMs`
   * (default `shutdownGraceMs`), then hands the rest back to the queue at once (no stall
   * wait, no re-dispatch counted: a planned shutdown is not a crash), kills every child and
   * closes connections. Idempotent; calling it again with `graceMs: 0` while closing hands
   * back at once. It never waits on Redis past `graceMs` + 5 s: with Redis unreachable the
   * worker still stops, and leases it could not hand back return through BullMQ's stalled check.
   */
  async close(options: { graceMs?: number } = {}): Promise<void> {
    const graceMs = options.graceMs ?? this.options.shutdownGraceMs;
    if (this.closing) {
      if (graceMs === 0) {
        this.processor.abort({}, 'shutdown');
        // A second "now": do not wait for a Redis that may never answer.
        return Promise.race([this.closing, new Promise<void>((resolve) => setTimeout(resolve, CLOSE_MARGIN_MS))]);
      }
      return this.closing;
    }
    this.state = 'closing';
    this.closing = (async () => {
      this.logger.info({ graceMs, active: this.processor.active.size }, 'worker closing');
      this.writeBackoff.close();
      const timer = setTimeout(() => this.processor.abort({}, 'shutdown'), graceMs);
      // BullMQ's close waits for Redis to acknowledge every finish and hand-back; with Redis
      // gone it would wait forever. Past the grace plus a margin, stop anyway: leases not
      // handed back return through BullMQ's stalled check once Redis is back. With nothing
      // active there is nothing for the grace to wait for (no new rollout starts once closing):
      // only the margin (fresh-user report: an idle worker with Redis down waited out 30 s).
      const waitMs = (this.processor.active.size > 0 ? graceMs : 0) + CLOSE_MARGIN_MS;
      let deadline: NodeJS.Timeout | undefined;
      const givenUp = new Promise<'timeout'>((resolve) => (deadline = setTimeout(() => resolve('timeout'), waitMs)));
      try {
        this.watcher.stop();
        await this.stallGuard.handInBeforeClose(CLOSE_MARGIN_MS);
        const how = await Promise.race([Promise.all(this.allWorkers().map((worker) => worker.close())).then(() => 'closed' as const), givenUp]);
        if (how === 'timeout') {
          this.logger.warn({ marginMs: CLOSE_MARGIN_MS }, 'could not hand leases back (Redis unreachable?); stopping anyway, they return through the stalled check');
          this.processor.abort({}, 'shutdown');
        }
      } finally {
        clearTimeout(timer);
        clearTimeout(deadline);
        clearInterval(this.livenessTimer);
        this.stallGuard.close();
        await this.pool.close();
        const connected = !this.reachability.down;
        if (connected) await boundedBy(CLOSE_MARGIN_MS, this.redis.del(this.keys.workerInfo(this.options.name)).catch(() => undefined));
        await boundedBy(CLOSE_MARGIN_MS, Promise.allSettled([
          connected ? this.queue.close() : this.queue.disconnect(),
          connected ? this.subscriber.quit() : this.subscriber.disconnect(),
          connected ? this.redis.quit() : this.redis.disconnect(),
          ...(connected ? [] : this.allWorkers().map((worker) => worker.disconnect())),
          this.metricsEndpoint?.close(),
        ]));
        this.sharedBullClient?.disconnect();
        this.state = 'closed';
        this.logger.info('worker closed');
      }
    })();
    return this.closing;
  }
}
