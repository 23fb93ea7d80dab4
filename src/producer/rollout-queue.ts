import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { queueKeys, readRunCost, readRunRecord, type QueueKeys, type RunRecord } from '../lease/index.js';
import { duplicateForBullMQ, redactRedisUrl, redisTopology } from '../platform/redis-connection.js';
import { bullTelemetry } from '../platform/telemetry.js';
import { isRunId, MAX_ID_LENGTH, RunIdSchema, type CostSummary, type Result } from '../spec/index.js';
import { checkCallOptions, checkDraftSource } from './call-options.js';
import { cancelRun, type CancelOutcome } from './cancel-run.js';
import { checkEvictionPolicy } from '../platform/check-eviction-policy.js';
import { RedisClock } from '../platform/redis-clock.js';
import { connectProducerRedis } from './connect-producer-redis.js';
import { compileProducerOptions, type CompiledProducerOptions, type ProducerOptions } from './producer-options.js';
import { refuseRepeatedLeases, type RolloutDraft } from './rollout-draft.js';
import { RunNotFoundError } from './run-not-found-error.js';
import { purgeOlderThan, purgeRun, RunActiveError, type PurgeOlderOutcome, type PurgeOptions, type PurgeOutcome } from './purge-run.js';
import { COORDINATOR_LEASE_MS, leaseHolder } from './coordinator-lease.js';
import { PRUNE_EVERY_RUNS, pruneRunList } from './run-list-pruner.js';
import { RunSession, type SessionPlan } from './run-session.js';
import { checkRunWeight, DEFAULT_RUN_WEIGHT } from './fair-share.js';
import { readRunShares, type RunShareStatus } from './run-shares.js';
import type { RunReuse } from './run-reuse.js';
import { ResultDeliveredError } from './run-stopped-error.js';
import { PlacementQueues, type PlacementStatus } from './placement-queues.js';
import { RunStore } from './run-store.js';

/** Lifecycle of a {@link RolloutQueue}; errors print it. */
export type RolloutQueueState = 'starting' | 'running' | 'closing' | 'closed';

/** Options of {@link RolloutQueue.mapRollouts}. */
export interface MapRolloutsOptions {
  /** Names the run; part of every lease id. Letters, digits, `_`, `-`. Re-using it resumes the run. */
  readonly runId: string;
  /** Aborting cancels the run (waiting jobs removed, workers told) and the iterator throws `AbortError`. */
  readonly signal?: AbortSignal;
  /** Names this submission of the run. Default: a random UUID for a new run; a resumed run keeps its stored one. */
  readonly runAttemptId?: string;
  /** Number of drafts, when known and `drafts` is not an array (an array's length is used). Shown by `status`. */
  readonly specCount?: number;
  /**
   * An opaque fingerprint of what the drafts were made from (e.g. a hash of the tasks file and
   * the artifact), stored with a new run's record and shown by `status` (`run.sourceFingerprint`)
   * so a caller can refuse to resume a run id with other inputs (the CLI's `run` does). An
   * existing run keeps its own. At most 200 characters.
   */
  readonly sourceFingerprint?: string;
  /** See {@link CoordinatorOptions.coordinatorNote}. */
  readonly coordinatorNote?: string;
  /** See {@link CoordinatorOptions.checkPreviousNote}. */
  readonly checkPreviousNote?: (previous: string | null) => void | Promise<void>;
  /**
   * Called once, after every draft was read, when some drafts name leases this run id delivered
   * before this call (a run id used again): those drafts are neither run nor yielded again, even
   * if changed; `reuse.nothingNew` says the call yields no Result at all. A warning says the same
   * either way. Throwing from it ends the iteration with that error (new leases of the call may
   * be enqueued already: the run stays resumable). See {@link RunReuse} for the ways out.
   */
  readonly onDeliveredBefore?: (reuse: RunReuse) => void;
  /**
   * This call re-attaches to its own run: the same drafts under the same run id after its
   * coordinator stopped (the CLI's `run --run-id`, which refuses other inputs). Drafts delivered
   * before are then the expected path, logged at info as progress (`runReattachText`) instead of
   * the warning pointing at a new run id; `onDeliveredBefore` is called all the same. Default
   * false: a library caller reusing a run id by mistake is warned.
   */
  readonly reattach?: boolean;
  /**
   * The run's share of the queue's workers, relative to the other runs with jobs waiting on the
   * same queue: a run of weight 2 gets two slots for each one of a weight-1 run; alone, a run
   * gets every slot. Each job's BullMQ priority comes from a per-queue virtual clock, so a run
   * started after a large one begins within a few Results of it, not after its whole
   * `maxInFlight` window (docs/fair-share.md). 0.01–100, default 1 (equal shares). Jobs that
   * other clients add without a priority are served before every run's.
   */
  readonly weight?: number;
}

