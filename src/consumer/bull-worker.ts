import type { ConnectionOptions } from 'bullmq';
import { LeaseWorker } from './lease-worker.js';
import type { RedisClock } from '../platform/redis-clock.js';
import { createRedisClient, forBullMQ, redisOptionsFromUrl, redisTopology } from '../platform/redis-connection.js';
import { bullTelemetry } from '../platform/telemetry.js';
import type { Result } from '../spec/index.js';
import type { RolloutProcessor } from './rollout-processor.js';
import type { CompiledWorkerOptions } from './worker-options.js';

/** The BullMQ worker of one served queue: jobs are rollout specs (parsed by the processor), results Results. */
export type RolloutBullWorker = LeaseWorker<unknown, Result>;

/**
 * The connection of the base queue's BullMQ worker and Queue. BullMQ builds its own clients from
 * plain options; a Cluster must be handed over as a client (BullMQ duplicates it for the blocking
 * connection, and never closes a client it was given: the caller disconnects it). ioredis'
 * RedisOptions is what BullMQ builds from; its own type is looser.
 */
export function bullConnectionFor(options: CompiledWorkerOptions): ConnectionOptions {
  return (redisTopology(options.redisUrl) === 'cluster'
    ? createRedisClient(options.redisUrl, forBullMQ({ connectionName: `${options.prefix}:rollout-queue:bullmq` }))
    : forBullMQ(redisOptionsFromUrl(options.redisUrl))) as ConnectionOptions;
}

/**
 * A BullMQ worker of `queueName` running `processor` (one per served queue; they share the child
 * pool), its scripts on the Redis clock (`LeaseWorker`'s `clock`). Not running: call `run()`.
 */
export function bullWorker(queueName: string, concurrency: number, processor: RolloutProcessor, options: CompiledWorkerOptions, connection: ConnectionOptions, clock: RedisClock): RolloutBullWorker {
  return new LeaseWorker<unknown, Result>(queueName, processor.process, {
    connection,
    prefix: options.prefix,
    name: options.name,
    concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: options.maxRedispatches,
    autorun: false,
    ...(options.tracing ? { telemetry: bullTelemetry(true) } : {}),
  }, clock);
}
