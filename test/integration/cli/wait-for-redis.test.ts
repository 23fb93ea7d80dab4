import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { cliEnvironment } from '../../../src/cli/environment.js';
import { waitForRedis } from '../../../src/cli/redis-preflight.js';
import { freePort } from '../../helpers/redis.js';

describe('waitForRedis (worker start-up) against a Redis that does not answer', () => {
  it('pauses between attempts without leaving an abort listener behind, and returns false once aborted', async () => {
    const env = cliEnvironment({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    const stop = new AbortController();
    const listenersAtWait: number[] = [];
    const waits: number[] = [];
    const ready = await waitForRedis(env, (_message, retryMs) => {
      waits.push(retryMs);
      listenersAtWait.push(getEventListeners(stop.signal, 'abort').length);
      // Aborted in the second pause: no third attempt.
      if (waits.length === 2) queueMicrotask(() => stop.abort());
    }, stop.signal);
    expect(ready).toBe(false);
    expect(waits).toEqual([1000, 2000]);
    // The first pause ran out: its listener went with it (one was left per pause before).
    expect(listenersAtWait).toEqual([0, 0]);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});
