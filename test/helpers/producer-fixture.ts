import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/platform/logger.js';
import { RolloutQueue, type ProducerOptions } from '../../src/producer/index.js';
import { startStubWorker, type StubWorker, type StubWorkerOptions } from './stub-worker.js';

/** Key prefix of producer tests (each test also gets its own queue name). */
export const TEST_PREFIX = 'rqt';

/**
 * Per-test resources of producer integration tests, all closed by {@link cleanup}: rollout
 * queues, stub workers, BullMQ queues for inspection, and one raw Redis client. Log lines of
 * every RolloutQueue are captured in {@link logs} (so tests can check what was, and was not, logged).
 */
export class ProducerFixture {
  readonly redis: Redis;
  readonly logs: string[] = [];
  private readonly closers: (() => Promise<unknown>)[] = [];

  constructor(readonly url: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: null });
    this.redis.on('error', () => undefined); // tests that restart Redis see ECONNREFUSED while it is down
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

  /** Closes everything opened through this fixture, newest first, then the raw client. */
  async cleanup(): Promise<void> {
    while (this.closers.length > 0) await this.closers.pop()?.().catch(() => undefined);
  }

  /** Closes the raw client; call in afterAll. */
  async end(): Promise<void> {
    await this.redis.quit();
  }
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
