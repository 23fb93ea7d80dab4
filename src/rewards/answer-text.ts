/**
 * The text a reward reads from a run's output:
 * - a string output is used as is;
 * - an object with a string `stdout` field (what `codeRunner` returns) gives that field;
 * - anything else is `JSON.stringify(output)` (`""` for `undefined`).
 */
export function answerText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (output !== null && typeof output === 'object' && !Array.isArray(output)) {
    const stdout = (output as { stdout?: unknown }).stdout;
    if (typeof stdout === 'string') return stdout;
  }
  try {
    return JSON.stringify(output) ?? '';
  } catch {
    return String(output); // not JSON data (a cycle, a bigint): still give the reward something to read
  }
}
