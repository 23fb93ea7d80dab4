/**
 * Every Redis key and queue name rollout-queue uses besides BullMQ's own, built in one
 * place (the pattern of BullMQ `src/classes/queue-keys.ts`). Nothing else concatenates keys.
 *
 * BullMQ's keys are `<prefix>:<queue>:<jobId|suffix>`. Ours sit under
 * `<prefix>:<queue>:~…`: `~` cannot appear in a lease id ([A-Za-z0-9._-]) nor starts any
 * BullMQ suffix, so the two families never collide.
 */

/** Default BullMQ key prefix (env `ROLLOUT_QUEUE_PREFIX`). */
export const DEFAULT_PREFIX = 'rq';
/** Default queue name. */
export const DEFAULT_QUEUE = 'rollouts';
/** BullMQ job name of every rollout job. */
export const ROLLOUT_JOB_NAME = 'rollout';
/**
 * BullMQ job option (kept by BullMQ as given: `optsAsJSON` / `Job.optsFromJSON` pass unknown
 * keys through) holding the lease's enqueue time by the Redis clock, ms since the epoch, as the
 * producer stamped it in `runEnqueuedAt`. A worker reads its first attempt's `queuedMs` from it
 * without a round trip; a job without it (added by another client) has no known enqueue time.
 */
export const ENQUEUED_AT_OPTION = 'rqEnqueuedAt';

/** The job options that carry an enqueue time ({@link ENQUEUED_AT_OPTION}), to spread into a job's opts. */
export function enqueuedAtOption(redisMs: number): Record<typeof ENQUEUED_AT_OPTION, number> {
  return { [ENQUEUED_AT_OPTION]: redisMs };
}

