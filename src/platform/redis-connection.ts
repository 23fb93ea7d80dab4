import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import { redisTimeoutOptions } from './redis-timeout.js';

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
  // One credential without ":" is the password (redis://s3cret@host, as redis-cli reads it):
  // a user name alone cannot AUTH, and read as one it was printed in the clear (fresh-user report).
  return {
    scheme,
    user: colon < 0 ? undefined : decode(credentials.slice(0, colon)) || undefined,
    password: colon < 0 ? decode(credentials) || undefined : decode(credentials.slice(colon + 1)),
    rest: body.slice(at + 1),
  };
}

/** The password of a Redis URL as it authenticates (decoded), or undefined: what output must never show. */
export function redisUrlPassword(url: string): string | undefined {
  return splitUrl(url)?.password || undefined;
}

/** The address of a Redis URL without its credentials, safe for logs and errors (one line). */
export function redactRedisUrl(url: string): string {
  const parts = splitUrl(url);
  if (!parts) return '(unparsable REDIS_URL)';
  const user = parts.user ? JSON.stringify(parts.user).slice(1, -1) : '';
  const credentials = parts.user || parts.password !== undefined ? `${user}:***@` : '';
  // Query values too: `?password=…` is not read (redisOptionsFromUrl refuses it), and the whole
  // URL was printed in the NOAUTH error it led to (fresh-user report).
  const rest = parts.rest.replace(/([?&][^=&#]*=)[^&#]*/g, '$1***');
  return `${parts.scheme}//${credentials}${rest.replace(/[\r\n\t]/g, ' ')}`;
}

/**
 * ioredis options from a `redis://[user:pass@]host:port[/db]` or `rediss://…` URL.
 *
 * - Reconnects forever with capped backoff (100 ms doubling to 5 s) so a restarted Redis is
 *   picked up by itself with no crash loop and no busy loop.
 * - `maxRetriesPerRequest: null`, which BullMQ requires for workers' blocking connections
 *   (BullMQ `src/classes/redis-connection.ts` warns otherwise).
 * - `connectTimeout` and `commandTimeout` from `ROLLOUT_QUEUE_REDIS_TIMEOUT_MS`
 *   (`platform/redis-timeout.ts`): a Redis that does not answer fails a command after a bounded
 *   wait. Hand BullMQ {@link forBullMQ} of these options: its blocking reads need longer.
 * @throws Error naming `REDIS_URL` (never its password) when the URL cannot be parsed.
 */
export function redisOptionsFromUrl(url: string, tls: RedisTlsFiles = {}): RedisOptions {
  const parts = splitUrl(url);
  if (!parts) throw new Error(`REDIS_URL is not a URL; expected ${URL_FORMS}`);
  const topology = TOPOLOGY_OF_SCHEME[parts.scheme];
  if (!topology) throw new Error(`REDIS_URL ${redactRedisUrl(url)} must start with redis://, rediss://, redis+cluster:// or redis+sentinel://`);
  const secure = parts.scheme.startsWith('rediss');
  if (topology !== 'single') return multiNodeOptions(url, parts, topology, secure, tls);
  let parsed: URL;
  try {
    parsed = new URL(`${parts.scheme}//${parts.rest}`);
  } catch {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)} is not a valid address; expected redis://[user:password@]host:port[/db]`);
  }
  if (parsed.search !== '') {
    throw new Error(`REDIS_URL ${redactRedisUrl(url)}: query parameters are not read; put the password in the URL itself, redis://:PASSWORD@host:port[/db] (URL-encoded)`);
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
    ...redisTimeoutOptions('command'),
  };
  if (parts.user) options.username = parts.user;
  if (parts.password) options.password = parts.password;
  if (secure) options.tls = tlsOptions(options.host as string, tls);
  return options;
}

/** The URL forms REDIS_URL accepts, for error messages. */
const URL_FORMS =
  'redis://[user:password@]host:port[/db], rediss://… (TLS), redis+cluster://[user:password@]host:port,host:port (Redis Cluster) or ' +
  'redis+sentinel://[user:password@]host:port,host:port/<master name>[/db] (Sentinel)';

/** How rollout-queue reaches Redis, chosen by the URL scheme of REDIS_URL. */
export type RedisTopology = 'single' | 'cluster' | 'sentinel';

const TOPOLOGY_OF_SCHEME: Readonly<Record<string, RedisTopology>> = {
  'redis:': 'single',
  'rediss:': 'single',
  'redis+cluster:': 'cluster',
  'rediss+cluster:': 'cluster',
  'redis+sentinel:': 'sentinel',
  'rediss+sentinel:': 'sentinel',
};

/** The topology a REDIS_URL names (`single` for anything unparsable: the parse error comes later). */
export function redisTopology(url: string): RedisTopology {
  const scheme = splitUrl(url)?.scheme;
  return (scheme && TOPOLOGY_OF_SCHEME[scheme]) || 'single';
}

/** `host:port,host:port` of a multi-node URL as ioredis nodes. */
function nodesOf(url: string, list: string, defaultPort: number): ClusterNode[] {
  const nodes = list.split(',').filter((item) => item !== '').map((item) => {
    const match = /^(\[[0-9a-fA-F:]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(item.trim());
    if (!match) throw new Error(`REDIS_URL ${redactRedisUrl(url)}: "${item}" is not host:port; expected ${URL_FORMS}`);
    return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: match[2] ? Number(match[2]) : defaultPort };
  });
  if (nodes.length === 0) throw new Error(`REDIS_URL ${redactRedisUrl(url)} names no node; expected ${URL_FORMS}`);
  return nodes;
}

/**
 * Options of a Cluster seed node (the first node; `cluster` then lists every seed in
 * `clusterNodes`) or of a Sentinel-managed primary (`sentinels`, `name`: ioredis asks the
 * sentinels for the current primary on every (re)connect, so a failover is followed by itself).
 * `REDIS_SENTINEL_PASSWORD` is the sentinels' own password when they have one.
 */
function multiNodeOptions(url: string, parts: UrlParts, topology: 'cluster' | 'sentinel', secure: boolean, tls: RedisTlsFiles): RedisOptions & { clusterNodes?: ClusterNode[] } {
  const [list = '', ...path] = parts.rest.split('/');
  const nodes = nodesOf(url, list, topology === 'sentinel' ? 26379 : 6379);
  const base: RedisOptions = {
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5000),
    ...redisTimeoutOptions('command'),
    ...(parts.user ? { username: parts.user } : {}),
    ...(parts.password ? { password: parts.password } : {}),
  };
  if (topology === 'cluster') {
    if (path.some((segment) => segment !== '')) throw new Error(`REDIS_URL ${redactRedisUrl(url)}: Redis Cluster has only database 0; drop the /path`);
    const seed = nodes[0] as ClusterNode & { host: string; port: number };
    return { ...base, host: seed.host, port: seed.port, ...(secure ? { tls: tlsOptions(seed.host, tls) } : {}), clusterNodes: nodes };
  }
  const [name = '', dbText = '0'] = path;
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`REDIS_URL ${redactRedisUrl(url)}: name the Sentinel primary after the nodes, e.g. redis+sentinel://host:26379/mymaster`);
  if (!/^\d{1,5}$/.test(dbText)) throw new Error(`REDIS_URL ${redactRedisUrl(url)}: database "${dbText}" is not a number; use redis+sentinel://host:26379/mymaster/0`);
  const sentinelPassword = process.env.REDIS_SENTINEL_PASSWORD;
  return {
    ...base,
    sentinels: nodes.map((node) => ({ host: (node as { host: string }).host, port: (node as { port: number }).port })),
    name,
    db: Number(dbText),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    // Reconnect to the new primary when a command meets a read-only replica (the old primary
    // demoted, or a stale address): ioredis then asks the sentinels again.
    reconnectOnError: (err) => /READONLY/.test(err.message),
    ...(secure ? { tls: tlsOptions((nodes[0] as { host: string }).host, tls), enableTLSForSentinelMode: true } : {}),
  };
}

