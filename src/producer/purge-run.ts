import type { Redis } from 'ioredis';
import { bullJobLockKey, RUN_FIELDS, runOwnKeys, type QueueKeys, type RunStatus } from '../lease/index.js';
import { leaseBullKey, type BullKeys } from './read-job-outcomes.js';
import type { RemovableQueue } from './remove-waiting-jobs.js';
import { COORDINATOR_LEASE_MS, leaseHolder } from './coordinator-lease.js';
import { redisNowMs } from './run-retention.js';
import { writeRefusalCode } from '../platform/write-refusal-code.js';

/** Concurrent BullMQ remove calls (each one Lua script; ioredis pipelines them). */
const PARALLEL = 64;

/**
 * Why a run is active: `running` (its status: cancel it or let it complete), `delivering` (a
 * coordinator holds its lease), `rollouts` (rollouts of it hold workers' locks), `iterator` (a
 * live iterator of it in this process).
 */
export type RunActivity = 'running' | 'delivering' | 'rollouts' | 'iterator';

/** `purge` refused: the run is still running, being delivered, or has rollouts on workers. Nothing was removed. */
export class RunActiveError extends Error {
  constructor(readonly runId: string, why: string, readonly activity: RunActivity) {
    super(`run "${runId}" ${why}; purge removes only runs that are completed, stopped or cancelled and have nothing running; nothing was removed`);
    this.name = 'RunActiveError';
  }
}

/**
 * `purge` refused: Results of the run finished on workers but were never delivered (its
 * coordinator stopped before collecting them, e.g. a cancelled run nobody resumed). Nothing was
 * removed; `discardUndelivered` purges anyway.
 */
export class UndeliveredResultsError extends Error {
  constructor(readonly runId: string, readonly undelivered: number) {
    super(`run "${runId}" has ${undelivered} Result(s) that finished but were never delivered: collect them first (attach, the CLI's resume), ` +
      'or purge with discardUndelivered (the CLI\'s --discard-undelivered) to drop them; nothing was removed');
    this.name = 'UndeliveredResultsError';
  }
}

/** Options of {@link purgeRun} and {@link purgeOlderThan}. */
export interface PurgeOptions {
  /** Purge a run whose finished Results were never delivered (they are lost); default false: refused. */
  readonly discardUndelivered?: boolean;
}

/** What {@link purgeRun} removed. */
export interface PurgeOutcome {
  /** False when no run of that id exists on the queue (nothing was done). */
  readonly found: boolean;
  /** Leases whose job, lease hash and records were removed. */
  readonly leases: number;
  /** Of those, finished Results that were never delivered (dropped with `discardUndelivered`). */
  readonly undelivered: number;
}

/**
 * Removes one finished run from Redis now, whatever its retention: every job (through BullMQ's
 * own `Queue.remove` script, which also takes it out of every state set and deletes its logs),
 * every lease hash, the stored artifacts and the run's own records, and its entry in the
 * queue's run list. Afterwards no key holds the run id.
 * @throws RunActiveError while the run is `running`, a coordinator holds its lease, or a job of
 *   it holds a worker's lock (a cancelled run's rollouts stop within seconds; purge again then).
 * @throws UndeliveredResultsError when jobs of it finished whose Results were never delivered,
 *   unless `options.discardUndelivered` (fresh-user report: purge after cancel dropped 44
 *   Results nobody had collected without a word).
 */
