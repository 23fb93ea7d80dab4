import { Queue, type JobsOptions } from 'bullmq';
import type { ChainableCommander, Redis } from 'ioredis';
import { redisDb } from '../platform/redis-connection.js';
import { bullTelemetry, withSpan } from '../platform/telemetry.js';
import { assignPriorities, type RunShare } from './fair-share.js';
import { effectivePlacement, parsePlacementEntry, placementEntryJson, placementQueueName, type LeaseClass, type PlacedSpec, type QueueKeys } from '../lease/index.js';

/** Field of `keys.lease(leaseId)` naming the BullMQ queue of a lease routed to a placement queue. */
const QUEUE_FIELD = 'queue';
/** Field of `keys.lease(leaseId)` holding an evaluation's content hash (`evaluationHash`), for a later session that delivers its Result. */
const EVAL_HASH_FIELD = 'evalHash';

/** One placement queue in `status`: `workers` is -1 when CLIENT LIST is refused. */
export interface PlacementStatus {
  readonly queue: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly class: LeaseClass;
  readonly waiting: number;
  readonly active: number;
  readonly workers: number;
}

/** A job as `Queue.addBulk` takes it, and an evaluation's content hash (`evaluationHash`). */
interface BulkJob {
  readonly name: string;
  readonly data: PlacedSpec & { readonly class?: LeaseClass };
  readonly opts?: JobsOptions;
  readonly evalHash?: string | undefined;
}

/**
 * The BullMQ queues of one base queue: the base (`keys.queue`, specs without placement) and one
 * queue per distinct placement and class ({@link placementQueueName}), so each keeps BullMQ's own
 * locks, stalled checks and worker list. Workers serve every placement queue their labels satisfy;
 * they find them in `keys.placements()`, which {@link addBulk} adds to before a lease is enqueued.
 *
 * A lease's queue is known from its spec when enqueued here, and recorded in `keys.lease(leaseId)`
 * (field `queue`) so another process (a resumed coordinator, `cancel`, `status`) finds it:
 * call {@link resolve} before {@link leaseKey} for leases this process did not enqueue.
 * Everything that needs a job's key (outcomes, deadlines, removal) goes through {@link leaseKey}.
 */
export class PlacementQueues {
  private readonly queues = new Map<string, Queue>();
  /** leaseId → queue name, for every lease whose queue is known (base ones too). */
  private readonly leaseQueue = new Map<string, string>();
  /** leaseId → evaluation content hash, for routed evaluation leases enqueued or resolved here. */
  private readonly leaseEvalHash = new Map<string, string>();
  private readonly announced = new Set<string>();

  constructor(readonly base: Queue, private readonly redis: Redis, private readonly keys: QueueKeys, private readonly tracing = false) {
    this.queues.set(base.name, base);
  }

  /** BullMQ's key builder of the base queue (`toKey('wait')` etc.). */
  toKey(type: string): string {
    return this.base.toKey(type);
  }

  /** Live workers of the base queue (see {@link liveWorkers}). */
  getWorkers(): Promise<Record<string, string>[]> {
    return this.liveWorkers(this.base.name);
  }

  /**
   * Live workers of one queue: BullMQ `getWorkers` (CLIENT LIST by the queue's client name),
   * keeping only connections to this connection's database. CLIENT LIST lists every database's
   * clients and BullMQ does not filter (`queue-getters.js` `parseClientList`): under
   * `REDIS_URL=…/3`, the workers of the same queue name in database 0 counted as this queue's.
   * @returns CLIENT LIST fields per worker connection (`addr`, `age`, `db`, …; `rawname` the BullMQ client name).
   */
  async liveWorkers(queueName: string): Promise<Record<string, string>[]> {
    const db = String(redisDb(this.redis));
    const clients = (await this.queue(queueName).getWorkers()) as Record<string, string>[];
    return clients.filter((client) => client.db === undefined || client.db === db);
  }

