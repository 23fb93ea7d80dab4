import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { queueKeys, type QueueKeys } from '../lease/index.js';
import { redactRedisUrl, redisTopology } from '../platform/redis-connection.js';
import { bullTelemetry } from '../platform/telemetry.js';
import type { Result } from '../spec/index.js';
import { checkCallOptions, checkDraftSource } from './call-options.js';
import { cancelRun, type CancelOutcome } from './cancel-run.js';
import { checkEvictionPolicy } from '../platform/check-eviction-policy.js';
import { RedisClock } from '../platform/redis-clock.js';
import { connectProducerRedis } from './connect-producer-redis.js';
import { compileProducerOptions, type CompiledProducerOptions, type ProducerOptions } from './producer-options.js';
import { refuseRepeatedLeases, type RolloutDraft } from './rollout-draft.js';
import { RunNotFoundError } from './run-not-found-error.js';
import { purgeOlderThan, purgeRun, RunActiveError, type PurgeOlderOutcome, type PurgeOptions, type PurgeOutcome } from './purge-run.js';
import { RunSession } from './run-session.js';
import { DEFAULT_RUN_WEIGHT } from './fair-share.js';
import { ResultDeliveredError } from './run-stopped-error.js';
import { PlacementQueues } from './placement-queues.js';
import { RunStore } from './run-store.js';
import { checkRunId, COORDINATOR_OPTIONS, MAP_ROLLOUTS_OPTIONS, mapRolloutsPlanPart, noteOf, ROLLOUT_OPTIONS, type CoordinatorOptions, type MapRolloutsOptions } from './coordinator-call-options.js';
import { readQueueStatus, type QueueStatus } from './queue-status.js';
import { RunWrapUps } from './run-wrap-ups.js';
import { ResultListener } from './result-events.js';

/** Lifecycle of a {@link RolloutQueue}; errors print it. */
export type RolloutQueueState = 'starting' | 'running' | 'closing' | 'closed';

const runIdOf = (leaseId: string): string => leaseId.slice(0, leaseId.indexOf('.'));

/**
 * The coordinator's side of rollout-queue: enqueues rollout specs as BullMQ jobs (one per lease,
 * job id = lease id) and delivers every lease's one Result, durably, across coordinator restarts.
 * Make one with {@link RolloutQueue.create}; {@link close} it when done.
 */
export class RolloutQueue {
  private stateValue: RolloutQueueState = 'starting';
  private closing: Promise<void> | undefined;
  private readonly sessions = new Map<string, RunSession>();
  /** Wrap-ups of runs whose last Result was delivered (see {@link settled}). */
  private readonly wrapUps: RunWrapUps;
  private readonly keys: QueueKeys;
  private readonly store: RunStore;
  /** The base queue and its placement queues (one BullMQ queue per distinct placement and class). */
  private readonly placements: PlacementQueues;
  /** Tells live sessions of finished jobs; unless `queueEvents: false` (started by {@link create}). */
  private readonly results: ResultListener;

  private constructor(
    readonly options: CompiledProducerOptions,
    private readonly redis: Redis,
    private readonly queue: Queue,
  ) {
    this.keys = queueKeys(options.prefix, options.queue);
    this.store = new RunStore(redis, this.keys, redisTopology(options.redisUrl) === 'sentinel');
    this.placements = new PlacementQueues(queue, redis, this.keys, options.tracing);
    this.wrapUps = new RunWrapUps(redis, this.keys, options.logger);
    this.results = new ResultListener(redis, { queue: options.queue, prefix: options.prefix, eventsKey: queue.toKey('events') }, {
      completed: (jobId, returnvalue) => this.sessions.get(runIdOf(jobId))?.onCompleted(jobId, returnvalue),
      failed: (jobId) => this.sessions.get(runIdOf(jobId))?.onFailed(jobId),
    }, options.logger);
  }

