import { afterAll, beforeAll } from 'vitest';
import { createLogger } from '../../../src/platform/logger.js';
import type { Result } from '../../../src/spec/index.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import type { WorkerProcess } from '../../helpers/worker-process.js';

/** What {@link fleetFixture} gives a test file. */
export interface FleetFixture {
  /** The file's private Redis (started in beforeAll). */
  readonly redis: TestRedis;
  /** Worker processes the tests start; SIGKILLed after the file. */
  readonly workers: WorkerProcess[];
  /** Producers, queues and servers to close after the file, in order. */
  readonly closers: (() => Promise<unknown>)[];
  /** A logger that writes nothing. */
  readonly silent: ReturnType<typeof createLogger>;
}

/**
 * One private Redis per test file, and cleanup of the worker processes and clients its tests
 * register (the fleets tests start several pools of real workers each).
 */
export function fleetFixture(): FleetFixture {
  let redis: TestRedis | undefined;
  const workers: WorkerProcess[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    redis = await startRedis({ private: true });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    for (const close of closers) await close();
    await redis?.stop();
  });
  return {
    get redis(): TestRedis {
      if (!redis) throw new Error('fleetFixture: Redis is started in beforeAll; use it inside a test');
      return redis;
    },
    workers,
    closers,
    silent: createLogger({}, { write: () => true }),
  };
}

/** Every Result of an iteration, in the order they came (the iteration's error is thrown). */
export async function all(results: AsyncIterable<Result>): Promise<Result[]> {
  const items: Result[] = [];
  for await (const result of results) items.push(result);
  return items;
}
