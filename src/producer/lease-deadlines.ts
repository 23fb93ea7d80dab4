import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { redisScript } from '../platform/redis-script.js';
import type { QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import { parseResult, type Result } from '../spec/index.js';
import { producerResult } from './producer-result.js';
import { metaOfJobData, withMeta } from './result-meta.js';
import { leaseBullKey, type BullKeys } from './read-job-outcomes.js';
import { taskKeyOf } from './result-from-job.js';
import { redisNowMs } from './run-retention.js';

/** Leases read per round trip. */
const BATCH = 500;
/** Least time between two deadline checks of one run, ms (they read a hash per lease). */
const CHECK_EVERY_MS = 1000;

// The coordinator's verdict on a lease, atomic with the job's state: none when the job already
// has its real answer (completed/failed: that one is delivered); the first verdict wins.
// Returns 1 written, 2 one existed, 0 none. KEYS: completed, failed, runVerdicts. ARGV: leaseId, Result JSON.
const VERDICT = redisScript('rqLeaseVerdict', `
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 2 end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return 1`, 3);

/** What the deadline checks of one run need. */
export interface LeaseDeadlinesDeps {
  readonly runId: string;
  readonly redis: Redis;
  readonly keys: QueueKeys;
  /**
   * The BullMQ queue: job keys, live workers (`getWorkers`), and removing a waiting job. With
   * `PlacementQueues` (`queueNameOf`, `workerCount`), workers are counted per lease's placement
   * queue: a lease nobody with its labels can take ends NoWorker though other workers are busy.
   */
  readonly queue: BullKeys & {
    getWorkers(): Promise<unknown[]>;
    remove(jobId: string): Promise<number>;
    queueNameOf?(leaseId: string): string;
    workerCount?(queueName: string): Promise<number>;
  };
  readonly logger: Logger;
}

/**
 * The coordinator-side deadlines of a run's leases (spec `timeouts.scheduleToStartMs` and
 * `scheduleToCloseMs`), so no lease waits forever for a worker that never comes:
 * - `NoWorker`: unfinished `scheduleToStartMs` after its enqueue while no worker served the
 *   queue for that long (live workers are BullMQ `getWorkers()`, sampled by each check): nobody
 *   took it, or the worker that took it is gone and no worker is left to run BullMQ's stalled
 *   check and re-dispatch it (such a lease would stay `active` forever);
 * - `DeadlineExceeded`: no Result `scheduleToCloseMs` after its enqueue.
 * Enqueue times and "now" both come from the Redis clock (`keys.runEnqueuedAt`, `TIME`); the
 * no-worker span from this process's monotonic clock. A verdict is an `infrastructure` Result
 * stored in `keys.runVerdicts` (first one wins, so a resumed coordinator delivers the same one);
 * the job is removed when still waiting, and a worker that answers later has its answer counted
 * in `duplicatesDropped` (consumer `LeaseLedger.hasVerdict`).
 */
export class LeaseDeadlines {
  /** Per queue name: since when (monotonic ms) no worker served it; absent = unknown yet, undefined = served. */
  private readonly noWorkerSince = new Map<string, number | undefined>();
  private readonly started = performance.now();
  private lastCheck = Number.NEGATIVE_INFINITY;
  /** Enqueue clocks already read and parsed (they never change once written), by lease id. */
  private readonly clocks = new Map<string, LeaseClock>();

  constructor(private readonly deps: LeaseDeadlinesDeps) {}

  /**
   * The verdict Results of `leaseIds` (stored earlier, or decided now). Checks deadlines at
   * most every second. With `full` (default) verdicts stored by any coordinator are read and
   * returned; without it only leases whose enqueue clock was never read cost a Redis read, so
   * an incremental pass costs per new lease, not per outstanding one.
   */
  async check(leaseIds: readonly string[], options: { full?: boolean } = {}): Promise<Result[]> {
    if (leaseIds.length === 0) return [];
    const { redis, keys, runId } = this.deps;
    const verdicts: Result[] = [];
    const clocks = new Map<string, LeaseClock>();
    const toRead: string[] = [];
    for (const leaseId of leaseIds) {
      const known = options.full === false ? this.clocks.get(leaseId) : undefined;
      if (known) clocks.set(leaseId, known);
      else toRead.push(leaseId);
    }
    for (let i = 0; i < toRead.length; i += BATCH) {
      const batch = toRead.slice(i, i + BATCH);
      const [[, stored], [, clock]] = (await redis.multi().hmget(keys.runVerdicts(runId), ...batch).hmget(keys.runEnqueuedAt(runId), ...batch).exec()) as [[unknown, (string | null)[]], [unknown, (string | null)[]]];
      batch.forEach((leaseId, j) => {
        const verdict = parseVerdict(stored[j]);
        if (verdict) verdicts.push(verdict);
        else if (clock[j]) {
          // Parsed once: a lease outstanding for many passes is checked on each.
          const parsed = JSON.parse(clock[j] as string) as LeaseClock;
          clocks.set(leaseId, parsed);
          this.clocks.set(leaseId, parsed);
        }
      });
    }
    // Settled leases leave the cache.
    if (this.clocks.size > leaseIds.length * 2) {
      const live = new Set(leaseIds);
      for (const leaseId of this.clocks.keys()) if (!live.has(leaseId)) this.clocks.delete(leaseId);
    }
    if (clocks.size === 0 || performance.now() - this.lastCheck < CHECK_EVERY_MS) return verdicts;
    this.lastCheck = performance.now();
    const { queue } = this.deps;
    await queue.resolve?.([...clocks.keys()]);
    const queueOf = (leaseId: string): string => queue.queueNameOf?.(leaseId) ?? keys.queue;
    const names = [...new Set([...clocks.keys()].map(queueOf))];
    // CLIENT LIST may be refused (a Redis ACL without it): then no-worker time is never counted.
    const [now, counts] = await Promise.all([
      redisNowMs(redis),
      Promise.all(names.map((name) => (queue.workerCount && name !== keys.queue ? queue.workerCount(name) : queue.getWorkers().then((list) => list.length)).catch(() => 1))),
    ]);
    const noWorkerMsOf = new Map(names.map((name, i) => [name, this.noticeWorkers(name, counts[i] ?? 1)]));
    const ended: Ended = new Map();
    for (const [leaseId, [at, startMs, closeMs]] of clocks) {
      const queueName = queueOf(leaseId);
      const noWorkerMs = noWorkerMsOf.get(queueName) ?? -1;
      const waited = now - at;
      if (closeMs > 0 && waited >= closeMs) {
        const verdict = await this.decide(leaseId, 'DeadlineExceeded',
          `lease ${leaseId} had no Result ${closeMs} ms after it was enqueued (timeouts.scheduleToCloseMs); the coordinator ended it. An attempt still running is not killed; its late answer is dropped`, now, ended);
        if (verdict) verdicts.push(verdict);
      } else if (startMs > 0 && waited >= startMs && noWorkerMs >= startMs) {
        // Started once but no worker left to finish or re-dispatch it (BullMQ's stalled check
        // runs in workers): as stuck as a lease nobody took.
        const started = Number((await redis.hget(leaseBullKey(queue, leaseId), 'ats')) ?? 0) > 0;
        const where = queueName === keys.queue ? `queue "${keys.queue}"` : `placement queue "${queueName}" of queue "${keys.queue}" (no worker whose --placement labels satisfy the lease's placement)`;
        const what = started
          ? `lease ${leaseId} was started, but no worker has served ${where} (prefix "${keys.prefix}") for ${startMs} ms, so nothing can finish or re-dispatch it`
          : `no worker started lease ${leaseId} within ${startMs} ms of its enqueue, and no worker served ${where} (prefix "${keys.prefix}") in that time`;
        const fix = queueName === keys.queue ? `\`rollout-queue worker --queue ${keys.queue}\`` : `\`rollout-queue worker --queue ${keys.queue} --placement KEY=VALUE …\` with the lease's placement labels (and --fingerprint when it names sandbox.fingerprint)`;
        const verdict = await this.decide(leaseId, 'NoWorker',
          `${what} (timeouts.scheduleToStartMs); start workers with ${fix} and re-run the spec under a new run id`, now, ended);
        if (verdict) verdicts.push(verdict);
      }
    }
    this.logEnded(ended);
    return verdicts;
  }

  /**
   * One warning per verdict type and pass, not one per lease: a run of thousands of leases that
   * no worker served ends them all in one pass, and each Result already carries its own message.
   */
  private logEnded(ended: Ended): void {
    const { runId, logger } = this.deps;
    for (const [type, { count, leaseId, message }] of ended) {
      logger.warn({ runId, type, leases: count, leaseId }, count === 1 ? message : `${count} leases of run ${runId} ended ${type}; the first: ${message}`);
    }
  }

  /** Records the worker count of one queue; returns for how long no worker served it, ms (-1: served). */
  private noticeWorkers(queueName: string, count: number): number {
    if (count > 0) {
      this.noWorkerSince.set(queueName, undefined);
      return -1;
    }
    const seen = this.noWorkerSince.has(queueName);
    let since = this.noWorkerSince.get(queueName);
    if (since === undefined) {
      // A queue first sampled now counts from this session's start (as before placement queues).
      since = seen ? performance.now() : this.started;
      this.noWorkerSince.set(queueName, since);
      this.deps.logger.info({ runId: this.deps.runId, queue: queueName }, 'no worker serves the queue; leases no worker starts within timeouts.scheduleToStartMs end as NoWorker');
    }
    return performance.now() - since;
  }

  private async decide(leaseId: string, type: string, message: string, nowMs: number, ended: Ended): Promise<Result | undefined> {
    const { redis, keys, runId, queue } = this.deps;
    // The draft's meta from the job's data: the verdict is stored, and another coordinator may deliver it.
    const meta = metaOfJobData(await redis.hget(leaseBullKey(queue, leaseId), 'data'));
    const result = withMeta({ ...producerResult('infrastructure', leaseId, runId, taskKeyOf(leaseId, runId), type, message), finishedAt: new Date(nowMs).toISOString() }, meta);
    const json = JSON.stringify(result);
    const outcome = await VERDICT.run(redis, [leaseBullKey(queue, leaseId, 'completed'), leaseBullKey(queue, leaseId, 'failed'), keys.runVerdicts(runId)], [leaseId, json]);
    if (outcome === 0) return undefined;
    if (outcome === 2) return parseVerdict(await redis.hget(keys.runVerdicts(runId), leaseId));
    // Refused while a worker holds it: that attempt runs to its end and its answer is dropped.
    await queue.remove(leaseId).catch(() => 0);
    const seen = ended.get(type);
    if (seen) seen.count += 1;
    else ended.set(type, { count: 1, leaseId, message });
    return result;
  }
}

/** A lease's enqueue clock as `keys.runEnqueuedAt` stores it: enqueue time (Redis clock, ms), scheduleToStartMs, scheduleToCloseMs (0 = none). */
type LeaseClock = readonly [number, number, number];

/** Leases one deadline pass ended, per verdict type: how many, and the first one's id and message. */
type Ended = Map<string, { count: number; leaseId: string; message: string }>;

function parseVerdict(json: string | null | undefined): Result | undefined {
  if (!json) return undefined;
  try {
    const parsed = parseResult(JSON.parse(json) as unknown);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
