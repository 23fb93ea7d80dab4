import { DEFAULT_PREFIX, DEFAULT_QUEUE, queueKeys } from '../lease/index.js';
import { DEFAULT_REDIS_URL, redactRedisUrl, redisOptionsFromUrl } from '../platform/redis-connection.js';
import { redisTimeoutMs } from '../platform/redis-timeout.js';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';

/** Where the CLI connects: from `REDIS_URL` and `ROLLOUT_QUEUE_PREFIX`. */
export interface CliEnvironment {
  /** The full URL, credentials included: pass it on, never print it. */
  readonly redisUrl: string;
  /** `redisUrl` without its password, for every message. */
  readonly address: string;
  /** Key prefix of every queue (default `rq`). */
  readonly prefix: string;
}

/**
 * Reads the connection settings from the environment. A `REDIS_URL` that is set but blank means
 * the default, said on `stderr`: a shell expansion that came out empty would otherwise point a
 * command at the local Redis without a word (fresh-user report).
 * @throws UsageError when `REDIS_URL` is not a redis:// or rediss:// URL, the prefix holds
 *   characters that would split Redis keys, or `ROLLOUT_QUEUE_REDIS_TIMEOUT_MS` is not a timeout in ms.
 */
export function cliEnvironment(env: NodeJS.ProcessEnv = process.env, stderr: Pick<NodeJS.WriteStream, 'write'> = process.stderr): CliEnvironment {
  const blank = env.REDIS_URL !== undefined && env.REDIS_URL.trim() === '';
  if (blank) stderr.write(`${MSG.redisUrlBlank(DEFAULT_REDIS_URL)}\n`);
  const redisUrl = env.REDIS_URL && !blank ? env.REDIS_URL.trim() : DEFAULT_REDIS_URL;
  // First: every client's options read it, so a bad value would otherwise read as a bad REDIS_URL.
  try {
    redisTimeoutMs(env);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (or pass --redis-timeout-ms)`);
  }
  try {
    redisOptionsFromUrl(redisUrl);
  } catch (err) {
    throw new UsageError(MSG.badRedisUrl((err as Error).message));
  }
  const prefix = env.ROLLOUT_QUEUE_PREFIX && env.ROLLOUT_QUEUE_PREFIX !== '' ? env.ROLLOUT_QUEUE_PREFIX : DEFAULT_PREFIX;
  try {
    queueKeys(prefix, DEFAULT_QUEUE);
  } catch (err) {
    throw new UsageError(MSG.badPrefix((err as Error).message));
  }
  return { redisUrl, address: redactRedisUrl(redisUrl), prefix };
}