  /**
   * Connects to Redis (see `connectProducerRedis` for why the producer reconnects forever
   * instead of failing fast), warns when `maxmemory-policy` is not `noeviction`, and opens the
   * BullMQ `Queue` and (unless `queueEvents: false`) a `QueueEvents` listener.
   * @throws Error for invalid options (naming the option), or when Redis is unreachable within `connectTimeoutMs`.
   */
  static async create(input: ProducerOptions = {}): Promise<RolloutQueue> {
    const options = compileProducerOptions(input);
    const logger = options.logger;
    const address = redactRedisUrl(options.redisUrl);
    const redis = await connectProducerRedis(options.redisUrl, options.connectTimeoutMs, logger);
    const queue = new Queue(options.queue, {
      prefix: options.prefix,
      connection: redis,
      skipMetasUpdate: !options.writeQueueMeta,
      ...(options.tracing ? { telemetry: bullTelemetry(true) } : {}),
    });
    queue.on('error', (err: Error) => logger.warn({ err: err.message }, 'BullMQ queue error'));
    const rq = new RolloutQueue(options, redis, queue);
    try {
      await checkEvictionPolicy(redis, logger);
      // One clock for the times the run's record keeps (createdAt, restoredAt): Redis TIME.
      rq.store.useClock(await RedisClock.start(redis));
      await queue.waitUntilReady();
      if (options.queueEvents) await rq.results.start();
    } catch (err) {
      await rq.close();
      throw err;
    }
    rq.stateValue = 'running';
    logger.info({ redis: address, queue: options.queue, prefix: options.prefix, maxInFlight: options.maxInFlight }, 'rollout queue ready');
    return rq;
  }

  /** `starting | running | closing | closed`. */
  get state(): RolloutQueueState {
    return this.stateValue;
  }

  /**
   * Runs every draft as one rollout and yields each lease's Result once, in completion order
   * (docs/design.md "Producer"):
   * - a draft that fails validation, is over `maxSpecBytes` or holds a secret value is never
   *   enqueued: it yields a `caller` Result (`InvalidSpec`, `SecretInSpec`);
   * - a `caller` Result stops the run (with `stopOnCaller`): it is yielded, the run's waiting
   *   jobs are removed, nothing more is enqueued, then {@link RunStoppedError} is thrown;
   * - `model` and `infrastructure` Results are yielded like `ok` ones, never thrown;
   * - each Result is acknowledged in Redis when the consumer asks for the next one or breaks,
   *   so a coordinator killed mid-run and called again with the same runId enqueues nothing
   *   twice and yields exactly the Results not yet acknowledged;
   * - aborting `signal` cancels the run and throws {@link AbortError};
   * - a run stopped or cancelled earlier enqueues nothing: its undelivered Results are yielded,
   *   then {@link RunStoppedError} says so.
   * - delivery is fenced by the run's coordinator lease: a Result is yielded or acknowledged only
   *   while this process holds it, so two coordinators never both deliver one lease; a lost lease
   *   is retaken when free (Results another coordinator delivered meanwhile are not yielded);
   * - a lease no worker starts or finishes in time (`timeouts.scheduleToStartMs`,
   *   `scheduleToCloseMs`) yields an `infrastructure` Result (`NoWorker`, `DeadlineExceeded`);
   * - once every Result is delivered the run's keys expire after `retainMs`.
   * An empty array returns at once with no Results. One live iterator per run per RolloutQueue.
   * @throws (from the iterator) RunStoppedError, AbortError, RunBusyError (another coordinator
   * delivers the run), CoordinatorLeaseLostError (it took this one's lease and kept it), the
   * closed-queue error after `close()`, or an error from the draft source or from enqueuing
   * (the run stays resumable).
   * @throws Error synchronously when the queue is closed or `runId` is invalid, and
   *   DuplicateLeaseError when two drafts of an array name one lease (nothing is enqueued; in
   *   a stream the repeat gets its own `caller` Result, `DuplicateLease`).
   */
  mapRollouts(drafts: Iterable<RolloutDraft> | AsyncIterable<RolloutDraft>, options: MapRolloutsOptions): AsyncGenerator<Result, void, undefined> {
    this.assertOpen();
    checkDraftSource('mapRollouts', drafts);
    checkCallOptions('mapRollouts', options, MAP_ROLLOUTS_OPTIONS, 'runId');
    const runId = checkRunId(options.runId);
    if (Array.isArray(drafts) && drafts.length === 0) return (async function* empty() {})();
    if (Array.isArray(drafts)) refuseRepeatedLeases(runId, drafts);
    const specCount = Array.isArray(drafts) ? drafts.length : options.specCount;
    return this.session({ runId, drafts, signal: options.signal, runAttemptId: options.runAttemptId ?? randomUUID(), specCount, ...mapRolloutsPlanPart(options), stopOnCaller: this.options.stopOnCaller });
  }

  /**
   * Yields every Result of an existing run not yet acknowledged (a new coordinator taking over
   * after a crash), waiting for unfinished leases. Enqueues nothing.
   * @throws Error at the end when the run's record counts specs that were never enqueued
   * (re-run `mapRollouts` with the specs), `RunStoppedError` for a stopped/cancelled run (after
   * yielding what it had left), `RunNotFoundError` (from the iterator) when the queue has no such
   * run, and synchronously when the queue is closed or the run id is invalid.
   */
  attach(runId: string, options: CoordinatorOptions = {}): AsyncGenerator<Result, void, undefined> {
    this.assertOpen();
    checkCallOptions('attach', options, COORDINATOR_OPTIONS);
    return this.session({ runId: checkRunId(runId), drafts: undefined, signal: options.signal, runAttemptId: randomUUID(), specCount: undefined, ...noteOf(options), stopOnCaller: this.options.stopOnCaller, weight: DEFAULT_RUN_WEIGHT });
  }

