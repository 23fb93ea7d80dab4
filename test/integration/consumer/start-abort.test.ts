import { describe, expect, it } from 'vitest';
import { RolloutWorker, WorkerStartAborted } from '../../../src/consumer/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { startRedis } from '../../helpers/redis.js';

describe('a worker start that waits for a Redis that went away', () => {
  it('ends at its signal with WorkerStartAborted (the CLI worker passes its first SIGTERM)', async () => {
    const redis = await startRedis({ private: true });
    const lines: string[] = [];
    const logger = createLogger({}, { write: (line: string) => void lines.push(line) });
    try {
      await redis.kill();
      const stop = new AbortController();
      const start = RolloutWorker.create({ redisUrl: redis.url, queue: 'start-abort', logger }, { signal: stop.signal });
      const outcome = start.then(() => 'started', (err: unknown) => err);
      // Still waiting for Redis (ioredis reconnects with backoff): nothing ends it but the signal.
      const waiting = await Promise.race([outcome, new Promise((resolve) => setTimeout(() => resolve('waiting'), 1000))]);
      expect(waiting).toBe('waiting');
      stop.abort('SIGTERM');
      const err = await outcome;
      expect(err).toBeInstanceOf(WorkerStartAborted);
      expect((err as Error).message).toContain('SIGTERM');
      // Aborted before the worker existed: no "worker starting" line, no lease taken.
      expect(lines.join('')).not.toContain('worker running');
    } finally {
      await redis.stop();
    }
  });

  it('an abort after the start finished changes nothing', async () => {
    const redis = await startRedis({ private: true });
    const stop = new AbortController();
    const worker = await RolloutWorker.create({ redisUrl: redis.url, queue: 'start-abort-late', logger: createLogger({}, { write: () => true }) }, { signal: stop.signal });
    try {
      stop.abort('SIGTERM');
      await new Promise((resolve) => setImmediate(resolve));
      expect(worker.status).toBe('running');
    } finally {
      await worker.close();
      await redis.stop();
    }
  });
});