  /** The queue name of `leaseId` (the base queue when unknown: call {@link resolve} first). */
  queueNameOf(leaseId: string): string {
    return this.leaseQueue.get(leaseId) ?? this.base.name;
  }

  /** BullMQ's key `type` (a job id, `completed`, `failed`, `wait`) in the queue of `leaseId`; `type` defaults to the job hash. */
  leaseKey(leaseId: string, type: string = leaseId): string {
    return this.queue(this.queueNameOf(leaseId)).toKey(type);
  }

  /** How many live workers one queue has (see {@link liveWorkers}). */
  async workerCount(queueName: string): Promise<number> {
    return (await this.liveWorkers(queueName)).length;
  }

  /**
   * Reads, in one pipeline, the queue (and an evaluation's content hash) of each lease not yet
   * known here (recorded by the producer that enqueued it).
   */
  async resolve(leaseIds: readonly string[]): Promise<void> {
    const unknown = leaseIds.filter((leaseId) => !this.leaseQueue.has(leaseId));
    if (unknown.length === 0) return;
    const pipe = this.redis.pipeline();
    for (const leaseId of unknown) pipe.hmget(this.keys.lease(leaseId), QUEUE_FIELD, EVAL_HASH_FIELD);
    const replies = (await pipe.exec()) ?? [];
    unknown.forEach((leaseId, i) => {
      const [err, fields] = replies[i] ?? [null, null];
      if (err) return;
      const [name, evalHash] = (fields ?? []) as (string | null)[];
      this.leaseQueue.set(leaseId, typeof name === 'string' && name !== '' ? name : this.base.name);
      if (typeof evalHash === 'string' && evalHash !== '') this.leaseEvalHash.set(leaseId, evalHash);
    });
  }

  /**
   * The content hash of an evaluation lease enqueued by this process or {@link resolve}d here
   * (the producer that enqueued it recorded it), else undefined (a rollout lease, or unknown).
   */
  evaluationHashOf(leaseId: string): string | undefined {
    return this.leaseEvalHash.get(leaseId);
  }

  /** The BullMQ queue names of every placement ever routed on this base queue (from `keys.placements()`), base first. */
  async knownQueueNames(): Promise<string[]> {
    const names = await this.redis.hkeys(this.keys.placements());
    return [this.base.name, ...names.sort()];
  }

