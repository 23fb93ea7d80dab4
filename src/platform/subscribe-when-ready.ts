import type { Redis } from 'ioredis';

/**
 * Subscribes `client` to `channel` once its connection is ready, and resolves when Redis has
 * confirmed the subscription.
 *
 * Why not at once: a SUBSCRIBE written while ioredis is still in its connection handshake
 * (status `connect`: CLIENT SETINFO / SETNAME and the ready check's INFO not yet answered) puts
 * the connection in subscriber mode first; ioredis 5.x then refuses or loses its own INFO
 * ("Connection in subscriber mode, only subscriber commands may be used"), reports an error,
 * and reconnects without the subscription (ioredis issue #2037, fixed in ioredis 6). A worker
 * started that way heard no cancel until its next record check. Waiting only for `ready` (not
 * `events.once`, which rejects on the first `error`): while Redis is unreachable this waits
 * for ioredis' reconnects, as a plain SUBSCRIBE would.
 */
export async function subscribeWhenReady(client: Redis, channel: string): Promise<void> {
  if (client.status !== 'ready') await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  await client.subscribe(channel);
}
