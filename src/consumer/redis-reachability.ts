import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';

/** Clients whose errors a started worker reports itself (`RedisReachability.watch`). */
const watched = new WeakSet<Redis>();

/** Error texts of a connection that failed (as ioredis and BullMQ word them), not of a refused command. */
const CONNECTION_ERROR = /ECONNREFUSED|Connection is closed|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENOTFOUND/;

/**
 * Reports a client's errors from its creation until the started worker watches it: without a
 * listener ioredis prints each one as "[ioredis] Unhandled error event" with its stack, once
 * per reconnect attempt while Redis is unreachable at start, and once for the refused SELECT
 * of a database the server lacks (which `missingDatabase` turns into the error `create` throws).
 */
export function quietUntilWatched(client: Redis, logger: Logger, address: string): void {
  let reported = false;
  client.on('error', (err: Error) => {
    if (watched.has(client) || reported || /DB index|invalid DB/i.test(err.message)) return;
    reported = true;
    logger.error({ redis: address, err: err.message }, `cannot reach Redis at ${address}; retrying with backoff`);
  });
}

/**
 * Whether the worker's Redis (at `address`, already redacted) is reachable, as its clients and
 * BullMQ's report it: one error line per outage and one line when it is back, not one per retry
 * (ioredis retries with backoff by itself). `down` feeds `/healthz`, the `redis_up` metric and
 * how the worker closes (quit when connected, disconnect when not).
 */
export class RedisReachability {
  /** True from the first failed connection until one of the watched clients is ready again. */
  down = false;

  constructor(private readonly logger: Logger, private readonly address: string) {}

  /** Reports `client`'s outages and recoveries from now on (and ends `quietUntilWatched`'s reports). */
  watch(client: Redis): void {
    watched.add(client);
    client.on('error', (err: Error) => this.noticeOutage(err));
    client.on('ready', () => {
      if (!this.down) return;
      this.down = false;
      this.logger.info({ redis: this.address }, 'reconnected to Redis');
    });
  }

  /**
   * An error from BullMQ's own clients, which often notice an outage first: reported once, like
   * ours, when it is a failed connection. Returns whether it was one (then nothing else is to say).
   */
  noticeConnectionError(err: Error): boolean {
    if (!CONNECTION_ERROR.test(err.message)) return false;
    this.noticeOutage(err);
    return true;
  }

  private noticeOutage(err: Error): void {
    if (this.down) return;
    this.down = true;
    this.logger.error({ redis: this.address, err: err.message }, `cannot reach Redis at ${this.address}; retrying with backoff`);
  }
}
