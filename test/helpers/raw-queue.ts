import { randomUUID } from 'node:crypto';
import { Queue, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { queueKeys, ROLLOUT_JOB_NAME, type QueueKeys } from '../../src/lease/index.js';
import { RolloutSpecSchema, type Ref, type Result, type RolloutSpec, type RolloutSpecInput } from '../../src/spec/index.js';

/** Test prefix: every test file uses its own, so keys never collide even on a shared Redis. */
export const TEST_PREFIX = 'rqt';

/** A Ref to a fixture in `test/fixtures/rq-fixtures/failures.js`. */
export const fixture = (name: string, config: Record<string, unknown> = {}): Ref => ({ $ref: `rq-fixtures/failures:${name}`, config });

/** Builds a parsed spec for `runId` / `key` with fixture run/reward Refs by default. */
export function makeSpec(runId: string, key: string, overrides: Partial<RolloutSpecInput> = {}): RolloutSpec {
  return RolloutSpecSchema.parse({
    v: 1,
    leaseId: `${runId}.${key}`,
    runId,
    runAttemptId: 'a1',
    rendered: 'artifact',
    task: { id: key },
    run: fixture('echo'),
    reward: fixture('constant'),
    ...overrides,
  });
}

/** A raw BullMQ queue plus our key layout, standing in for the producer in consumer tests. */
export class RawQueue {
  readonly queue: Queue;
  readonly redis: Redis;
  readonly keys: QueueKeys;
  readonly name: string;

  constructor(readonly url: string, name = `q-${randomUUID().slice(0, 8)}`) {
    this.name = name;
    this.queue = new Queue(name, { connection: { url } as ConnectionOptions, prefix: TEST_PREFIX });
    this.redis = new Redis(url);
    // Outage tests kill Redis on purpose; connection errors are expected and retried.
    this.redis.on('error', () => undefined);
    this.queue.on('error', () => undefined);
    this.keys = queueKeys(TEST_PREFIX, name);
  }

  /** Options for a worker on this queue. */
  workerOptions(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { redisUrl: this.url, queue: this.name, prefix: TEST_PREFIX, allow: ['rq-fixtures/*'], ...extra };
  }

  /** Adds specs as jobs (jobId = leaseId) and a minimal run record so workers count on it. */
  async add(specs: readonly RolloutSpec[]): Promise<void> {
    for (const runId of new Set(specs.map((s) => s.runId))) await this.redis.hsetnx(this.keys.run(runId), 'status', 'running');
    await this.queue.addBulk(specs.map((spec) => ({ name: ROLLOUT_JOB_NAME, data: spec, opts: { jobId: spec.leaseId } })));
  }

  /**
   * Polls until every lease is completed or failed; returns Results (completed) and
   * failedReasons (failed) by lease id.
   * @throws Error listing the unfinished leases and their states after `timeoutMs`.
   */
  async waitForAll(leaseIds: readonly string[], timeoutMs = 60_000): Promise<{ results: Map<string, Result>; failed: Map<string, string> }> {
    const until = Date.now() + timeoutMs;
    const results = new Map<string, Result>();
    const failed = new Map<string, string>();
    for (;;) {
      for (const leaseId of leaseIds) {
        if (results.has(leaseId) || failed.has(leaseId)) continue;
        const job = await this.queue.getJob(leaseId);
        if (!job) continue;
        if (job.finishedOn && job.returnvalue) results.set(leaseId, job.returnvalue as Result);
        else if (job.finishedOn && job.failedReason) failed.set(leaseId, job.failedReason);
      }
      if (results.size + failed.size === leaseIds.length) return { results, failed };
      if (Date.now() > until) {
        const pending = leaseIds.filter((id) => !results.has(id) && !failed.has(id));
        const states = await Promise.all(pending.slice(0, 10).map(async (id) => `${id}=${await this.queue.getJobState(id)}`));
        throw new Error(`${pending.length} leases unfinished after ${timeoutMs} ms: ${states.join(', ')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Resolves once the job is active (a worker holds it). */
  async waitForState(leaseId: string, state: string, timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while ((await this.queue.getJobState(leaseId)) !== state) {
      if (Date.now() > until) throw new Error(`${leaseId} not ${state} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The run record counters. */
  async counters(runId: string): Promise<{ redispatched: number; duplicatesDropped: number }> {
    const [redispatched, duplicatesDropped] = await this.redis.hmget(this.keys.run(runId), 'redispatched', 'duplicatesDropped');
    return { redispatched: Number(redispatched ?? 0), duplicatesDropped: Number(duplicatesDropped ?? 0) };
  }

  async close(): Promise<void> {
    await this.queue.obliterate({ force: true }).catch(() => undefined);
    await this.queue.close();
    this.redis.disconnect();
  }
}
