/**
 * Text a dashboard may show of an error: its first line, with absolute file paths cut to their
 * last two parts, Redis URLs and `host:port` addresses replaced, and a length cap. Error messages
 * and BullMQ's `failedReason` can carry a stack trace with install paths (`/srv/app/node_modules/…`)
 * or the Redis address (`connect ECONNREFUSED 10.0.0.5:6379`), which tell an attacker what runs where.
 */

/** Longest text shown, in characters. */
const MAX_CHARS = 300;

const URL_WITH_SCHEME = /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi;
const HOST_PORT = /\b(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]+\]|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{2,5}\b/gi;
// A path of two or more parts, absolute (`/a/b`, `C:\a\b`) or `file://`: keep the last two parts.
const ABSOLUTE_PATH = /(?:[A-Za-z]:\\|\/)(?:[^\s/\\:'"()]+[/\\])+[^\s/\\:'"()]+/g;

/** `text` made safe to show: see the module comment. Non-strings become `''`. */
export function publicText(text: unknown): string {
  if (typeof text !== 'string') return '';
  const firstLine = text.split('\n').find((line) => line.trim() !== '' && !/^\s+at\s/.test(line)) ?? '';
  const cleaned = firstLine
    .replace(URL_WITH_SCHEME, '[address]')
    .replace(HOST_PORT, '[address]')
    .replace(ABSOLUTE_PATH, (path) => `…/${path.split(/[/\\]/).slice(-2).join('/')}`)
    .trim();
  return cleaned.length > MAX_CHARS ? `${cleaned.slice(0, MAX_CHARS)}…` : cleaned;
}
