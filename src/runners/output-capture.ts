import { redactSecrets, type SecretValues } from '../spec/redact-secrets.js';
import { truncationMarker } from '../spec/truncation-marker.js';

/**
 * Bytes kept past each cut so a secret value that straddles the cut is seen whole and
 * redacted (or dropped) whole: a secret up to this long never leaks a piece at a cut.
 */
export const SECRET_MARGIN_BYTES = 4096;

/** What {@link OutputCapture.keptText} returns. */
export interface KeptText {
  /**
   * The whole stream when it fit, else its head, a {@link truncationMarker} line and its
   * tail. Secret values are replaced by `[secret NAME]` unless `redact: false` was asked.
   */
  readonly text: string;
  /** True when bytes between the head and the tail were dropped. */
  readonly truncated: boolean;
  /** Bytes dropped between the head and the tail (0 when nothing was). */
  readonly droppedBytes: number;
}

/**
 * Collects one output stream of a child process within a byte budget: the first half of
 * `maxBytes` (the head) and the last half (the tail; the answer is usually at the end), each
 * with {@link SECRET_MARGIN_BYTES} to spare for redaction. Bytes in between are counted and
 * dropped, so a flood costs no memory. Independently the last `tailBytes` bytes are kept for
 * error messages ({@link tailText}).
 */
export class OutputCapture {
  private readonly headChunks: Buffer[] = [];
  private headLength = 0;
  /** Recent chunks, oldest first; their total length stays just above `tailCapacity`. */
  private readonly tailChunks: Buffer[] = [];
  private tailLength = 0;
  private readonly headKeepBytes: number;
  private readonly tailKeepBytes: number;
  private readonly headCapacity: number;
  private readonly tailCapacity: number;
  /** Bytes the stream produced in total, kept or not. */
  totalBytes = 0;

  /**
   * @param maxBytes Bytes kept of the stream in all (head + tail), > 0.
   * @param tailBytes Bytes of the raw tail kept for error messages, >= 0.
   */
  constructor(
    private readonly maxBytes: number,
    private readonly tailBytes: number,
  ) {
    this.tailKeepBytes = Math.floor(maxBytes / 2);
    this.headKeepBytes = maxBytes - this.tailKeepBytes;
    this.headCapacity = this.headKeepBytes + SECRET_MARGIN_BYTES;
    this.tailCapacity = Math.max(this.tailKeepBytes + SECRET_MARGIN_BYTES, tailBytes);
  }

