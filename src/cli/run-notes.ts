import os from 'node:os';
import type { Redis } from 'ioredis';
import { queueKeys, type QueueKeys } from '../lease/index.js';
import { createRedisClient } from '../platform/redis-connection.js';
import { redisScript } from '../platform/redis-script.js';
import type { CliEnvironment } from './environment.js';

/**
 * What the CLI keeps about a run beside the producer's record: the results file its coordinator
 * writes (`run --out`, `resume --out`), so every hint that names `resume` (status, a refused
 * coordinator) names that file, and the Results of one run stay in one file.
 *
 * Kept as one CLI field of the run record HASH (`keys.run`): it expires and is purged with the
 * record, and the producer reads only its own fields (`RUN_FIELDS`). Written only by the
 * coordinator that holds the run's coordinator lease (JSON {token, pid, host}, `keys.runCoordinator`),
 * so a coordinator refused as busy never overwrites the file of the one that delivers.
 */
export const OUT_FIELD = 'cli:out';

/** Field of `keys.lease(leaseId)` naming the BullMQ queue (a placement queue, or the base one) its job is in (see PlacementQueues). */
const LEASE_QUEUE_FIELD = 'queue';
/** Leases looked at per pipeline. */
const BATCH = 500;

/** BullMQ's job HASH key of `jobId` in queue `name` (BullMQ QueueKeys.toKey: `<prefix>:<name>:<id>`). */
const bullJobKey = (prefix: string, name: string, jobId: string): string => `${prefix}:${name}:${jobId}`;

/** How often a coordinator looks whether it took its run's lease yet, to record its results file, ms. */
const RECORD_POLL_MS = 200;

// HSET the out path when the run record exists and this process (pid, host) holds the coordinator
// lease. KEYS: run, runCoordinator. ARGV: out, pid, host. Returns 1 written, 0 not (yet).
const RECORD_OUT = redisScript('rqCliRecordOut', `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local v = redis.call('GET', KEYS[2])
if not v then return 0 end
local ok, holder = pcall(cjson.decode, v)
if not ok or type(holder) ~= 'table' or tostring(holder.pid) ~= ARGV[2] or holder.host ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], '${OUT_FIELD}', ARGV[1])
return 1`, 2);

/** A Redis client of the CLI's own for {@link RunNotes}; its errors are hints lost, never a failure. */
function notesClient(env: CliEnvironment): Redis {
  const redis = createRedisClient(env.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  return redis;
}

/** The CLI's notes of the runs of one queue (see {@link OUT_FIELD}). Close it when done. */
export class RunNotes {
  private readonly redis: Redis;
  private readonly keys: QueueKeys;

  constructor(env: CliEnvironment, queue: string) {
    this.redis = notesClient(env);
    this.keys = queueKeys(env.prefix, queue);
  }

  /** The absolute results file the run's last coordinator recorded, or undefined (none recorded, or Redis did not answer). */
  async out(runId: string): Promise<string | undefined> {
    try {
      return (await this.redis.hget(this.keys.run(runId), OUT_FIELD)) ?? undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Records `out` as the run's results file once this process holds the run's coordinator lease
   * (the producer takes it on the iterator's first step): looks every {@link RECORD_POLL_MS} until
   * then. `finish()` stops looking after one last look (call it while the lease may still be held).
   */
  recordOut(runId: string, out: string): { finish(): Promise<void> } {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const attempt = async (): Promise<void> => {
      if (done) return;
      try {
        if ((await RECORD_OUT.run(this.redis, [this.keys.run(runId), this.keys.runCoordinator(runId)], [out, String(process.pid), os.hostname()])) === 1) {
          done = true;
          return;
        }
      } catch {
        // Redis trouble: the producer reports it; the hint falls back to naming no file.
      }
      if (!done) {
        timer = setTimeout(() => void attempt(), RECORD_POLL_MS);
        timer.unref();
      }
    };
    timer = setTimeout(() => void attempt(), 0);
    return {
      finish: async () => {
        clearTimeout(timer);
        if (!done) await attempt();
        done = true;
        clearTimeout(timer);
      },
    };
  }

  /**
   * Results of the run that will come, or have come, and were never delivered: enqueued leases not
   * delivered (nor `written` to the results file already) whose job is still there (running, or
   * finished and waiting in Redis) or that the coordinator ended itself (a stored verdict). The
   * waiting jobs a cancel or stop removed get no Result and are not counted. What `resume`
   * collects for a cancelled or stopped run. Undefined when Redis did not answer.
   */
  async undelivered(runId: string, written: (leaseId: string) => boolean = () => false): Promise<number | undefined> {
    try {
      const [[, leases], [, delivered]] = (await this.redis
        .multi()
        .zrange(this.keys.runLeases(runId), 0, -1)
        .smembers(this.keys.runDelivered(runId))
        .exec()) as [[unknown, string[]], [unknown, string[]]];
      const done = new Set(delivered);
      const open = leases.filter((leaseId) => !done.has(leaseId) && !written(leaseId));
      let count = 0;
      for (let i = 0; i < open.length; i += BATCH) {
        const batch = open.slice(i, i + BATCH);
        const where = (await batch.reduce((pipe, leaseId) => pipe.hget(this.keys.lease(leaseId), LEASE_QUEUE_FIELD).hexists(this.keys.runVerdicts(runId), leaseId), this.redis.pipeline()).exec()) ?? [];
        const jobs = (await batch.reduce((pipe, leaseId, j) => {
          const name = where[2 * j]?.[1];
          return pipe.exists(bullJobKey(this.keys.prefix, typeof name === 'string' && name !== '' ? name : this.keys.queue, leaseId));
        }, this.redis.pipeline()).exec()) ?? [];
        count += batch.filter((_, j) => jobs[j]?.[1] === 1 || where[2 * j + 1]?.[1] === 1).length;
      }
      return count;
    } catch {
      return undefined;
    }
  }

  /** Closes the client. */
  close(): void {
    this.redis.disconnect();
  }
}
