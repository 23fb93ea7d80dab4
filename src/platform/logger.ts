import { pino, type Logger, type DestinationStream } from 'pino';

/**
 * Paths pino censors in every log line: keys that look like secrets, at the top level and
 * one or two levels down (pino's redaction needs explicit paths; see pino docs "Redaction").
 * Values of `sandbox.env` names never reach a log line in the first place; this is the net.
 */
export const REDACTED_PATHS: readonly string[] = (() => {
  const keys = ['password', 'pass', 'secret', 'secrets', 'token', 'apiKey', 'api_key', 'authorization', 'cookie', 'privateKey', 'env'];
  const paths: string[] = [];
  for (const key of keys) paths.push(key, `*.${key}`, `*.*.${key}`);
  return paths;
})();

/**
 * A pino JSON logger with secret redaction. Level from `LOG_LEVEL` (default `info`).
 * @param bindings fields on every line, e.g. `{ component: 'worker' }`.
 * @param destination where lines go (default stderr, so a program's stdout stays its own); tests pass a stream to capture them.
 */
export function createLogger(bindings: Record<string, unknown> = {}, destination?: DestinationStream): Logger {
  const options = {
    level: process.env.LOG_LEVEL ?? 'info',
    base: { pid: process.pid, ...bindings },
    redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
  };
  // stderr by default: a library must not write into its host program's stdout.
  return pino(options, destination ?? pino.destination(2));
}

/**
 * A child of `logger` with `bindings` on every line, leaving out those it binds already to the
 * same value: pino writes a key bound twice twice (`"queue":"a",…,"queue":"a"`), e.g. when the
 * CLI's logger names the queue and the library component names it again.
 */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  const bound = logger.bindings();
  const fresh: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(bindings)) if (bound[key] !== value) fresh[key] = value;
  return logger.child(fresh);
}

export type { Logger };