  /**
   * Runs one draft as a one-spec run and returns its Result; a `caller` Result is returned, not
   * thrown. `runId` defaults to `single-<uuid>`. Returns the Result as soon as it is read; its
   * acknowledgement, then the run's completion mark and retention, follow in the background
   * ({@link settled}; `close()` waits for them). A process killed before the acknowledgement
   * gets the Result again from a new session of the run (at least once, as `mapRollouts`'
   * batched acknowledgements), counted once.
   * @throws Error when the queue is closed, or when a `rollout()`, `mapRollouts()` or `attach()`
   *   of the same `runId` is still running on this queue.
   * @throws ResultDeliveredError when the run's Result was delivered before (a reused runId).
   * @throws AbortError when `signal` aborts (the rollout is cancelled).
   */
  async rollout(draft: RolloutDraft, options: { readonly runId?: string; readonly signal?: AbortSignal } = {}): Promise<Result> {
    this.assertOpen();
    checkCallOptions('rollout', options, ROLLOUT_OPTIONS);
    const runId = checkRunId(options.runId ?? `single-${randomUUID()}`);
    const results = this.session({ runId, drafts: [draft], signal: options.signal, runAttemptId: randomUUID(), specCount: 1, stopOnCaller: false, weight: DEFAULT_RUN_WEIGHT });
    for await (const result of results) return result;
    throw new ResultDeliveredError(runId);
  }

  /**
   * Cancels a run without a live iterator (the CLI's `cancel`): status `cancelled`, workers
   * told to abort its active rollouts, its waiting jobs removed. A live iterator of the run in
   * this process throws `AbortError`; in another process it does so at its next reconciliation.
   * @throws RunNotFoundError when the queue has no such run.
   * @throws Error when the queue is closed.
   */
  async cancel(runId: string, reason = 'cancelled by RolloutQueue.cancel'): Promise<CancelOutcome> {
    this.assertOpen();
    checkRunId(runId);
    // The session running the run now is told; one opened meanwhile (a drain's attach, CI under
    // load) reads the cancelled record and delivers the running rollouts' Results as an ended run's.
    const running = this.sessions.get(runId);
    const outcome = await cancelRun(this.redis, this.placements, this.store, this.options.logger, runId, reason);
    if (!outcome.found) throw new RunNotFoundError(runId, this.options.queue, this.options.prefix, 'nothing to cancel');
    running?.cancelledElsewhere(reason);
    return outcome;
  }

  /**
   * Removes a finished run from Redis now (see `purgeRun`): its jobs, lease hashes, stored
   * artifacts and records. Returns how many leases it had.
   * @throws RunActiveError while the run is running, being delivered, or has active rollouts.
   * @throws UndeliveredResultsError when Results of it finished but were never delivered, unless
   *   `options.discardUndelivered`.
   * @throws RunNotFoundError when no run of that id is on the queue (never made, or past its retention).
   * @throws Error when the queue is closed.
   */
  async purge(runId: string, options: PurgeOptions = {}): Promise<PurgeOutcome> {
    this.assertOpen();
    checkRunId(runId);
    if (this.sessions.has(runId)) throw new RunActiveError(runId, 'has a live iterator in this process', 'iterator');
    await this.settled(runId);
    const outcome = await purgeRun(this.redis, this.placements, this.keys, runId, options);
    if (!outcome.found) throw new RunNotFoundError(runId, this.options.queue, this.options.prefix, 'nothing to purge (a run past its retention is gone already)');
    this.options.logger.info({ runId, leases: outcome.leases, undelivered: outcome.undelivered }, 'run purged');
    return outcome;
  }

  /**
   * Purges every run that ended at least `ageMs` ago (Redis clock); running or active runs, and
   * runs with undelivered Results unless `options.discardUndelivered`, are skipped and listed with why.
   * @throws Error when the queue is closed.
   */
  async purgeOlderThan(ageMs: number, options: PurgeOptions = {}): Promise<PurgeOlderOutcome> {
    this.assertOpen();
    if (!Number.isSafeInteger(ageMs) || ageMs < 0) throw new Error(`purgeOlderThan: ageMs must be a whole number of ms >= 0, got ${ageMs}`);
    await this.settled();
    return purgeOlderThan(this.redis, this.placements, this.keys, ageMs, options);
  }