export async function purgeRun(redis: Redis, queue: RemovableQueue, keys: QueueKeys, runId: string, options: PurgeOptions = {}): Promise<PurgeOutcome> {
  // Pipelines, not MULTI: a purge is what frees a Redis at maxmemory, where Redis refuses every
  // command queued in a MULTI, reads and DEL too (Redis `processCommand`, `reject_cmd_on_oom`);
  // the checks below stand on their own (a job a worker took meanwhile is caught at its removal).
  const [status, coordinator, leases, delivered, artifacts] = (await redis
    .pipeline()
    .hget(keys.run(runId), RUN_FIELDS.status)
    .get(keys.runCoordinator(runId))
    .zrange(keys.runLeases(runId), 0, -1)
    .smembers(keys.runDelivered(runId))
    .smembers(keys.runArtifacts(runId))
    .exec().then(repliesOrThrow)) as [RunStatus | null, string | null, string[], string[], string[]];
  if (status === null) return { found: false, leases: 0, undelivered: 0 };
  if (status === 'running') throw new RunActiveError(runId, 'is still running: cancel it first (RolloutQueue.cancel, the CLI\'s cancel) or let it complete', 'running');
  if (coordinator !== null) {
    const { pid, host } = leaseHolder(coordinator);
    const who = pid !== null ? ` (pid ${pid}${host ? ` on ${host}` : ''})` : '';
    throw new RunActiveError(runId, `is being delivered by a coordinator right now${who}: stop it, or wait until it exits (one killed with SIGKILL holds the run until its lease lapses, within ${COORDINATOR_LEASE_MS / 1000} s)`, 'delivering');
  }
  const all = [...new Set([...leases, ...delivered])];
  // Leases of placement queues (PlacementQueues): their jobs live in those queues.
  const bull = queue as RemovableQueue & BullKeys;
  await bull.resolve?.(all);
  const locks = all.length === 0 ? [] : ((await all.reduce((pipe, leaseId) => pipe.exists(bullJobLockKey(leaseBullKey(bull, leaseId))), redis.pipeline()).exec()) ?? []);
  const active = all.filter((_, i) => locks[i]?.[1] === 1);
  if (active.length > 0) throw new RunActiveError(runId, `has ${active.length} rollout(s) still active on workers (e.g. ${active[0]}); they stop within seconds of a cancel: purge again then`, 'rollouts');
  const deliveredSet = new Set(delivered);
  const pending = leases.filter((leaseId) => !deliveredSet.has(leaseId));
  // A job BullMQ finished (completed or failed) carries `finishedOn`; a removed waiting one has no job.
  const finished = pending.length === 0 ? [] : ((await pending.reduce((pipe, leaseId) => pipe.hexists(leaseBullKey(bull, leaseId), 'finishedOn'), redis.pipeline()).exec()) ?? []);
  const undelivered = finished.filter((reply) => reply?.[1] === 1).length;
  if (undelivered > 0 && !options.discardUndelivered) throw new UndeliveredResultsError(runId, undelivered);
  for (let i = 0; i < all.length; i += PARALLEL) {
    const chunk = all.slice(i, i + PARALLEL);
    const codes = await Promise.all(chunk.map((leaseId) => removeJob(redis, bull, leaseId)));
    const locked = chunk.filter((_, j) => codes[j] === 0);
    // A worker took a job in the instant since the check: what is removed stays removed.
    if (locked.length > 0) throw new RunActiveError(runId, `had ${locked.length} rollout(s) started while purging (e.g. ${locked[0]}); purge again when they ended`, 'rollouts');
    await chunk.reduce((pipe, leaseId) => pipe.del(keys.lease(leaseId)), redis.pipeline()).exec();
  }
  await redis
    .pipeline()
    .del(...runOwnKeys(keys, runId), ...artifacts.map((sha) => keys.runArtifact(runId, sha)))
    .srem(keys.runs(), runId)
    .exec()
    .then(repliesOrThrow);
  return { found: true, leases: all.length, undelivered };
}

/** A pipeline's replies, or its first command's error thrown (a MULTI's EXEC rejects the same way). */
function repliesOrThrow(replies: [Error | null, unknown][] | null): unknown[] {
  return (replies ?? []).map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

/**
 * BullMQ's `Queue.remove` of one lease's job (1 removed, 0 locked by a worker). At maxmemory its
 * script deletes the job, then fails on the `removed` event it appends (XADD is refused there;
 * Redis keeps what a script wrote before an error): a job gone afterwards counts as removed, so
 * purging frees a full Redis (BullMQ `commands/includes/removeJobWithChildren.lua`).
 */
async function removeJob(redis: Redis, bull: RemovableQueue & BullKeys, leaseId: string): Promise<number> {
  try {
    return await bull.remove(leaseId);
  } catch (err) {
    if (writeRefusalCode(err) === 'OOM' && (await redis.exists(leaseBullKey(bull, leaseId))) === 0) return 1;
    throw err;
  }
}

/** What {@link purgeOlderThan} did, per run. */
export interface PurgeOlderOutcome {
  readonly purged: readonly string[];
  /** Runs old enough but refused (still running or active, or undelivered Results), with why and the refusal itself. */
  readonly skipped: readonly { readonly runId: string; readonly reason: string; readonly error: RunActiveError | UndeliveredResultsError }[];
}

/**
 * Purges every run of the queue that ended (or, for a run that never recorded its end, was
 * created) at least `ageMs` ago, by the Redis clock; running and active runs, and runs with
 * undelivered Results (unless `options.discardUndelivered`), are skipped and listed. Run ids whose records already expired are dropped from the run list.
 */
export async function purgeOlderThan(redis: Redis, queue: RemovableQueue, keys: QueueKeys, ageMs: number, options: PurgeOptions = {}): Promise<PurgeOlderOutcome> {
  const now = await redisNowMs(redis);
  const purged: string[] = [];
  const skipped: { runId: string; reason: string; error: RunActiveError | UndeliveredResultsError }[] = [];
  for (const runId of (await redis.smembers(keys.runs())).sort()) {
    const [status, endedAt, createdAt] = await redis.hmget(keys.run(runId), RUN_FIELDS.status, RUN_FIELDS.endedAt, RUN_FIELDS.createdAt);
    if (status === null || status === undefined) {
      await redis.srem(keys.runs(), runId);
      continue;
    }
    const since = endedAt ? Number(endedAt) : createdAt ? Date.parse(createdAt) : Number.NaN;
    if (!Number.isFinite(since) || now - since < ageMs) continue;
    try {
      await purgeRun(redis, queue, keys, runId, options);
      purged.push(runId);
    } catch (err) {
      if (!(err instanceof RunActiveError) && !(err instanceof UndeliveredResultsError)) throw err;
      skipped.push({ runId, reason: err.message, error: err });
    }
  }
  return { purged, skipped };
}