  /**
   * Every placement queue of this base queue (from `keys.placements()`): its labels and class,
   * jobs waiting (incl. delayed/prioritized) and active, and live workers. A queue with waiting
   * jobs and no worker holds leases no worker can take (they end `NoWorker` at
   * `timeouts.scheduleToStartMs`).
   */
  async describe(): Promise<PlacementStatus[]> {
    const entries = await this.redis.hgetall(this.keys.placements());
    return Promise.all(Object.entries(entries).sort(([a], [b]) => a.localeCompare(b)).map(async ([name, json]) => {
      const entry = parsePlacementEntry(json);
      const queue = this.queue(name);
      const [counts, workers] = await Promise.all([
        queue.getJobCounts('waiting', 'delayed', 'prioritized', 'active'),
        this.liveWorkers(name).then((list) => list.length, () => -1),
      ]);
      return {
        queue: name, labels: entry?.labels ?? {}, class: entry?.class ?? 'rollout',
        waiting: (counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0, workers,
      };
    }));
  }

  /** A `Queue.remove` in the lease's queue (BullMQ refuses a locked job: 0). */
  remove(leaseId: string): Promise<number> {
    return this.queue(this.queueNameOf(leaseId)).remove(leaseId);
  }

  /** `Queue.remove` / `toKey` of one named queue, for sweeps over every queue (stop, cancel). */
  queue(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { prefix: this.keys.prefix, connection: this.redis, ...(this.tracing ? { telemetry: bullTelemetry(true) } : {}) });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  /**
   * Adds jobs (ids = lease ids) to the queue of each one's placement and class: announces new
   * placements in `keys.placements()` and records each routed lease's queue in `keys.lease`
   * before its job exists, so a worker or another process never sees a job it cannot place.
   * With `share` (one run's jobs), each job gets a BullMQ priority from its queue's fair-share
   * clock, so runs sharing a queue interleave by weight (`fair-share.ts`).
   */
  async addBulk(jobs: readonly BulkJob[], share?: RunShare): Promise<void> {
    if (!this.tracing) return this.addRouted(jobs, share);
    // One span per batch; its traceparent rides in each spec, BullMQ's add spans nest inside it.
    return withSpan('rollout-queue.enqueue', { 'rollout.queue': this.base.name, 'rollout.leases': jobs.length }, (traceparent) =>
      this.addRouted(traceparent ? jobs.map((job) => ({ ...job, data: { ...job.data, traceparent } })) : jobs, share));
  }

  /**
   * The jobs of one queue with their fair-share priorities (`share` given: see `fair-share.ts`),
   * else as they are (BullMQ's plain wait list, served before every prioritized job).
   */
  private async prioritized(name: string, group: readonly BulkJob[], share: RunShare | undefined): Promise<readonly BulkJob[]> {
    if (!share) return group;
    const priorities = await assignPriorities(this.redis, this.keys.fairShare(name), this.queue(name).toKey('prioritized'), share, group.length);
    return group.map((job, i) => ({ ...job, opts: { ...job.opts, priority: priorities[i] ?? 1 } }));
  }

  private async addRouted(jobs: readonly BulkJob[], share: RunShare | undefined): Promise<void> {
    const groups = new Map<string, BulkJob[]>();
    // Made only when there is something to write: an ioredis pipeline copies every script
    // command defined on the connection onto itself (most batches route to the base queue).
    let pipe: ChainableCommander | undefined;
    const announcing: string[] = [];
    for (const job of jobs) {
      const labels = effectivePlacement(job.data);
      const leaseClass = job.data.class ?? 'rollout';
      const name = placementQueueName(this.base.name, labels, leaseClass);
      const leaseId = job.opts?.jobId;
      if (leaseId !== undefined) this.leaseQueue.set(leaseId, name);
      if (name !== this.base.name) {
        pipe ??= this.redis.pipeline();
        if (!this.announced.has(name) && !announcing.includes(name)) {
          pipe.hset(this.keys.placements(), name, placementEntryJson(labels, leaseClass));
          announcing.push(name);
        }
        if (leaseId !== undefined) {
          pipe.hset(this.keys.lease(leaseId), QUEUE_FIELD, name, ...(job.evalHash !== undefined ? [EVAL_HASH_FIELD, job.evalHash] : []));
          if (job.evalHash !== undefined) this.leaseEvalHash.set(leaseId, job.evalHash);
        }
      }
      const group = groups.get(name);
      if (group) group.push(job);
      else groups.set(name, [job]);
    }
    if (pipe && pipe.length > 0) {
      for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
      // Only once stored: a failed announcement is tried again with the next add.
      for (const name of announcing) this.announced.add(name);
    }
    // One job goes by `add`: a single EVALSHA, where `addBulk` builds an ioredis pipeline, which
    // copies every script command defined on the connection (BullMQ's and ours) onto itself.
    await Promise.all([...groups].map(async ([name, unranked]) => {
      const queue = this.queue(name);
      const group = await this.prioritized(name, unranked, share);
      const [only] = group;
      if (group.length === 1 && only) return queue.add(only.name, only.data as Record<string, unknown>, only.opts);
      return queue.addBulk(group.map((job) => ({ ...job, data: job.data as Record<string, unknown> })));
    }));
  }

  /** Closes the placement queues' handles (not the base queue: its owner closes it). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].filter((queue) => queue !== this.base).map((queue) => queue.close()));
  }
}
