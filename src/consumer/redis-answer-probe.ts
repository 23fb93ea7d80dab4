import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';

/** Pause between two probes once the last one settled, ms. */
export const PROBE_EVERY_MS = 1_000;

/** A PING unanswered this long makes Redis "slow" (see {@link RedisAnswerProbe.onSlow}), ms: far above a healthy round trip. */
export const SLOW_MS = 500;

/**
 * Whether Redis answers, by a `PING` every {@link PROBE_EVERY_MS} on the worker's own command
 * connection, each bounded by that client's `commandTimeout` (`ROLLOUT_QUEUE_REDIS_TIMEOUT_MS`).
 *
 * Why a probe: a frozen Redis (SIGSTOP, a stuck VM, a partition that drops packets) keeps its TCP
 * connections open, so ioredis fires no `error` or `close` event and every command just waits;
 * `/healthz` stayed 200 for the whole freeze (BR-46). A probe that times out says so within the
 * timeout plus one probe interval. It also tells the worker when Redis answers again, the moment
 * kept answers are handed in (`KeptAnswers`).
 */
export class RedisAnswerProbe {
  /** When the probe that first went unanswered was sent (epoch ms), while Redis does not answer. */
  private silentSinceMs: number | undefined;
  /** When Redis last answered again after a silence (epoch ms). */
  private silenceEndedAtMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;
  private started = false;
  private stopped = false;
  private readonly listeners: { slow: Array<() => void>; silent: Array<() => void>; answered: Array<(silentMs: number) => void> } = { slow: [], silent: [], answered: [] };

  /**
   * @param redis a client with `commandTimeout` set (else an unanswered PING never settles).
   * @param address the redacted Redis address, for the log lines.
   * @param timeoutMs the client's command timeout, ms (for the log lines and `reason`).
   */
  constructor(
    private readonly redis: Redis,
    private readonly address: string,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * Starts probing (idempotent); the first probe goes out at once, and again each time the client
   * (re)connects, so a silence from before a reconnect ends as soon as Redis answers.
   */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.redis.on('ready', () => this.probeNow());
    this.probeNow();
  }

  private probeNow(): void {
    if (this.stopped || this.inFlight) return;
    clearTimeout(this.timer);
    void this.probe();
  }

  /** Stops probing; no listener is called afterwards. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * Calls `listener` each time a PING has waited {@link SLOW_MS} on a connected client: long
   * before the timeout says "silent", early enough for what must reach Redis before the stall
   * ends (requests queued in the connection run as Redis wakes, in the order they arrived).
   */
  onSlow(listener: () => void): void {
    this.listeners.slow.push(listener);
  }

  /** Calls `listener` each time Redis stops answering (once per silence). */
  onSilent(listener: () => void): void {
    this.listeners.silent.push(listener);
  }

  /** Calls `listener` with the silence's length (ms) each time Redis answers again after one. */
  onAnswered(listener: (silentMs: number) => void): void {
    this.listeners.answered.push(listener);
  }

  /** True while the last probe went unanswered within the timeout. */
  get silent(): boolean {
    return this.silentSinceMs !== undefined;
  }

  /** True while Redis does not answer, or when a silence ended less than `windowMs` ago (a lock lost to it may still show). */
  silentWithin(windowMs: number, nowMs: number = Date.now()): boolean {
    return this.silentSinceMs !== undefined || (this.silenceEndedAtMs !== undefined && nowMs - this.silenceEndedAtMs < windowMs);
  }

  /** For `/healthz`: why Redis counts as not answering, or undefined while it answers. */
  reason(nowMs: number = Date.now()): string | undefined {
    if (this.silentSinceMs === undefined) return undefined;
    return `Redis at ${this.address} has not answered for ${nowMs - this.silentSinceMs} ms (ROLLOUT_QUEUE_REDIS_TIMEOUT_MS = ${this.timeoutMs})`;
  }

  private async probe(): Promise<void> {
    const sentAt = Date.now();
    let answered: boolean;
    this.inFlight = true;
    const slow = setTimeout(() => {
      if (this.stopped || this.redis.status !== 'ready') return;
      for (const listener of this.listeners.slow) listener();
    }, SLOW_MS);
    slow.unref();
    try {
      await this.redis.ping();
      answered = true;
    } catch {
      answered = false;
    } finally {
      this.inFlight = false;
      clearTimeout(slow);
    }
    if (this.stopped) return;
    // Not connected: the connection's own error and ready events tell that outage; silence means
    // a connection that is up and says nothing.
    if (!answered && this.redis.status !== 'ready') {
      this.schedule();
      return;
    }
    if (answered && this.silentSinceMs !== undefined) {
      const silentMs = Date.now() - this.silentSinceMs;
      this.silentSinceMs = undefined;
      this.silenceEndedAtMs = Date.now();
      this.logger.info({ redis: this.address, silentMs }, `Redis at ${this.address} answers again after ${silentMs} ms without an answer`);
      for (const listener of this.listeners.answered) listener(silentMs);
    } else if (!answered && this.silentSinceMs === undefined) {
      this.silentSinceMs = sentAt;
      this.logger.error(
        { redis: this.address, timeoutMs: this.timeoutMs },
        `Redis at ${this.address} did not answer a PING within ${this.timeoutMs} ms; /healthz says 503, running rollouts go on and finished answers are kept here until it answers`,
      );
      for (const listener of this.listeners.silent) listener();
    }
    // While silent the next PING goes out at once: one is always waiting in the connection, so
    // its answer says "Redis is back" the moment Redis wakes (one per timeout, not a flood).
    this.schedule(answered ? PROBE_EVERY_MS : 0);
  }

  private schedule(delayMs: number = PROBE_EVERY_MS): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.probe(), delayMs);
    this.timer.unref();
  }
}
