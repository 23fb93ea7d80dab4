import { describe, expect, it } from 'vitest';
import { OutputCapture, SECRET_MARGIN_BYTES } from '../../../src/runners/output-capture.js';
import { textAfterTruncation, truncationMarker } from '../../../src/spec/index.js';

const feed = (capture: OutputCapture, text: string, chunkBytes: number): void => {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += chunkBytes) capture.push(bytes.subarray(at, at + chunkBytes));
};

describe('OutputCapture', () => {
  it('keeps a stream that fits whole, however it was chunked', () => {
    for (const chunk of [1, 7, 4096, 1 << 20]) {
      const capture = new OutputCapture(20_000, 0);
      const text = 'x'.repeat(10_000) + 'y'.repeat(9_000);
      feed(capture, text, chunk);
      expect(capture.keptText()).toEqual({ text, truncated: false, droppedBytes: 0 });
    }
  });

  it('keeps head and tail of a longer stream and counts the dropped middle', () => {
    const capture = new OutputCapture(100, 0);
    const text = `${'a'.repeat(50)}${'m'.repeat(10_000)}${'z'.repeat(50)}`;
    feed(capture, text, 333);
    const kept = capture.keptText();
    expect(kept).toEqual({ text: `${'a'.repeat(50)}${truncationMarker(10_000)}${'z'.repeat(50)}`, truncated: true, droppedBytes: 10_000 });
    expect(textAfterTruncation(kept.text, kept.droppedBytes)).toBe('z'.repeat(50));
    expect(capture.totalBytes).toBe(10_100);
  });

  it('redacts a secret split over many chunks, and one that straddles the cuts is dropped whole', () => {
    const secret = 'SECRET-VALUE-0123456789';
    const whole = new OutputCapture(1000, 0);
    feed(whole, `before ${secret} after`, 3);
    expect(whole.keptText({ K: secret }).text).toBe('before [secret K] after');
    const cut = new OutputCapture(100, 0);
    feed(cut, `${'a'.repeat(40)}${secret}${'m'.repeat(500)}${secret}${'z'.repeat(40)}`, 5);
    const kept = cut.keptText({ K: secret });
    expect(kept.text).toBe(`${'a'.repeat(40)}${truncationMarker(500 + 2 * secret.length)}${'z'.repeat(40)}`);
  });

  it('keeps the raw error tail independently of the output budget', () => {
    const capture = new OutputCapture(10, SECRET_MARGIN_BYTES * 2);
    feed(capture, 'e'.repeat(100_000) + 'LAST', 1000);
    expect(capture.tailText().length).toBe(SECRET_MARGIN_BYTES * 2);
    expect(capture.tailText().endsWith('eLAST')).toBe(true);
  });
});
