import { writeSync } from 'node:fs';
import { isatty } from 'node:tty';
import { pino, type DestinationStream } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';

/** pino's numeric levels (pino `levels.values`), by name as the text line shows them. */
const LEVEL_NAMES: Readonly<Record<number, string>> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Fields every line carries (or pino adds) that a person reading a command's stderr does not need. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'component']);

/**
 * One pino JSON line (already redacted by the logger) as one line of text:
 * `warn: <msg> (key=value, …)`, objects as JSON, an `err` as its message. A line that is not
 * JSON passes as it is.
 */
export function formatLogLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const level = LEVEL_NAMES[Number(record.level)] ?? String(record.level);
  const fields = Object.entries(record)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${fieldText(key, value)}`);
  return `${level}: ${String(record.msg ?? '')}${fields.length > 0 ? ` (${fields.join(', ')})` : ''}\n`;
}

function fieldText(key: string, value: unknown): string {
  if (key === 'err' && value !== null && typeof value === 'object' && 'message' in value) return String((value as { message: unknown }).message);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A pino destination writing {@link formatLogLine}'s text to `fd`, synchronously (a command
 * exits right after its last line, and its summary on stdout must not overtake it): what
 * the CLI's commands log among their own plain-text lines on stderr (fresh-user report: a
 * second `run` printed `{"level":40,…,"msg":"another coordinator holds this run…"}`).
 */
export function textLogDestination(fd = 2): { write(line: string): void } {
  return { write: (line: string) => void writeSync(fd, formatLogLine(line)) };
}

/** How the CLI writes log lines (`LOG_FORMAT`): see {@link cliLogDestination}. */
export const LOG_FORMATS = ['pretty', 'json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * The log format of a command: `LOG_FORMAT` when set; else `pretty` when `fd` is a terminal;
 * else `json` for a service (`worker`, `gateway`: their logs go to a collector) and `text` for
 * a command whose stderr a person reads among its own lines (`run`, `resume`, `status`…).
 * @throws UsageError naming LOG_FORMAT and its values when it holds anything else.
 */
export function logFormatOf(role: 'service' | 'command', env: NodeJS.ProcessEnv = process.env, fd = 2): LogFormat {
  const given = env.LOG_FORMAT?.trim();
  if (given) {
    if ((LOG_FORMATS as readonly string[]).includes(given)) return given as LogFormat;
    throw new UsageError(MSG.badLogFormat(given, LOG_FORMATS));
  }
  if (isatty(fd)) return 'pretty';
  return role === 'service' ? 'json' : 'text';
}

/**
 * Where a CLI command's pino logger writes, by {@link logFormatOf}: pino-pretty's stream
 * (colours, local time, no pid/hostname) on a terminal; pino's own JSON; or
 * {@link textLogDestination}. All three synchronous: `main.ts` calls `process.exit` right after
 * a command's last line, which an asynchronous transport thread (`pino.transport`) could lose.
 * Redaction happens in the logger before any of them (`createLogger`).
 */
export function cliLogDestination(role: 'service' | 'command', env: NodeJS.ProcessEnv = process.env, fd = 2): DestinationStream {
  const format = logFormatOf(role, env, fd);
  if (format === 'pretty') return PinoPretty({ destination: fd, sync: true, colorize: isatty(fd), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  if (format === 'json') return pino.destination({ fd, sync: true });
  return textLogDestination(fd);
}
