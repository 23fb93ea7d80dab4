import { writeSync } from 'node:fs';

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
