import { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';
import { duplicateForBullMQ } from '../platform/redis-connection.js';

/** Where a {@link ResultListener} sends finished jobs, by job id (= lease id). */
export interface ResultEventSinks {
  readonly completed: (jobId: string, returnvalue: unknown) => void;
  readonly failed: (jobId: string) => void;
}

/**
 * The producer's BullMQ `QueueEvents` listener: tells the live sessions of jobs completed and
 * failed, so they need not wait for their next reconciliation.
 */
export class ResultListener {
  private events: QueueEvents | undefined;
  /** The never-connected client QueueEvents duplicates (see {@link start}). */
  private template: Redis | undefined;

  /** `where.eventsKey` is the queue's events stream (`queue.toKey('events')`). */
  constructor(
    private readonly redis: Redis,
    private readonly where: { readonly queue: string; readonly prefix: string; readonly eventsKey: string },
    private readonly sinks: ResultEventSinks,
    private readonly logger: Logger,
  ) {}

  /**
   * Starts QueueEvents at the stream's current last id rather than `$`, so nothing emitted
   * between now and its first blocking XREAD is missed (bullmq#2874). It duplicates our
   * connection (a blocking XREAD must not stall commands) and closes the duplicate itself. What
   * it duplicates is a never-connected template with BullMQ's longer command timeout
   * (`duplicateForBullMQ`): ours would cut its `XREAD BLOCK` of up to 10 s short.
   * @throws a Redis error (call {@link close} even then).
   */
  async start(): Promise<void> {
    const last = await this.redis.xrevrange(this.where.eventsKey, '+', '-', 'COUNT', 1);
    const lastEventId = last[0]?.[0] ?? '0-0';
    this.template = duplicateForBullMQ(this.redis);
    const events = new QueueEvents(this.where.queue, { prefix: this.where.prefix, connection: this.template, lastEventId });
    this.events = events;
    events.on('error', (err: Error) => this.logger.warn({ err: err.message }, 'BullMQ QueueEvents error'));
    events.on('completed', ({ jobId, returnvalue }) => this.sinks.completed(jobId, returnvalue));
    events.on('failed', ({ jobId }) => this.sinks.failed(jobId));
    await events.waitUntilReady();
  }

  /** Closes QueueEvents (its errors ignored: the producer is closing) and the template. */
  async close(): Promise<void> {
    await this.events?.close().catch(() => undefined);
    this.template?.disconnect();
  }
}
