/**
 * Collects one output stream of a child process: the first `maxBytes` bytes (the head,
 * returned as output) and, separately, the last `tailBytes` bytes (quoted in error
 * messages). Bytes past the head are counted and dropped, so a flood costs no memory.
 */
export class OutputCapture {
  private readonly headChunks: Buffer[] = [];
  private headLength = 0;
  private tail: Buffer = Buffer.alloc(0);
  /** Bytes the stream produced in total, kept or not. */
  totalBytes = 0;

  /**
   * @param maxBytes Bytes of the head kept, > 0.
   * @param tailBytes Bytes of the tail kept for error messages, >= 0 (0: no tail).
   */
  constructor(
    private readonly maxBytes: number,
    private readonly tailBytes: number,
  ) {}

  /** Adds a chunk read from the stream. */
  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    if (this.headLength < this.maxBytes) {
      const kept = chunk.subarray(0, this.maxBytes - this.headLength);
      this.headChunks.push(kept);
      this.headLength += kept.length;
    }
    if (this.tailBytes > 0) {
      const recent = chunk.length >= this.tailBytes ? chunk.subarray(chunk.length - this.tailBytes) : chunk;
      const joined = Buffer.concat([this.tail, recent]);
      this.tail = joined.length > this.tailBytes ? joined.subarray(joined.length - this.tailBytes) : joined;
    }
  }

  /** True when bytes past the head were dropped. */
  get truncated(): boolean {
    return this.totalBytes > this.headLength;
  }

  /** The head as UTF-8 text; a multi-byte character cut by the cap is left out, not garbled. */
  headText(): string {
    const head = Buffer.concat(this.headChunks);
    return (this.truncated ? head.subarray(0, completeUtf8End(head)) : head).toString('utf8');
  }

  /** The tail as UTF-8 text, starting at a character boundary. */
  tailText(): string {
    let start = 0;
    if (this.totalBytes > this.tail.length) {
      // Skip continuation bytes (10xxxxxx) of a character whose start was dropped.
      while (start < this.tail.length && start < 3 && ((this.tail[start] ?? 0) & 0xc0) === 0x80) start++;
    }
    return this.tail.subarray(start).toString('utf8');
  }
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
