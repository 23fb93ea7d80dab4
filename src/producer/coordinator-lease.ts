import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from '../platform/logger.js';

/** Lifetime of a coordinator lease without renewal, ms: a SIGKILLed coordinator's run is free again after this. */
export const COORDINATOR_LEASE_MS = 6000;

// Renew or release only while we still hold it: the token is ours alone.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Thrown when another live coordinator is delivering the same run. */
export class RunBusyError extends Error {
  constructor(readonly runId: string, readonly holder: string) {
    super(`run "${runId}" is being delivered by another coordinator (${holder}); two coordinators of one run would each receive every Result. Wait for it to finish, stop it, or use another run id`);
    this.name = 'RunBusyError';
  }
}

/**
 * The right to deliver one run's Results: at most one coordinator process at a time, so
 * each Result reaches exactly one results file. A Redis key with a TTL, renewed every third
 * of it; a coordinator killed with SIGKILL stops renewing and a restarted one takes over
 * within {@link COORDINATOR_LEASE_MS} (it waits that long, plus a margin, before refusing).
 */
export class CoordinatorLease {
  private readonly timer: NodeJS.Timeout;

  private constructor(private readonly redis: Redis, private readonly key: string, private readonly token: string, logger: Logger, runId: string) {
    this.timer = setInterval(() => {
      this.redis.eval(RENEW, 1, key, token, COORDINATOR_LEASE_MS).then(
        (renewed) => {
          if (Number(renewed) !== 1) logger.error({ runId }, 'lost the coordinator lease of this run (Redis restarted without persistence, or a paused process); another coordinator may deliver it too');
        },
        () => undefined, // Redis unreachable: ioredis retries; the next tick renews.
      );
    }, COORDINATOR_LEASE_MS / 3);
    this.timer.unref();
  }

  /**
   * Takes the lease of `runId`, waiting while a previous holder's lease has not expired.
   * @throws RunBusyError when another coordinator keeps renewing it past the wait.
   */
  static async acquire(redis: Redis, key: string, runId: string, logger: Logger): Promise<CoordinatorLease> {
    const token = randomUUID();
    const value = JSON.stringify({ token, pid: process.pid, host: os.hostname() });
    const until = Date.now() + COORDINATOR_LEASE_MS * 2;
    let told = false;
    for (;;) {
      if ((await redis.set(key, value, 'PX', COORDINATOR_LEASE_MS, 'NX')) === 'OK') return new CoordinatorLease(redis, key, value, logger, runId);
      const holder = await redis.get(key);
      const who = holder ? describeHolder(holder) : 'unknown';
      if (Date.now() > until) throw new RunBusyError(runId, who);
      if (!told) {
        logger.warn({ runId, holder: who }, 'another coordinator holds this run; waiting for its lease to expire (it may have been killed)');
        told = true;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** Gives the run up (idempotent); a Redis error is ignored, the TTL frees it anyway. */
  async release(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.eval(RELEASE, 1, this.key, this.token).catch(() => undefined);
  }
}

function describeHolder(json: string): string {
  try {
    const { pid, host } = JSON.parse(json) as { pid?: number; host?: string };
    return `pid ${pid} on ${host}`;
  } catch {
    return 'unknown';
  }
}
