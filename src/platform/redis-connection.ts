import { readFileSync } from 'node:fs';
import type { RedisOptions } from 'ioredis';

/** Default Redis address when `REDIS_URL` is unset. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * TLS files for `rediss://` URLs, read from env when not given:
 * `REDIS_TLS_CA`, `REDIS_TLS_CERT`, `REDIS_TLS_KEY` (paths to PEM files).
 */
export interface RedisTlsFiles {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** The address of a Redis URL without its credentials, safe for logs and errors. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}:***@` : parsed.password ? ':***@' : '';
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(unparsable REDIS_URL)';
  }
}

/**
 * ioredis options from a `redis://[user:pass@]host:port[/db]` or `rediss://…` URL.
 *
 * - Reconnects forever with capped backoff (100 ms doubling to 5 s) so a restarted Redis is
 *   picked up by itself with no crash loop and no busy loop.
 * - `maxRetriesPerRequest: null`, which BullMQ requires for workers' blocking connections
 *   (BullMQ `src/classes/redis-connection.ts` warns otherwise).
 * @throws Error naming `REDIS_URL` (never its password) when the URL cannot be parsed.
 */
export function redisOptionsFromUrl(url: string, tls: RedisTlsFiles = {}): RedisOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REDIS_URL is not a URL; expected redis://[user:password@]host:port[/db] or rediss://…`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)} must start with redis:// or rediss://`);
  }
  const db = parsed.pathname && parsed.pathname !== '/' ? Number(parsed.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)}: database "${parsed.pathname.slice(1)}" is not a number`);
  }
  const options: RedisOptions = {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : 6379,
    db,
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5000),
  };
  if (parsed.username) options.username = decodeURIComponent(parsed.username);
  if (parsed.password) options.password = decodeURIComponent(parsed.password);
  if (parsed.protocol === 'rediss:') {
    const caFile = tls.caFile ?? process.env.REDIS_TLS_CA;
    const certFile = tls.certFile ?? process.env.REDIS_TLS_CERT;
    const keyFile = tls.keyFile ?? process.env.REDIS_TLS_KEY;
    options.tls = {
      servername: options.host,
      ...(caFile ? { ca: readFileSync(caFile) } : {}),
      ...(certFile ? { cert: readFileSync(certFile) } : {}),
      ...(keyFile ? { key: readFileSync(keyFile) } : {}),
    };
  }
  return options;
}