/** TLS options from the given files, else `REDIS_TLS_CA`, `REDIS_TLS_CERT`, `REDIS_TLS_KEY`. */
function tlsOptions(servername: string, tls: RedisTlsFiles): NonNullable<RedisOptions['tls']> {
  {
    const caFile = tls.caFile ?? process.env.REDIS_TLS_CA;
    const certFile = tls.certFile ?? process.env.REDIS_TLS_CERT;
    const keyFile = tls.keyFile ?? process.env.REDIS_TLS_KEY;
    return {
      // An IP address is no server name (RFC 6066 3): Node warns (DEP0123) and checks the
      // certificate against the host itself without it.
      ...(isIP(servername) === 0 ? { servername } : {}),
      ...(caFile ? { ca: readFileSync(caFile) } : {}),
      ...(certFile ? { cert: readFileSync(certFile) } : {}),
      ...(keyFile ? { key: readFileSync(keyFile) } : {}),
    };
  }
}

/**
 * A command client for REDIS_URL: an ioredis `Redis` for `redis://`, `rediss://` and
 * `redis+sentinel://`, an ioredis `Cluster` for `redis+cluster://` (typed as `Redis`: the
 * commands rollout-queue sends are the same on both, and BullMQ takes either). `extra` is
 * merged into the per-node options (e.g. `connectionName`, `lazyConnect`).
 * In Cluster mode every key of one queue must hash to one slot: use a hash-tagged prefix such
 * as `{rq}` (see `lease/cluster-slot.ts`).
 */
