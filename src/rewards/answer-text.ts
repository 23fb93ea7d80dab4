import { textAfterTruncation } from '../spec/truncation-marker.js';

/**
 * The text a reward reads from a run's output:
 * - a string output is used as is;
 * - an object with a string `stdout` field (what `codeRunner` returns) gives that field; when
 *   `stdoutTruncated` is true (the stream went past `maxOutputBytes`), only its kept tail,
 *   after the truncation marker: the answer is usually at the end, and a number from the
 *   middle of a log must not pass for it;
 * - anything else is `JSON.stringify(output)` (`""` for `undefined`).
 */
export function answerText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (output !== null && typeof output === 'object' && !Array.isArray(output)) {
    const { stdout, stdoutTruncated, stdoutDroppedBytes } = output as { stdout?: unknown; stdoutTruncated?: unknown; stdoutDroppedBytes?: unknown };
    if (typeof stdout === 'string') {
      if (stdoutTruncated === true && typeof stdoutDroppedBytes === 'number') return textAfterTruncation(stdout, stdoutDroppedBytes) ?? stdout;
      return stdout;
    }
  }
  try {
    return JSON.stringify(output) ?? '';
  } catch {
    return String(output); // not JSON data (a cycle, a bigint): still give the reward something to read
  }
}
