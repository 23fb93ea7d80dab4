import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient } from '../../../src/platform/redis-connection.js';
import { subscribeWhenReady } from '../../../src/platform/subscribe-when-ready.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// The worker's cancel subscription (fresh-user report: 3 of ~17 worker starts logged "Connection
// in subscriber mode, only subscriber commands may be used" and then held a connection with no
// subscription, so cancels reached them only at their next record check).
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ private: true });
});
afterAll(async () => {
  await redis.stop();
});

/** The `sub=` count CLIENT LIST shows for connections named `name`. */
async function subscriptionsOf(name: string): Promise<number[]> {
  const probe = createRedisClient(redis.url);
  try {
    const list = (await probe.client('LIST')) as string;
    return list.split('\n').filter((line) => line.includes(` name=${name} `)).map((line) => Number(/ sub=(\d+) /.exec(line)?.[1]));
  } finally {
    probe.disconnect();
  }
}

describe('subscribeWhenReady', () => {
  it('subscribes a client asked to while its connection handshake is in flight, without an error', async () => {
    // 'connect' is the moment ioredis has its handshake (CLIENT SETINFO/SETNAME, INFO) in flight:
    // a plain SUBSCRIBE there fails every time on ioredis 5.
    for (let i = 0; i < 10; i++) {
      const name = `cancel-sub-${i}`;
      const client = createRedisClient(redis.url, { connectionName: name });
      const errors: string[] = [];
      client.on('error', (err: Error) => errors.push(err.message));
      try {
        await new Promise<void>((resolve) => client.once('connect', () => resolve()));
        await subscribeWhenReady(client, 'rq-test-cancel');
        expect(errors).toEqual([]);
        expect(await subscriptionsOf(name)).toEqual([1]);
      } finally {
        client.disconnect();
      }
    }
  });

  it('subscribes a client already ready at once', async () => {
    const client = createRedisClient(redis.url, { connectionName: 'cancel-sub-ready' });
    try {
      await new Promise<void>((resolve) => client.once('ready', () => resolve()));
      await subscribeWhenReady(client, 'rq-test-cancel');
      expect(await subscriptionsOf('cancel-sub-ready')).toEqual([1]);
    } finally {
      client.disconnect();
    }
  });
});
