import { writeSync } from 'node:fs';
import { jsonTextOver } from '../consumer/child-output.js';

/** A JSON line shorter than this (UTF-16 code units of its strings, roughly its bytes) is written in one piece. */
const WHOLE_LINE_MAX = 1024 * 1024;
/** Characters of a long string serialised and written per piece. */
const PIECE_CHARS = 256 * 1024;

/** Text written so far, in bytes, and the file it goes to. */
interface Sink {
  readonly fd: number;
  bytes: number;
  /** Text waiting to be written (small pieces are gathered into one write). */
  pending: string;
}

/** Writes what is pending when it grew past a piece, or always with `force`. */
function flush(sink: Sink, force = false): void {
  if (sink.pending.length === 0 || (!force && sink.pending.length < PIECE_CHARS)) return;
  const text = sink.pending;
  sink.pending = '';
  const expected = Buffer.byteLength(text);
  const written = writeSync(sink.fd, text);
  if (written < expected) throw Object.assign(new Error('short write'), { code: 'short write: disk full or file size limit' });
  sink.bytes += written;
}

function put(sink: Sink, text: string): void {
  sink.pending += text;
  flush(sink);
}

/** A long string as JSON, piece by piece; a piece never ends between the two halves of a surrogate pair. */
function putString(sink: Sink, value: string): void {
  if (value.length <= PIECE_CHARS) return put(sink, JSON.stringify(value));
  put(sink, '"');
  for (let start = 0; start < value.length;) {
    let end = Math.min(value.length, start + PIECE_CHARS);
    const last = value.charCodeAt(end - 1);
    if (end < value.length && last >= 0xd800 && last <= 0xdbff) end--;
    put(sink, JSON.stringify(value.slice(start, end)).slice(1, -1));
    start = end;
  }
  put(sink, '"');
}

function putValue(sink: Sink, value: unknown): void {
  if (typeof value === 'string') return putString(sink, value);
  if (Array.isArray(value)) {
    put(sink, '[');
    value.forEach((item, i) => {
      if (i > 0) put(sink, ',');
      // As JSON.stringify: an element that has no JSON form is null.
      putValue(sink, item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : item);
    });
    return put(sink, ']');
  }
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    put(sink, '{');
    let first = true;
    for (const [key, field] of Object.entries(value)) {
      if (field === undefined || typeof field === 'function' || typeof field === 'symbol') continue;
      put(sink, `${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      putValue(sink, field);
    }
    return put(sink, '}');
  }
  // Numbers, booleans, null, and anything with its own toJSON (a Date): JSON.stringify's own form.
  put(sink, JSON.stringify(value) ?? 'null');
}

/**
 * Appends `value` as one JSON line (`JSON.stringify(value)` and a newline) to `fd`. A large
 * line (long strings: a run's 60 MiB output) is serialised and written in pieces of about
 * 256 KiB, so the whole line is never in memory twice more (its JSON text and that text's UTF-8
 * bytes: issue 33, a coordinator at 470–530 MiB RSS for one 60 MiB Result). The pieces are
 * separate writes: a process killed midway leaves a torn last line, which the results file drops
 * when it is opened again (the lease is delivered again).
 * @returns the bytes written.
 * @throws the write's error; an Error with `code` 'short write: …' when the disk took less.
 */
export function writeJsonLine(fd: number, value: unknown): number {
  const sink: Sink = { fd, bytes: 0, pending: '' };
  if (!jsonTextOver(value, WHOLE_LINE_MAX)) {
    sink.pending = `${JSON.stringify(value)}\n`;
  } else {
    putValue(sink, value);
    sink.pending += '\n';
  }
  flush(sink, true);
  return sink.bytes;
}
