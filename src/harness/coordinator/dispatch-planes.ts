import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { queueKeys, type QueueKeys } from '../../lease/index.js';
import { compileProducerOptions, connectProducerRedis, RolloutQueue } from '../../producer/index.js';
import type { CompiledQueueDispatchOptions } from './dispatch-options.js';

/** The producer, a BullMQ Queue handle (for removing jobs) and the key layout of one queue. */
export interface Plane {
  readonly rq: RolloutQueue;
  /** True when queueDispatch created the producer (and closes it). */
  readonly owned: boolean;
  readonly queue: Queue;
  readonly keys: QueueKeys;
}

/**
 * The producers of a queueDispatch, one long-lived per queue a call names (one QueueEvents
 * listener, no start-up per call), and one Redis connection of its own for the call keys.
 * `onOpen` runs once per plane opened (queueDispatch starts its sweeper there).
 */
export class DispatchPlanes {
  private readonly planes = new Map<string, Promise<Plane>>();
  private redisValue: Promise<Redis> | undefined;

  constructor(private readonly options: CompiledQueueDispatchOptions, private readonly onOpen: (plane: Plane) => void) {}

  /** The producer of one queue, created on first use (the `producer` option serves its own queue). */
  plane(queueName: string): Promise<Plane> {
    let plane = this.planes.get(queueName);
    if (!plane) {
      plane = this.open(queueName);
      this.planes.set(queueName, plane);
      plane.then(this.onOpen, () => this.planes.delete(queueName));
    }
    return plane;
  }

  private async open(queueName: string): Promise<Plane> {
    const { producer, producerOptions } = this.options;
    const given = producer && producer.options.queue === queueName ? producer : undefined;
    const base = producer
      ? {
          redisUrl: producer.options.redisUrl, prefix: producer.options.prefix, reconcileMs: producer.options.reconcileMs,
          maxSpecBytes: producer.options.maxSpecBytes, maxTaskBytes: producer.options.maxTaskBytes, logger: producer.options.logger,
        }
      : producerOptions;
    const rq = given ?? (await RolloutQueue.create({ ...base, queue: queueName, stopOnCaller: false }));
    const redis = await this.redis();
    const queue = new Queue(queueName, { prefix: rq.options.prefix, connection: redis });
    queue.on('error', () => undefined);
    return { rq, owned: !given, queue, keys: queueKeys(rq.options.prefix, queueName) };
  }

  /** The connection for the call keys (answers, requests, cleanups). */
  redis(): Promise<Redis> {
    if (!this.redisValue) {
      const { producer, producerOptions } = this.options;
      const compiled = producer?.options ?? compileProducerOptions(producerOptions);
      this.redisValue = connectProducerRedis(compiled.redisUrl, compiled.connectTimeoutMs, compiled.logger);
      this.redisValue.catch(() => (this.redisValue = undefined));
    }
    return this.redisValue;
  }

  /** Closes the producers it created, the Queue handles and its connection. */
  async close(): Promise<void> {
    const planes = await Promise.allSettled([...this.planes.values()]);
    for (const settled of planes) {
      if (settled.status !== 'fulfilled') continue;
      if (settled.value.owned) await settled.value.rq.close();
      await settled.value.queue.close().catch(() => undefined);
    }
    const redis = await this.redisValue?.catch(() => undefined);
    if (redis) await redis.quit().catch(() => redis.disconnect());
  }
}