/** The names of {@link MapRolloutsOptions}, {@link CoordinatorOptions} and `rollout`'s options, checked at run time. */
const MAP_ROLLOUTS_OPTIONS = ['runId', 'signal', 'runAttemptId', 'specCount', 'sourceFingerprint', 'coordinatorNote', 'checkPreviousNote', 'onDeliveredBefore', 'reattach', 'weight'] as const satisfies readonly (keyof MapRolloutsOptions)[];
const COORDINATOR_OPTIONS = ['signal', 'coordinatorNote', 'checkPreviousNote'] as const satisfies readonly (keyof CoordinatorOptions)[];
const ROLLOUT_OPTIONS = ['runId', 'signal'] as const;

/** Options of {@link RolloutQueue.attach}. */
export interface CoordinatorOptions {
  /** Aborting cancels the run (waiting jobs removed, workers told) and the iterator throws `AbortError`. */
  readonly signal?: AbortSignal;
  /**
   * What this coordinator says of itself (the CLI: the absolute results file it writes),
   * written to the run's record once the session holds the run's coordinator lease, so a
   * coordinator refused as busy never overwrites the note of the one that delivers; read back as
   * `status(runId).run.coordinatorNote`. At most 4096 characters.
   */
  readonly coordinatorNote?: string;
  /**
   * Called once the session holds the coordinator lease of a run that is not completed, before
   * it stores `coordinatorNote` or delivers anything, with the note the run's previous
   * coordinator stored (null: none). Throwing gives the run up untouched: the lease is released
   * and the iterator throws that error. The CLI refuses a results file other than the one a
   * previous coordinator filled with the run's Results (one run's Results, one file).
   */
  readonly checkPreviousNote?: (previous: string | null) => void | Promise<void>;
}

/** What {@link RolloutQueue.status} reports. */
export interface QueueStatus {
  readonly queue: string;
  readonly prefix: string;
  /** BullMQ `getJobCounts()`: jobs per state in the whole queue (all runs). */
  readonly counts: Readonly<Record<string, number>>;
  /** The run record, when a run id was given (null when there is no such run). */
  readonly run: RunRecord | null | undefined;
  /** Redis clients of workers on this queue in this database (BullMQ `getWorkers()`, raw CLIENT LIST fields; see `PlacementQueues.liveWorkers`). */
  readonly workers: readonly Record<string, string>[];
  /** The placement queues of this queue (one per distinct placement and class), with waiting jobs and workers each. */
  readonly placements: readonly PlacementStatus[];
  /** Cost receipts recorded for the run so far (when a run id was given): total USD (`null`: none), units, per label. */
  readonly cost?: CostSummary;
  /**
   * With a run id of an existing run: whether a coordinator holds the run's lease now (it is
   * delivering Results). False for a run whose coordinator is gone (a CLI run interrupted): its
   * Results wait in Redis for `attach` (the CLI's `resume`).
   */
  readonly delivering?: boolean;
  /**
   * While `delivering`: the process that holds the run's coordinator lease, as it recorded itself
   * (pid and `os.hostname()`). A holder killed with SIGKILL stays here until its lease lapses,
   * within `COORDINATOR_LEASE_MS` (6 s).
   */
  readonly coordinator?: { readonly pid: number | null; readonly host: string | null };
  /** Every run with jobs waiting or active on the queue: weight, jobs waiting and active, its share (docs/fair-share.md). */
  readonly shares: readonly RunShareStatus[];
}

const runIdOf = (leaseId: string): string => leaseId.slice(0, leaseId.indexOf('.'));

/** Longest `coordinatorNote`, characters. */
const MAX_NOTE_LENGTH = 4096;

/**
 * The session plan's part for `options.coordinatorNote`.
 * @throws TypeError when it is not a string of 1 to {@link MAX_NOTE_LENGTH} characters.
 */
function noteOf(options: CoordinatorOptions): Pick<SessionPlan, 'coordinatorNote' | 'checkPreviousNote'> {
  const { coordinatorNote: note, checkPreviousNote: check } = options as { coordinatorNote?: unknown; checkPreviousNote?: unknown };
  if (check !== undefined && typeof check !== 'function') throw new TypeError('option checkPreviousNote must be a function; omit it to check nothing');
  const checked = check !== undefined ? { checkPreviousNote: options.checkPreviousNote } : {};
  if (note === undefined) return checked;
  if (typeof note !== 'string' || note.length === 0 || note.length > MAX_NOTE_LENGTH) {
    throw new TypeError(`option coordinatorNote must be a string of 1 to ${MAX_NOTE_LENGTH} characters; omit it to store none`);
  }
  return { coordinatorNote: note, ...checked };
}