  /** Adds a chunk read from the stream. */
  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    if (this.headLength < this.headCapacity) {
      const kept = chunk.subarray(0, this.headCapacity - this.headLength);
      this.headChunks.push(kept);
      this.headLength += kept.length;
    }
    this.tailChunks.push(chunk);
    this.tailLength += chunk.length;
    // Drop whole old chunks while the rest still covers the capacity (O(1) per chunk, no copies).
    while (this.tailChunks.length > 1 && this.tailLength - (this.tailChunks[0]?.length ?? 0) >= this.tailCapacity) {
      this.tailLength -= this.tailChunks.shift()?.length ?? 0;
    }
  }

  /** True when the stream went past `maxBytes` and bytes between head and tail were dropped. */
  get truncated(): boolean {
    return this.totalBytes > this.maxBytes;
  }

  /**
   * The kept text, redacted: the whole stream, or head + marker + tail. A secret split across
   * two chunks is joined before redaction; one straddling a cut is dropped whole, never cut.
   * @param secrets values to replace by `[secret NAME]`, and to keep whole at a cut.
   * @param options.redact false: cut as above but leave the values in, for a consumer that
   *   redacts later itself (codeRunner: the reward scores the raw output, the worker redacts what
   *   it stores). The cuts still never split a value, so that later redaction replaces it whole.
   */
  keptText(secrets: SecretValues = {}, options: { readonly redact?: boolean } = {}): KeptText {
    const redact = options.redact === false ? (text: string) => text : (text: string) => redactSecrets(text, secrets);
    if (!this.truncated) {
      const whole = this.totalBytes <= this.headLength ? Buffer.concat(this.headChunks) : this.wholeFromHeadAndTail();
      return { text: redact(whole.toString('utf8')), truncated: false, droppedBytes: 0 };
    }
    const needles = secretBytes(secrets);
    const headWindow = Buffer.concat(this.headChunks);
    const headCut = completeUtf8End(headWindow.subarray(0, moveCutOutOfSecrets(headWindow, this.headKeepBytes, needles, 'before')));
    const tailWindow = this.tailWindow(this.tailKeepBytes + SECRET_MARGIN_BYTES);
    let tailCut = moveCutOutOfSecrets(tailWindow, tailWindow.length - this.tailKeepBytes, needles, 'after');
    tailCut = skipContinuationBytes(tailWindow, tailCut);
    const droppedBytes = this.totalBytes - headCut - (tailWindow.length - tailCut);
    const head = redact(headWindow.subarray(0, headCut).toString('utf8'));
    const tail = redact(tailWindow.subarray(tailCut).toString('utf8'));
    return { text: `${head}${truncationMarker(droppedBytes)}${tail}`, truncated: true, droppedBytes };
  }

  /** The last `tailBytes` bytes as UTF-8 text, starting at a character boundary (raw: redact before quoting). */
  tailText(): string {
    const window = this.tailWindow(this.tailBytes);
    return window.subarray(this.totalBytes > window.length ? skipContinuationBytes(window, 0) : 0).toString('utf8');
  }

  /** The last `bytes` bytes of the stream (fewer when it is shorter). */
  private tailWindow(bytes: number): Buffer {
    const joined = Buffer.concat(this.tailChunks);
    return joined.length > bytes ? joined.subarray(joined.length - bytes) : joined;
  }

  /** The whole stream when it fits in head + tail capacity (head, then the tail's part past it). */
  private wholeFromHeadAndTail(): Buffer {
    const head = Buffer.concat(this.headChunks);
    const rest = this.totalBytes - head.length;
    return Buffer.concat([head, this.tailWindow(rest)]);
  }
}

function secretBytes(secrets: SecretValues): Buffer[] {
  return Object.values(secrets)
    .filter((value) => value.length > 0)
    .map((value) => Buffer.from(value, 'utf8'));
}

/**
 * Moves a cut at byte `cut` of `window` off any secret value it falls inside: to the
 * secret's start (`before`: the secret goes with the dropped bytes after the cut) or its end
 * (`after`: it goes with the dropped bytes before the cut).
 */
function moveCutOutOfSecrets(window: Buffer, cut: number, needles: readonly Buffer[], side: 'before' | 'after'): number {
  let at = Math.max(0, Math.min(cut, window.length));
  // Each move leaves one occurrence; overlapping secrets may need a few rounds.
  for (let round = 0; round <= needles.length; round++) {
    let moved = false;
    for (const needle of needles) {
      let from = Math.max(0, at - needle.length + 1);
      for (let hit = window.indexOf(needle, from); hit >= 0 && hit < at; hit = window.indexOf(needle, from)) {
        if (hit + needle.length > at) {
          at = side === 'before' ? hit : hit + needle.length;
          moved = true;
          break;
        }
        from = hit + 1;
      }
    }
    if (!moved) break;
  }
  return at;
}

/** First index at or after `start` that is not a UTF-8 continuation byte (10xxxxxx), at most 3 on. */
function skipContinuationBytes(buf: Buffer, start: number): number {
  let at = start;
  while (at < buf.length && at < start + 3 && ((buf[at] ?? 0) & 0xc0) === 0x80) at++;
  return at;
}

/** Length of the longest prefix of `buf` that does not end inside a UTF-8 character. */
export function completeUtf8End(buf: Buffer): number {
  // Look back at most 3 bytes for the lead byte of the last character.
  for (let back = 1; back <= Math.min(4, buf.length); back++) {
    const byte = buf[buf.length - back] ?? 0;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? buf.length - back : buf.length;
  }
  return buf.length;
}