/** The enqueue time a job's opts carry (ms, Redis clock), or undefined when another client added it. */
export function enqueuedAtOf(opts: object | undefined): number | undefined {
  const value = (opts as Record<string, unknown> | undefined)?.[ENQUEUED_AT_OPTION];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Key builders for one queue under one prefix. */
export interface QueueKeys {
  readonly prefix: string;
  readonly queue: string;
  /** HASH run record: specCount, enqueued, status, stopReason, createdAt, counters. */
  run(runId: string): string;
  /** ZSET lease ids of the run that were enqueued, scored by submission index. */
  runLeases(runId: string): string;
  /** SET lease ids whose Result the coordinator has acknowledged. */
  runDelivered(runId: string): string;
  /** HASH leaseId → JSON {reason, exitCode, signal, stderrTail} of leases ended by the re-dispatch limit. */
  runQuarantined(runId: string): string;
  /** STRING lease of the one coordinator delivering a run: JSON {token, pid, host}, with PX TTL. */
  runCoordinator(runId: string): string;
  /** STRING one artifact of the run, stored once: the JSON of a `rendered` value whose SHA-256 (hex) is `sha256`. */
  runArtifact(runId: string, sha256: string): string;
  /** SET the `sha256`s of the run's stored artifacts (retention and purge find them here). */
  runArtifacts(runId: string): string;
  /** HASH leaseId → JSON Result of leases the coordinator ended itself (NoWorker, DeadlineExceeded); first verdict wins. */
  runVerdicts(runId: string): string;
  /** HASH leaseId → enqueue time by the Redis clock (`TIME`, ms): the one clock deadlines and `queuedMs` are measured with. */
  runEnqueuedAt(runId: string): string;
  /** SET run ids known on this queue (for `status`). */
  runs(): string;
  /** HASH per-lease bookkeeping on the worker side: redispatched, stallsSeen, handbacks. */
  lease(leaseId: string): string;
  /**
   * Pub/sub channel announcing cancelled run ids to workers of the queue in database `db`
   * (default 0). Pub/sub ignores database numbers, so a channel of a database other than 0
   * names it (`…~cancel:db3`): a cancel under `REDIS_URL=…/3` stopped the run of the same id on
   * database 0 (fresh-user report). Database 0 keeps the bare name.
   */
  cancelChannel(db?: number): string;
  /** STRING JSON Result of a delivered dispatch run (queueDispatch), with PX TTL: a retried call gets it again. */
  dispatchAnswer(runId: string): string;
  /**
   * STRING sha256 fingerprint of the request a dispatch run runs (queueDispatch), set by its first
   * call and deleted with its keys: whoever finishes an abandoned dispatch run keeps its answer
   * under it, so a later call with another request is still refused as a conflict.
   */
  dispatchRequest(runId: string): string;
  /** HASH gateway state of a run of the runs API: state, error, ackedThrough, `l:<leaseId>` marks of listed Results. */
  gatewayRun(runId: string): string;
  /** LIST JSON Results of a run of the runs API, in delivery order (the NDJSON stream's cursor indexes it). */
  gatewayResults(runId: string): string;
  /** STRING JSON {containment, gaps, pid, host} a live worker refreshes with a PX TTL (for `status`). */
  workerInfo(workerName: string): string;
  /** STRING a worker writes (with a short PX TTL) to learn whether Redis accepts writes again after refusing them (OOM). */
  writeProbe(): string;
  /** STRING JSON of an `ok` evaluation Result, by the SHA-256 (hex) of its (rendered, task, run, reward), with PX TTL: the evaluation cache. */
  evalCache(sha256: string): string;
  /** HASH placement queue name → canonical JSON of its labels: the placements producers routed leases to (workers poll it to discover queues). */
  placements(): string;
  /**
   * HASH the fair-share clock of one BullMQ queue (`queueName`: the base queue or a placement
   * queue): `~clock` the virtual time last seen, `r:<runId>` "finishTag weight" of each run that
   * enqueued there (see `src/producer/fair-share.ts`).
   */
  fairShare(queueName: string): string;
}

/**
 * Builds the key layout for `queue` under `prefix`.
 * @throws Error when a name holds `:` or whitespace (they would split Redis key parts).
 */
export function queueKeys(prefix: string = DEFAULT_PREFIX, queue: string = DEFAULT_QUEUE): QueueKeys {
  for (const [field, value] of [['prefix', prefix], ['queue', queue]] as const) {
    if (!/^[A-Za-z0-9_{}-]+$/.test(value)) {
      throw new Error(`${field} "${value}" may hold only letters, digits, "_", "-" and "{}" (hash tags); pick another ${field}`);
    }
  }
  const base = `${prefix}:${queue}:~`;
  return {
    prefix,
    queue,
    run: (runId) => `${base}run:${runId}`,
    runLeases: (runId) => `${base}run:${runId}:leases`,
    runDelivered: (runId) => `${base}run:${runId}:delivered`,
    runQuarantined: (runId) => `${base}run:${runId}:quarantined`,
    runCoordinator: (runId) => `${base}run:${runId}:coordinator`,
    runArtifact: (runId, sha256) => `${base}run:${runId}:artifact:${sha256}`,
    runArtifacts: (runId) => `${base}run:${runId}:artifacts`,
    runVerdicts: (runId) => `${base}run:${runId}:verdicts`,
    runEnqueuedAt: (runId) => `${base}run:${runId}:enqueued-at`,
    runs: () => `${base}runs`,
    lease: (leaseId) => `${base}lease:${leaseId}`,
    cancelChannel: (db = 0) => (db === 0 ? `${base}cancel` : `${base}cancel:db${db}`),
    dispatchAnswer: (runId) => `${base}dispatch:${runId}:answer`,
    dispatchRequest: (runId) => `${base}dispatch:${runId}:request`,
    gatewayRun: (runId) => `${base}gw:${runId}`,
    gatewayResults: (runId) => `${base}gw:${runId}:results`,
    workerInfo: (workerName) => `${base}worker:${workerName}`,
    writeProbe: () => `${base}write-probe`,
    placements: () => `${base}placements`,
    evalCache: (sha256) => `${base}eval-cache:${sha256}`,
    fairShare: (queueName) => `${base}fair:${queueName}`,
  };
}

/** BullMQ's LIST of a job's log lines, next to the job hash `jobKey` (BullMQ `src/classes/job.ts`, `toKey(id) + ':logs'`). */
export function bullJobLogsKey(jobKey: string): string {
  return `${jobKey}:logs`;
}

/** BullMQ's lock STRING of an active job, next to the job hash `jobKey` (BullMQ `includes/isLocked.lua`). */
export function bullJobLockKey(jobKey: string): string {
  return `${jobKey}:lock`;
}

/** BullMQ keeps one `<prefix>:<queue>:meta` HASH per queue (BullMQ `src/classes/queue-keys.ts`). */
const BULL_META_SUFFIX = ':meta';

/** BullMQ's `meta` key of `queue` under `prefix`. */
export function bullMetaKey(prefix: string, queue: string): string {
  return `${prefix}:${queue}${BULL_META_SUFFIX}`;
}

/** BullMQ's job HASH of `jobId` (a lease id) in `queue` under `prefix` (BullMQ `src/classes/queue-keys.ts`, `toKey(jobId)`): what readers outside a `Queue` (the dashboard) read a job's Result from. */
export function bullJobKey(prefix: string, queue: string, jobId: string): string {
  return `${prefix}:${queue}:${jobId}`;
}

/** BullMQ's events stream of `queue` under `prefix` (BullMQ `src/classes/queue-keys.ts`): it stays once anything was added. */
export function bullEventsKey(prefix: string, queue: string): string {
  return `${prefix}:${queue}:events`;
}

/** SCAN pattern matching every BullMQ queue's `meta` key, under any prefix. */
export const ANY_QUEUE_META_PATTERN = `*${BULL_META_SUFFIX}`;

/** The prefix and queue of a BullMQ `meta` key (`<prefix>:<queue>:meta`; a queue name has no `:`), or undefined when it is not one. */
export function queueOfMetaKey(key: string): { prefix: string; queue: string } | undefined {
  if (!key.endsWith(BULL_META_SUFFIX)) return undefined;
  const head = key.slice(0, key.length - BULL_META_SUFFIX.length);
  const cut = head.lastIndexOf(':');
  if (cut <= 0 || cut === head.length - 1) return undefined;
  return { prefix: head.slice(0, cut), queue: head.slice(cut + 1) };
}

/** SCAN pattern matching every BullMQ queue's `meta` key under `prefix`. */
export function queueMetaPattern(prefix: string): string {
  return `${prefix}:*${BULL_META_SUFFIX}`;
}

/** The queue name of a key matched by {@link queueMetaPattern}, or undefined when it is not one. */
export function queueNameOfMetaKey(prefix: string, key: string): string | undefined {
  const head = `${prefix}:`;
  if (!key.startsWith(head) || !key.endsWith(BULL_META_SUFFIX)) return undefined;
  const name = key.slice(head.length, key.length - BULL_META_SUFFIX.length);
  return name !== '' && !name.includes(':') ? name : undefined;
}

/**
 * Every key of a run's own bookkeeping (not its jobs, lease hashes or artifacts), for retention,
 * purge and the per-call cleanup of a dispatch run (including the gateway's runs-API state): what `keys.run*` builds for `runId`, in one list.
 */
export function runOwnKeys(keys: QueueKeys, runId: string): string[] {
  return [
    keys.run(runId), keys.runLeases(runId), keys.runDelivered(runId), keys.runQuarantined(runId),
    keys.runArtifacts(runId), keys.runVerdicts(runId), keys.runEnqueuedAt(runId),
    keys.gatewayRun(runId), keys.gatewayResults(runId),
  ];
}

/** The BullMQ keys a lease's lock is reclaimed with (see `consumer/lease-reclaim.ts`). */
export interface BullLeaseKeys {
  /** The job HASH. */
  readonly job: string;
  /** The job's lock STRING (holds the lock token of the attempt that owns it). */
  readonly lock: string;
  /** The queue's `active` LIST. */
  readonly active: string;
  /** The queue's `wait` LIST (where BullMQ's stalled check puts a job whose lock expired). */
  readonly wait: string;
  /** The queue's `stalled` SET (ids the next stalled check looks at). */
  readonly stalled: string;
}

/** {@link BullLeaseKeys} of lease `jobId` in `queue` under `prefix` (BullMQ `src/classes/queue-keys.ts`). */
export function bullLeaseKeys(prefix: string, queue: string, jobId: string): BullLeaseKeys {
  const job = bullJobKey(prefix, queue, jobId);
  return { job, lock: bullJobLockKey(job), active: `${prefix}:${queue}:active`, wait: `${prefix}:${queue}:wait`, stalled: `${prefix}:${queue}:stalled` };
}