/**
 * The coordinator's side of rollout-queue: enqueues rollout specs as BullMQ jobs (one per lease,
 * job id = lease id) and delivers every lease's one Result, durably, across coordinator restarts.
 * Make one with {@link RolloutQueue.create}; {@link close} it when done.
 */
export class RolloutQueue {
  private stateValue: RolloutQueueState = 'starting';
  private closing: Promise<void> | undefined;
  private readonly sessions = new Map<string, RunSession>();
  /** Wrap-ups of runs whose last Result was delivered (see {@link settled}); each never rejects. */
  private readonly wrapUps = new Map<string, Promise<void>>();
  /** Wrap-ups tracked, modulo {@link PRUNE_EVERY_RUNS}: every that many, the run list is pruned. */
  private wrapUpCount = 0;
  private readonly keys: QueueKeys;
  private readonly store: RunStore;
  /** The base queue and its placement queues (one BullMQ queue per distinct placement and class). */
  private readonly placements: PlacementQueues;
  private events: QueueEvents | undefined;
  /** The never-connected client QueueEvents duplicates (see {@link RolloutQueue.listen}). */
  private eventsTemplate: Redis | undefined;

  private constructor(
    readonly options: CompiledProducerOptions,
    private readonly redis: Redis,
    private readonly queue: Queue,
  ) {
    this.keys = queueKeys(options.prefix, options.queue);
    this.store = new RunStore(redis, this.keys, redisTopology(options.redisUrl) === 'sentinel');
    this.placements = new PlacementQueues(queue, redis, this.keys, options.tracing);
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
      if (options.queueEvents) await rq.listen();
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
    const runId = this.checkRunId(options.runId);
    if (Array.isArray(drafts) && drafts.length === 0) return (async function* empty() {})();
    if (Array.isArray(drafts)) refuseRepeatedLeases(runId, drafts);
    const specCount = Array.isArray(drafts) ? drafts.length : options.specCount;
    const fingerprint = options.sourceFingerprint;
    if (fingerprint !== undefined && (typeof fingerprint !== 'string' || fingerprint.length === 0 || fingerprint.length > MAX_ID_LENGTH)) {
      throw new TypeError(`mapRollouts option sourceFingerprint must be a string of 1 to ${MAX_ID_LENGTH} characters (a hash of the inputs); omit it to store none`);
    }
    const onDeliveredBefore = options.onDeliveredBefore as unknown;
    if (onDeliveredBefore !== undefined && typeof onDeliveredBefore !== 'function') throw new TypeError('mapRollouts option onDeliveredBefore must be a function (reuse) => void; omit it to be told by the warning only');
    const reattach = options.reattach as unknown;
    if (reattach !== undefined && typeof reattach !== 'boolean') throw new TypeError('mapRollouts option reattach must be true or false; omit it for false (a run id used again is warned about)');
    const weight = checkRunWeight(options.weight, 'mapRollouts option weight');
    return this.session({ reattach: reattach === true, runId, drafts, signal: options.signal, runAttemptId: options.runAttemptId ?? randomUUID(), specCount, ...(fingerprint !== undefined ? { sourceFingerprint: fingerprint } : {}), ...noteOf(options), stopOnCaller: this.options.stopOnCaller, onDeliveredBefore: options.onDeliveredBefore, weight });
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
    return this.session({ runId: this.checkRunId(runId), drafts: undefined, signal: options.signal, runAttemptId: randomUUID(), specCount: undefined, ...noteOf(options), stopOnCaller: this.options.stopOnCaller, weight: DEFAULT_RUN_WEIGHT });
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
    const runId = this.checkRunId(options.runId ?? `single-${randomUUID()}`);
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
    this.checkRunId(runId);
    const outcome = await cancelRun(this.redis, this.placements, this.store, this.options.logger, runId, reason);
    if (!outcome.found) throw new RunNotFoundError(runId, this.options.queue, this.options.prefix, 'nothing to cancel');
    this.sessions.get(runId)?.cancelledElsewhere(reason);
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
    this.checkRunId(runId);
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
    const open = await this.store.undeliveredLeases(this.checkRunId(runId));
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
    const [counts, run, workers, placements, shares] = await Promise.all([
      this.queue.getJobCounts(),
      runId === undefined ? Promise.resolve(undefined) : readRunRecord(this.redis, this.keys, this.checkRunId(runId)).then((r) => r ?? null),
      this.placements.getWorkers(),
      this.placements.describe(),
      readRunShares(this.redis, this.placements, this.keys),
    ]);
    const [cost, holder] = run ? await Promise.all([readRunCost(this.redis, this.keys, run.runId), this.redis.get(this.keys.runCoordinator(run.runId))]) : [undefined, null];
    return {
      queue: this.options.queue, prefix: this.options.prefix, counts, run, workers, placements, shares, ...(cost ? { cost } : {}),
      ...(run ? { delivering: holder !== null } : {}), ...(holder !== null ? { coordinator: leaseHolder(holder) } : {}),
    };
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
      await this.awaitWrapUps();
      await this.events?.close().catch(() => undefined);
      this.eventsTemplate?.disconnect();
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
    if (runId !== undefined) return this.wrapUps.get(runId);
    await Promise.all(this.wrapUps.values());
  }