  /**
   * The leases of a run whose Result is still to be delivered and will come: enqueued, not
   * acknowledged, and with a job still in its queue (waiting, running, or finished in Redis) or a
   * verdict the coordinator stored (`NoWorker`, `DeadlineExceeded`). What `attach` would yield,
   * less the leases that never get a Result: waiting jobs a cancel or stop removed. Two round
   * trips, one more per lease whose queue this process does not know.
   * @throws Error when the queue is closed; a Redis error.
   */
  async pendingResults(runId: string): Promise<string[]> {
    this.assertOpen();
    const open = await this.store.undeliveredLeases(checkRunId(runId));
    if (open.length === 0) return [];
    await this.placements.resolve(open);
    const pipe = this.redis.pipeline();
    for (const leaseId of open) pipe.exists(this.placements.leaseKey(leaseId)).hexists(this.keys.runVerdicts(runId), leaseId);
    const replies = (await pipe.exec()) ?? [];
    return open.filter((_, i) => replies[2 * i]?.[1] === 1 || replies[2 * i + 1]?.[1] === 1);
  }

  /** Job counts of the queue, the run record (when `runId` is given) and the queue's workers. */
  async status(runId?: string): Promise<QueueStatus> {
    this.assertOpen();
    // Read after what this process did: a run rollout() returned is completed and retained.
    await this.settled();
    return readQueueStatus(this.redis, this.queue, this.placements, this.keys, { queue: this.options.queue, prefix: this.options.prefix }, runId === undefined ? undefined : checkRunId(runId));
  }

  /**
   * Ends every live iterator (they throw the closed error; nothing more is acknowledged, so
   * the Result a consumer holds is delivered again after a restart), waits for the wrap-ups of
   * delivered runs (see {@link settled}; at most `COORDINATOR_LEASE_MS`) and closes QueueEvents,
   * the Queue and the Redis connection. Idempotent.
   */
  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.stateValue = 'closing';
      // The consumer gets the error when it next asks, so it names the state at that time.
      for (const session of this.sessions.values()) session.abandon(() => this.closedError());
      await this.wrapUps.awaitAll();
      await this.results.close();
      await this.placements.close();
      await this.queue.close().catch(() => undefined);
      if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
      else this.redis.disconnect();
      this.stateValue = 'closed';
    })();
    return this.closing;
  }

  /**
   * Resolves once the wrap-up of runs whose last Result was delivered is done (the run of
   * `runId`, or every run): `rollout()` and a consumer breaking out return at once, while the
   * acknowledgement of the Results they took, the run's completion mark, retention and
   * coordinator lease release finish in the background. `status`, `purge`, `purgeOlderThan` and `close`
   * wait for it themselves. Never rejects (a failed wrap-up is logged; the next session of the
   * run completes it).
   */
  async settled(runId?: string): Promise<void> {
    return this.wrapUps.settled(runId);
  }

  private session(plan: ConstructorParameters<typeof RunSession>[1]): AsyncGenerator<Result, void, undefined> {
    const session = new RunSession({
      redis: this.redis, queue: this.placements, keys: this.keys, store: this.store, logger: this.options.logger, placementFor: this.options.placementFor, costCeilingUsd: this.options.costCeilingUsd,
      maxInFlight: this.options.maxInFlight, maxHeldResults: this.options.maxHeldResults, fairShare: this.options.fairShare, maxUnacknowledged: this.options.maxUnacknowledged, maxSpecBytes: this.options.maxSpecBytes, maxTaskBytes: this.options.maxTaskBytes, reconcileMs: this.options.reconcileMs,
      retainMs: this.options.retainMs,
      afterDelivery: (runId, work) => this.wrapUps.track(runId, work),
      wrappedUp: (runId) => this.wrapUps.of(runId),
      register: (s) => {
        this.assertOpen();
        if (this.sessions.has(s.runId)) throw new Error(`run "${s.runId}" is already being collected on this RolloutQueue (by a rollout(), mapRollouts() or attach() call not yet finished); await that call, or use another runId (one live call per run)`);
        this.sessions.set(s.runId, s);
      },
      unregister: (s) => {
        if (this.sessions.get(s.runId) === s) this.sessions.delete(s.runId);
      },
    }, plan);
    return session.results();
  }

  private closedError(): Error {
    return new Error(`RolloutQueue is closed (state: ${this.stateValue}); create a new one`);
  }

  private assertOpen(): void {
    if (this.stateValue === 'closing' || this.stateValue === 'closed') throw this.closedError();
  }
}