export function createRedisClient(url: string, extra: RedisOptions = {}): Redis {
  const { clusterNodes, ...options } = redisOptionsFromUrl(url) as RedisOptions & { clusterNodes?: ClusterNode[] };
  if (!clusterNodes) return new Redis({ ...options, ...extra });
  const { host: _host, port: _port, lazyConnect, enableOfflineQueue, ...nodeOptions } = { ...options, ...extra };
  const cluster = new Cluster(clusterNodes, {
    redisOptions: nodeOptions,
    clusterRetryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5000),
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    // TLS clusters announce node IPs the certificate does not name; keep the seed's servername.
    ...(nodeOptions.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
  });
  return cluster as unknown as Redis;
}

/**
 * `options` for a client BullMQ builds (a `Worker`'s, whose blocking connection copies them) or
 * duplicates (`QueueEvents`): the command timeout grows by BullMQ's own bound on a blocking read
 * (`BULLMQ_BLOCK_BOUND_MS`), which a shorter one would cut short.
 */
export function forBullMQ<T extends RedisOptions>(options: T): T {
  return { ...options, ...redisTimeoutOptions('bullmq') };
}

/**
 * A client like `client` (same address and options) with BullMQ's command timeout
 * ({@link forBullMQ}), for a BullMQ class that duplicates what it is given (`QueueEvents`, a
 * `Worker` in Cluster mode). It connects lazily, so unless something sends a command on it, it
 * never opens a socket; disconnect it with the BullMQ object all the same.
 */
export function duplicateForBullMQ(client: Redis): Redis {
  const timeouts = redisTimeoutOptions('bullmq');
  if (client instanceof Cluster) {
    const cluster = client as Cluster;
    return cluster.duplicate(undefined, { ...cluster.options, lazyConnect: true, redisOptions: { ...cluster.options.redisOptions, ...timeouts } }) as unknown as Redis;
  }
  return client.duplicate({ ...timeouts, lazyConnect: true });
}

/** The database number a client works in (its URL's `/db`; 0 for a Cluster, which has only that one). */
export function redisDb(client: Redis): number {
  return (client.options as { db?: number } | undefined)?.db ?? 0;
}

/**
 * Whether the database a connection's URL names (`/db`) exists. ioredis SELECTs it on connect
 * and, when Redis refuses it (`ERR DB index is out of range`: past the server's `databases`
 * setting, 16 by default), only emits an error event and goes on in database 0, where every
 * command then works on another database's queues (fresh-user report: `REDIS_URL=…/99` ran in
 * database 0). Asked again here, the refusal is an answer.
 * @param address the redacted address (`redactRedisUrl`) for the message.
 * @returns undefined when the database exists (or is 0), else a one-line message naming it,
 *   the range the server has (when CONFIG answers) and the fix.
 */
export async function missingDatabase(client: Redis, address: string): Promise<string | undefined> {
  const db = redisDb(client);
  if (!db) return undefined;
  try {
    await client.select(db);
    return undefined;
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    if (!/DB index|invalid DB/i.test(text)) throw err;
    const count = await client.config('GET', 'databases').then((reply) => Number((reply as string[])[1]), () => Number.NaN);
    const range = Number.isInteger(count) ? ` (it has ${count}: 0 to ${count - 1}, its \`databases\` setting)` : ' (past its `databases` setting, 16 by default)';
    return `Redis at ${address} has no database ${db}${range}; use a database number it has at the end of REDIS_URL (redis://host:port/0), or raise \`databases\` in redis.conf`;
  }
}
