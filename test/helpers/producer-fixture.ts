import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createLogger } from '../../src/platform/logger.js';
import { RolloutQueue, type ProducerOptions } from '../../src/producer/index.js';
import { startRedis, type StartRedisOptions, type TestRedis } from './redis.js';
import { startStubWorker, type StubWorker, type StubWorkerOptions } from './stub-worker.js';

/** Key prefix of producer tests (each test also gets its own queue name). */
export const TEST_PREFIX = 'rqt';

/**
 * Per-test resources of producer integration tests, all closed by {@link cleanup}: rollout
 * queues, stub workers, BullMQ queues for inspection, and one raw Redis client. Log lines of
 * every RolloutQueue are captured in {@link logs} (so tests can check what was, and was not, logged).
 */
export class ProducerFixture {
  readonly logs: string[] = [];
  private readonly closers: (() => Promise<unknown>)[] = [];
  private connection: { readonly url: string; readonly redis: Redis } | undefined;

  /** With `url`, connects at once; without, {@link connect} must run before anything else is used. */
  constructor(url?: string) {
    if (url !== undefined) this.connect(url);
  }

  /** Points the fixture at the Redis server at `url` and opens its raw client (once). */
  connect(url: string): void {
    if (this.connection) throw new Error(`ProducerFixture is already connected to ${this.connection.url}`);
    const redis = new Redis(url, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // tests that restart Redis see ECONNREFUSED while it is down
    this.connection = { url, redis };
  }

  /** URL of the test's Redis server. */
  get url(): string {
    return this.connected().url;
  }

  /** Raw Redis client for looking at keys (closed by {@link end}). */
  get redis(): Redis {
    return this.connected().redis;
  }

  private connected(): { readonly url: string; readonly redis: Redis } {
    if (!this.connection) {
      throw new Error('ProducerFixture is not connected yet: use it inside tests and hooks (useProducerFixture connects it in beforeAll)');
    }
    return this.connection;
  }

  /** A fresh queue name, so tests never share BullMQ keys. */
  queueName(): string {
    return `q-${randomUUID().slice(0, 8)}`;
  }

  /** A run id unique to this test. */
  runId(label = 'run'): string {
    return `${label}-${randomUUID().slice(0, 8)}`;
  }

  /** Opens a RolloutQueue on `queue` (closed by cleanup unless the test closes it first). */
  async open(queue: string, options: ProducerOptions = {}): Promise<RolloutQueue> {
    const logger = createLogger({ component: 'producer-test' }, { write: (line: string) => void this.logs.push(line) });
    const rq = await RolloutQueue.create({ redisUrl: this.url, queue, prefix: TEST_PREFIX, reconcileMs: 200, logger, ...options });
    this.closers.push(() => rq.close());
    return rq;
  }

  /** Starts a stub worker on `queue`. */
  async worker(queue: string, options: Partial<StubWorkerOptions> = {}): Promise<StubWorker> {
    const worker = await startStubWorker({ url: this.url, queue, prefix: TEST_PREFIX, ...options });
    this.closers.push(() => worker.stop());
    return worker;
  }

  /** A BullMQ Queue on `queue` for looking at jobs and counts. */
  inspect(queue: string): Queue {
    const q = new Queue(queue, { prefix: TEST_PREFIX, connection: this.redis });
    this.closers.push(() => q.close());
    return q;
  }

  /**
   * Job hashes of `runId` on `queue` (SCAN). Counts jobs however BullMQ files them: a delivered
   * run's jobs leave the `completed` set at once (retention) but stay readable until they expire.
   */
  async jobHashes(queue: string, runId: string): Promise<number> {
    let count = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${TEST_PREFIX}:${queue}:${runId}.*`, 'COUNT', 1000);
      count += keys.filter((key) => !/:(lock|logs)$/.test(key)).length;
      cursor = next;
    } while (cursor !== '0');
    return count;
  }

  /** Closes everything opened through this fixture, newest first, then the raw client. */
  async cleanup(): Promise<void> {
    while (this.closers.length > 0) await this.closers.pop()?.().catch(() => undefined);
  }

  /** Closes the raw client, if it was ever opened; call in afterAll. */
  async end(): Promise<void> {
    await this.connection?.redis.quit();
  }
}

/**
 * The usual lifecycle of a producer integration test file, registered with vitest's hooks:
 * `beforeAll` starts one Redis ({@link startRedis} with `options`) and connects the returned
 * fixture to it, `afterEach` runs {@link ProducerFixture.cleanup}, `afterAll` closes the raw
 * client and stops Redis. Call once at the top level of the file; the fixture is usable
 * inside tests and hooks (its `url` and `redis` throw before `beforeAll` has run).
 */
export function useProducerFixture(options: StartRedisOptions = {}): ProducerFixture {
  const fx = new ProducerFixture();
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    redis = await startRedis(options);
    fx.connect(redis.url);
  });
  afterEach(async () => fx.cleanup());
  afterAll(async () => {
    await fx.end();
    await redis?.stop();
  });
  return fx;
}

/** Collects an async iterable until it ends or throws; returns what came and the error. */
export async function collect<T>(items: AsyncIterable<T>, onItem?: (item: T) => void | Promise<void>): Promise<{ items: T[]; error: unknown }> {
  const out: T[] = [];
  try {
    for await (const item of items) {
      out.push(item);
      await onItem?.(item);
    }
    return { items: out, error: undefined };
  } catch (error) {
    return { items: out, error };
  }
}
