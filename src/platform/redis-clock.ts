import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';

/**
 * The Redis clock (`TIME`) read without a round trip: one sample pins Redis' time to this
 * process's monotonic clock (`performance.now()`), and {@link nowMs} extrapolates from it. So
 * a timing taken from it is on the one clock every run timing uses (Redis'), and an NTP step
 * of this host's wall clock between samples cannot bend it. The error is at most half the
 * sample's round trip plus the drift of the two clocks since the sample (parts per million):
 * {@link sample} again every few seconds.
 */
export class RedisClock {
  /** Redis time at the sample's midpoint, ms since the epoch. */
  private redisMs = 0;
  /** `performance.now()` at the same instant, ms. */
  private monotonicMs = 0;

  private constructor(private readonly redis: Redis) {}

  /**
   * A clock sampled once.
   * @throws whatever Redis answers to `TIME` (unreachable, refused).
   */
  static async start(redis: Redis): Promise<RedisClock> {
    const clock = new RedisClock(redis);
    await clock.sample();
    return clock;
  }

  /**
   * Reads `TIME` once more and re-pins the clock to it.
   * @throws whatever Redis answers (the previous sample stays in use).
   */
  async sample(): Promise<void> {
    const sent = performance.now();
    const [seconds, micros] = await this.redis.time();
    const received = performance.now();
    this.redisMs = Number(seconds) * 1000 + Number(micros) / 1000;
    this.monotonicMs = (sent + received) / 2;
  }

  /** Redis' time now, ms since the epoch (integer). */
  nowMs(): number {
    return Math.floor(this.redisMs + (performance.now() - this.monotonicMs));
  }
}