  private track(runId: string, work: () => Promise<void>): void {
    this.wrapUpCount = (this.wrapUpCount + 1) % PRUNE_EVERY_RUNS;
    const prune = this.wrapUpCount === 0;
    const done = work().catch((err: Error) => {
      this.options.logger.warn({ runId, err: err.message }, 'wrapping up a delivered run failed; the next session of the run (mapRollouts or attach with its runId) completes it');
    }).then(() => prune ? this.pruneRuns() : undefined);
    this.wrapUps.set(runId, done);
    void done.then(() => {
      if (this.wrapUps.get(runId) === done) this.wrapUps.delete(runId);
    });
  }

  /** Takes expired runs out of the run list (see `pruneRunList`); a failure only waits for the next prune. */
  private async pruneRuns(): Promise<void> {
    const pruned = await pruneRunList(this.redis, this.keys).catch((err: Error) => {
      this.options.logger.debug({ err: err.message }, 'pruning the run list failed; the next prune retries');
      return 0;
    });
    if (pruned > 0) this.options.logger.debug({ pruned }, 'expired runs taken out of the run list');
  }

  private session(plan: ConstructorParameters<typeof RunSession>[1]): AsyncGenerator<Result, void, undefined> {
    const session = new RunSession({
      redis: this.redis, queue: this.placements, keys: this.keys, store: this.store, logger: this.options.logger, placementFor: this.options.placementFor, costCeilingUsd: this.options.costCeilingUsd,
      maxInFlight: this.options.maxInFlight, maxHeldResults: this.options.maxHeldResults, fairShare: this.options.fairShare, maxUnacknowledged: this.options.maxUnacknowledged, maxSpecBytes: this.options.maxSpecBytes, maxTaskBytes: this.options.maxTaskBytes, reconcileMs: this.options.reconcileMs,
      retainMs: this.options.retainMs,
      afterDelivery: (runId, work) => this.track(runId, work),
      wrappedUp: (runId) => this.wrapUps.get(runId) ?? Promise.resolve(),
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

  /**
   * Waits for the wrap-ups in flight, at most {@link COORDINATOR_LEASE_MS}: Redis unreachable
   * for longer, their lease has expired anyway and the next session of each run completes it.
   */
  private async awaitWrapUps(): Promise<void> {
    if (this.wrapUps.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), COORDINATOR_LEASE_MS)));
    const timedOut = await Promise.race([this.settled().then(() => false), late]);
    clearTimeout(timer);
    if (timedOut) this.options.logger.warn({ runs: [...this.wrapUps.keys()] }, `close(): runs still wrapping up after ${COORDINATOR_LEASE_MS} ms (Redis unreachable?); the next session of each run completes it`);
  }

  /**
   * Starts QueueEvents at the stream's current last id rather than `$`, so nothing emitted
   * between now and its first blocking XREAD is missed (bullmq#2874). It duplicates our
   * connection (a blocking XREAD must not stall commands) and closes the duplicate itself. What
   * it duplicates is a never-connected template with BullMQ's longer command timeout
   * (`duplicateForBullMQ`): ours would cut its `XREAD BLOCK` of up to 10 s short.
   */
  private async listen(): Promise<void> {
    const last = await this.redis.xrevrange(this.queue.toKey('events'), '+', '-', 'COUNT', 1);
    const lastEventId = last[0]?.[0] ?? '0-0';
    this.eventsTemplate = duplicateForBullMQ(this.redis);
    const events = new QueueEvents(this.options.queue, { prefix: this.options.prefix, connection: this.eventsTemplate, lastEventId });
    this.events = events;
    events.on('error', (err: Error) => this.options.logger.warn({ err: err.message }, 'BullMQ QueueEvents error'));
    events.on('completed', ({ jobId, returnvalue }) => this.sessions.get(runIdOf(jobId))?.onCompleted(jobId, returnvalue));
    events.on('failed', ({ jobId }) => this.sessions.get(runIdOf(jobId))?.onFailed(jobId));
    await events.waitUntilReady();
  }

  private checkRunId(runId: string): string {
    if (isRunId(runId)) return runId;
    const parsed = RunIdSchema.safeParse(runId);
    if (!parsed.success) throw new Error(`runId ${JSON.stringify(runId)}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  }

  private closedError(): Error {
    return new Error(`RolloutQueue is closed (state: ${this.stateValue}); create a new one`);
  }

  private assertOpen(): void {
    if (this.stateValue === 'closing' || this.stateValue === 'closed') throw this.closedError();
  }
}
