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

/** A Redis URL split by hand: credentials are everything between `//` and the LAST `@`. */
interface UrlParts {
  readonly scheme: string;
  readonly user: string | undefined;
  readonly password: string | undefined;
  /** `host:port/db`, credentials removed. */
  readonly rest: string;
}

// Split by hand, not with `new URL`: an unencoded password holding "/" or "#" (base64 does)
// would otherwise be read as a path or fragment and end up in logs and errors.
function splitUrl(url: string): UrlParts | undefined {
  const match = /^([a-z][a-z0-9+.-]*:)\/\/(.*)$/is.exec(url);
  if (!match) return undefined;
  const scheme = (match[1] as string).toLowerCase();
  const body = match[2] as string;
  const at = body.lastIndexOf('@');
  if (at < 0) return { scheme, user: undefined, password: undefined, rest: body };
  const credentials = body.slice(0, at);
  const colon = credentials.indexOf(':');
  const decode = (text: string): string => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  return {
    scheme,
    user: colon < 0 ? decode(credentials) || undefined : decode(credentials.slice(0, colon)) || undefined,
    password: colon < 0 ? undefined : decode(credentials.slice(colon + 1)),
    rest: body.slice(at + 1),
  };
}

/** The address of a Redis URL without its credentials, safe for logs and errors (one line). */
export function redactRedisUrl(url: string): string {
  const parts = splitUrl(url);
  if (!parts) return '(unparsable REDIS_URL)';
  const user = parts.user ? JSON.stringify(parts.user).slice(1, -1) : '';
  const credentials = parts.user || parts.password !== undefined ? `${user}:***@` : '';
  return `${parts.scheme}//${credentials}${parts.rest.replace(/[\r\n\t]/g, ' ')}`;
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
  const parts = splitUrl(url);
  if (!parts) throw new Error('REDIS_URL is not a URL; expected redis://[user:password@]host:port[/db] or rediss://…');
  if (parts.scheme !== 'redis:' && parts.scheme !== 'rediss:') {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)} must start with redis:// or rediss://`);
  }
  let parsed: URL;
  try {
    parsed = new URL(`${parts.scheme}//${parts.rest}`);
  } catch {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)} is not a valid address; expected redis://[user:password@]host:port[/db]`);
  }
  const dbText = parsed.pathname && parsed.pathname !== '/' ? parsed.pathname.slice(1) : '0';
  if (!/^\d{1,5}$/.test(dbText)) {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)}: database "${dbText}" is not a number; use redis://host:port/0`);
  }
  const db = Number(dbText);
  const options: RedisOptions = {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : 6379,
    db,
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5000),
  };
  if (parts.user) options.username = parts.user;
  if (parts.password) options.password = parts.password;
  if (parts.scheme === 'rediss:') {
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
