import { cliCommand } from '../cli-command.js';

/** Texts about the Redis connection; addresses come in already redacted. */
export const REDIS_MSG = {
  redisUnreachable: (address: string, why: string) =>
    `could not connect to Redis at ${address} (${why}). Start Redis (redis-server, or docker compose up redis) or point REDIS_URL at one.`,
  redisTlsFailed: (address: string, why: string) =>
    `could not open a TLS connection to Redis at ${address} (${why}): rediss:// needs a Redis with TLS on (its tls-port); for a plain Redis use redis://.`,
  redisHostUnknown: (address: string, host: string, code: string) =>
    `could not connect to Redis at ${address}: the host name "${host}" does not resolve (${code}). Check the host in REDIS_URL (redis://host:port), e.g. redis://127.0.0.1:6379.`,
  /** `placeholder`: the password given is `***`, as the CLI prints a password (a hint pasted as printed). */
  redisAuthFailed: (address: string, placeholder = false) =>
    `Redis at ${address} refused the credentials (WRONGPASS). ${placeholder
      ? 'The password in REDIS_URL is ***, which this CLI prints in place of a password: put the real one there (redis://user:password@host:port).'
      : 'Check the user and password in REDIS_URL (redis://user:password@host:port).'}`,
  redisNeedsAuth: (address: string) =>
    `Redis at ${address} requires a password (NOAUTH). Put it in REDIS_URL: redis://[user]:password@host:port.`,
  redisNoPasswordSet: (address: string) =>
    `Redis at ${address} has no password set, but REDIS_URL gives one. Remove it from REDIS_URL or set requirepass on the server.`,
  redisUrlBlank: (fallback: string) => `warning: REDIS_URL is set but empty: using ${fallback}; unset it to mean that, or set the address you meant`,
  redisOther: (address: string, why: string) => `Redis at ${address} answered with an error: ${why}`,
  redisRefusesWrites: (address: string, code: string, why: string) =>
    `Redis at ${address} refuses writes (${code}): ${why}. ${code === 'OOM' || code === 'EXECABORT' ? `It is at maxmemory: free memory (\`${cliCommand()} purge --older-than 1d\` removes the runs that ended a day ago or earlier, \`purge RUN_ID\` one finished run) or raise maxmemory (CONFIG SET maxmemory …).` : 'Point REDIS_URL at a writable primary.'}`,
  redisRetrying: (problem: string, retryMs: number) => `${problem} Retrying in ${Math.round(retryMs / 1000)} s.`,
} as const;
