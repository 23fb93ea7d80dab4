import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { checkEvictionPolicy, EvictionPolicyError } from '../platform/check-eviction-policy.js';
import { createLogger } from '../platform/logger.js';
import { missingDatabase, redisOptionsFromUrl } from '../platform/redis-connection.js';
import { redisNoAnswerText, redisTimeoutMs } from '../platform/redis-timeout.js';
import { CliError, UsageError } from './errors.js';
import type { CliEnvironment } from './environment.js';
import { MSG } from './messages.js';

/**
 * Why a Redis could not be used: `unreachable` may pass by itself, the others will not;
 * `url` is a `REDIS_URL` naming what the server lacks (a database number past its range),
 * a usage error (exit 2) as docs/cli.md lists a wrong `REDIS_URL`.
 */
export type RedisProblem = { readonly kind: 'unreachable' | 'auth' | 'url' | 'other'; readonly message: string };


/**
 * Connects once (no retries), sends PING and disconnects.
 * @returns undefined when Redis answered, else the problem as a one-line message that names
 *   the redacted address and the fix (never the password).
 */
export async function probeRedis(env: CliEnvironment): Promise<RedisProblem | undefined> {
  const options = redisOptionsFromUrl(env.redisUrl);
  const client = new Redis({
    ...options,
    lazyConnect: true,
    // No CLIENT SETINFO before the ready check: against a Redis that does not answer, each would
    // wait the whole timeout first, doubling the time to the one-line answer.
    disableClientInfo: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // ioredis rejects connect() with "Connection is closed."; the cause (ECONNREFUSED, …) comes as an event.
  let cause: unknown;
  client.on('error', (err) => void (cause ??= err));
  try {
    await client.connect();
    await client.ping();
    const missing = await missingDatabase(client, env.address);
    return missing === undefined ? undefined : { kind: 'url', message: missing };
  } catch (err) {
    return classify(cause ?? err, env, options);
  } finally {
    client.disconnect();
  }
}

function classify(err: unknown, env: CliEnvironment, options: { readonly host?: string | undefined; readonly password?: string | undefined; readonly tls?: unknown; readonly commandTimeout?: number | undefined }): RedisProblem {
  const raw = err instanceof Error ? err.message : String(err);
  // Connected, but nothing answered (a frozen server, a partition that drops packets): the wait is the news.
  if (/Command timed out/.test(raw)) return { kind: 'unreachable', message: redisNoAnswerText(env.address, options.commandTimeout ?? redisTimeoutMs()) };
  const text = options.password ? raw.split(options.password).join('***') : raw;
  const code = (err as { code?: unknown }).code;
  // Something listens but no TLS handshake completes: a plain Redis answers a ClientHello with
  // an error or not at all (fresh-user report: rediss:// to a plain Redis said "Start Redis").
  if (options.tls && code !== 'ECONNREFUSED' && code !== 'ENOTFOUND' && code !== 'EAI_AGAIN' && /ETIMEDOUT|ECONNRESET|EPROTO|SSL|TLS|socket disconnected|timeout/i.test(`${String(code)} ${text}`)) {
    return { kind: 'unreachable', message: MSG.redisTlsFailed(env.address, typeof code === 'string' ? code : text.split('\n')[0] ?? text) };
  }
  // A name that does not resolve will not start resolving because Redis starts: "Start Redis" would mislead.
  if ((code === 'ENOTFOUND' || code === 'EAI_AGAIN') && options.host) return { kind: 'unreachable', message: MSG.redisHostUnknown(env.address, options.host, code) };
  // Fresh-user report (helper-32): a hint pasted as printed carries `***` for the password.
  if (/WRONGPASS|invalid (username-)?password/i.test(text)) return { kind: 'auth', message: MSG.redisAuthFailed(env.address, options.password === '***') };
  if (/NOAUTH/i.test(text)) return { kind: 'auth', message: MSG.redisNeedsAuth(env.address) };
  if (/without any password configured/i.test(text)) return { kind: 'auth', message: MSG.redisNoPasswordSet(env.address) };
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return { kind: 'unreachable', message: MSG.redisUnreachable(env.address, code) };
  if (/connect|timeout|closed|ECONN|EHOST|ENOTFOUND|EAI_AGAIN/i.test(text)) {
    return { kind: 'unreachable', message: MSG.redisUnreachable(env.address, text.split('\n')[0] ?? text) };
  }
  return { kind: 'other', message: MSG.redisOther(env.address, text.split('\n')[0] ?? text) };
}

/** The CLI error of a problem: a wrong `REDIS_URL` is a usage error (exit 2), the rest exit 1. */
function problemError(problem: RedisProblem): CliError {
  return problem.kind === 'url' ? new UsageError(problem.message) : new CliError(problem.message);
}

/**
 * Fails fast when Redis cannot be used, with a one-line message (exit code 1; 2 for a
 * `REDIS_URL` naming a database the server lacks). Commands that
 * talk to Redis once (`run`, `status`, `cancel`, …) call this first, so a wrong address or
 * password is one clear line instead of a stream of reconnect errors.
 * @throws CliError naming the redacted address and the fix (UsageError for a missing database).
 */
export async function requireRedis(env: CliEnvironment): Promise<void> {
  const problem = await probeRedis(env);
  if (problem) throw problemError(problem);
}

/**
 * Waits until Redis answers, for long-running services (`worker`): an unreachable Redis is
 * logged once per attempt with capped backoff (1 s doubling to 30 s), never a crash loop nor
 * a busy loop. Wrong credentials do not pass by themselves, so they fail at once.
 * @param onWait called before each pause with the message and the pause in ms.
 * @param signal stops waiting (resolves false).
 * @returns true once Redis answers, false when `signal` aborted first.
 * @throws CliError for credential or other non-transient problems.
 */
export async function waitForRedis(
  env: CliEnvironment,
  onWait: (message: string, retryMs: number) => void,
  signal?: AbortSignal,
): Promise<boolean> {
  for (let attempt = 0; !signal?.aborted; attempt += 1) {
    const problem = await probeRedis(env);
    if (!problem) return true;
    if (problem.kind !== 'unreachable') throw problemError(problem);
    const retryMs = Math.min(1000 * 2 ** attempt, 30_000);
    onWait(problem.message, retryMs);
    // Aborted, the pause ends at once (the loop then returns false).
    await delay(retryMs, undefined, signal ? { signal } : {}).catch(() => undefined);
  }
  return false;
}

/**
 * `run` refuses to start on a Redis whose `maxmemory-policy` may evict keys (one line, exit 1)
 * unless `allowEviction` (`--allow-eviction`), which logs a warning instead. Checks Redis is
 * usable first (see {@link requireRedis}).
 * @throws CliError naming the policy and both fixes.
 */
export async function refuseEvictingRedis(env: CliEnvironment, allowEviction: boolean): Promise<void> {
  await requireRedis(env);
  const client = new Redis({ ...redisOptionsFromUrl(env.redisUrl), lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    await client.connect();
    await checkEvictionPolicy(client, createLogger({ component: 'run' }), { refuse: !allowEviction });
  } catch (err) {
    if (err instanceof EvictionPolicyError) throw new CliError(err.message);
    throw err;
  } finally {
    client.disconnect();
  }
}
