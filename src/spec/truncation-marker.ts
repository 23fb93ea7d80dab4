/**
 * The line a runner puts between the kept head and the kept tail of an output stream that
 * went past its cap, e.g. `\n[... 1048576 bytes dropped (maxOutputBytes) ...]\n`. Built-in
 * rewards find it to read the tail (the answer is usually at the end of the output); an
 * output that was not cut has no marker.
 * @param droppedBytes bytes of the stream between the kept head and tail, >= 1.
 */
export function truncationMarker(droppedBytes: number): string {
  return `\n[... ${droppedBytes} bytes dropped (maxOutputBytes) ...]\n`;
}

/**
 * The kept tail of a stream cut with {@link truncationMarker}: the text after the last
 * marker for `droppedBytes`, or undefined when `text` holds no such marker.
 */
export function textAfterTruncation(text: string, droppedBytes: number): string | undefined {
  const marker = truncationMarker(droppedBytes);
  const at = text.lastIndexOf(marker);
  return at < 0 ? undefined : text.slice(at + marker.length);
}
