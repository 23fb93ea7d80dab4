/**
 * The one setting that bounds every wait on Redis: `ROLLOUT_QUEUE_REDIS_TIMEOUT_MS` (the CLI's
 * `--redis-timeout-ms` sets it for the command and what it starts). Every ioredis client of the
 * project gets its `connectTimeout` and `commandTimeout` from it, so a Redis that does not answer
 * (a frozen server, a partition that drops packets: the TCP connection stays open and no error
 * event ever fires) fails a command after a bounded wait instead of hanging for ever.
 *
 * Why a setting and not a constant: a Redis across an ocean or under a huge `MULTI` answers
 * slower than one on the same host; 5 s is "surely dead" on a LAN and too eager for some WANs.
 */

/** Environment variable holding the timeout, ms. */
export const REDIS_TIMEOUT_ENV = 'ROLLOUT_QUEUE_REDIS_TIMEOUT_MS';

/** Default wait for one Redis command or connection, ms. */
export const DEFAULT_REDIS_TIMEOUT_MS = 5_000;

/** Smallest accepted timeout, ms: below it a busy but healthy Redis (a fork for BGSAVE) is taken for dead. */
export const MIN_REDIS_TIMEOUT_MS = 500;

/** Largest accepted timeout, ms (10 min). */
export const MAX_REDIS_TIMEOUT_MS = 600_000;

/**
 * How long a command of a BullMQ connection may legitimately wait on top of the timeout, ms.
 * BullMQ's workers block in `BZPOPMIN` up to 10 s (`maximumBlockTimeout`, BullMQ
 * `dist/esm/classes/worker.js` `getBlockTimeout`) and `QueueEvents` in `XREAD BLOCK` up to
 * `blockingTimeout` (10 s default); both race their own watchdog of block time + 1 s
 * (`redis-queue-backend.js` `waitForJob`, `readEvents`), which resets the connection. A
 * `commandTimeout` shorter than that would fail healthy blocking reads, so BullMQ's clients get
 * the timeout plus this bound: the watchdog answers first, and nothing waits unbounded.
 */
export const BULLMQ_BLOCK_BOUND_MS = 11_000;

/**
 * The timeout named by `env` (`ROLLOUT_QUEUE_REDIS_TIMEOUT_MS`), else {@link DEFAULT_REDIS_TIMEOUT_MS}.
 * @throws Error naming the variable, the value, the allowed range and the fix when it is not an
 *   integer number of ms in [{@link MIN_REDIS_TIMEOUT_MS}, {@link MAX_REDIS_TIMEOUT_MS}].
 */
export function redisTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[REDIS_TIMEOUT_ENV];
  if (raw === undefined || raw.trim() === '') return DEFAULT_REDIS_TIMEOUT_MS;
  const problem = redisTimeoutProblem(raw.trim());
  if (problem) throw new Error(`${REDIS_TIMEOUT_ENV}=${JSON.stringify(raw)}: ${problem}; unset it for the default ${DEFAULT_REDIS_TIMEOUT_MS}`);
  return Number(raw.trim());
}

/** Why `text` is not a valid timeout (ms), or undefined when it is one. */
export function redisTimeoutProblem(text: string): string | undefined {
  if (!/^\d+$/.test(text)) return `expected a whole number of milliseconds, got ${JSON.stringify(text)}`;
  const value = Number(text);
  if (value < MIN_REDIS_TIMEOUT_MS || value > MAX_REDIS_TIMEOUT_MS) return `expected ${MIN_REDIS_TIMEOUT_MS} to ${MAX_REDIS_TIMEOUT_MS} ms, got ${value}`;
  return undefined;
}

/** The ioredis options every client of the project gets from the timeout. */
export interface RedisTimeoutOptions {
  /** TCP (and TLS) connect, ms: ioredis destroys the socket and retries past it. */
  readonly connectTimeout: number;
  /** Each command, from its send (or its queueing while offline) to its reply, ms: ioredis rejects it with "Command timed out". */
  readonly commandTimeout: number;
}

/**
 * The timeouts of a client: `command` for the project's own clients, `bullmq` for clients BullMQ
 * builds or duplicates (its blocking reads get {@link BULLMQ_BLOCK_BOUND_MS} on top).
 * Note: a command that timed out may still run when Redis wakes (it sits in the socket); only its
 * reply is lost. Callers must treat a timeout as "unknown outcome", not "not done".
 */
export function redisTimeoutOptions(kind: 'command' | 'bullmq', timeoutMs: number = redisTimeoutMs()): RedisTimeoutOptions {
  return { connectTimeout: timeoutMs, commandTimeout: kind === 'bullmq' ? timeoutMs + BULLMQ_BLOCK_BOUND_MS : timeoutMs };
}

/** True when `err` is ioredis giving up on a command after `commandTimeout` (its exact message, ioredis `Command.js`). */
export function isRedisTimeout(err: unknown): boolean {
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' && /Command timed out|connect ETIMEDOUT/.test(message);
}

/** One line for a Redis that did not answer: the address, the wait and how to change it. */
export function redisNoAnswerText(address: string, timeoutMs: number): string {
  return `Redis at ${address} did not answer within ${timeoutMs} ms (${REDIS_TIMEOUT_ENV} / --redis-timeout-ms); it is stopped, overloaded or cut off by the network: check that it runs and answers redis-cli PING`;
}
