/**
 * "Did you mean" for a misspelt key. It lives in `spec` because both the built-in rewards (which
 * may import only `spec`, docs/design.md "Layout") and the CLI suggest keys. Deliberately not
 * exported from `spec/index.ts`: it is not part of the wire contract. Imports nothing, so a
 * rollout child that loads a built-in reward does not load zod through it.
 */

/** Largest edit distance still suggested; shorter keys allow less (see {@link closestKey}). */
const MAX_DISTANCE = 2;

/**
 * The key of `keys` the user most likely meant by `wanted`, or `undefined` when none is close.
 *
 * A key equal to `wanted` but for letter case wins; else the key at the smallest Levenshtein
 * distance, at most 2 and at most half of `wanted`'s length (so `"id"` is not offered for `"x"`);
 * ties go to the earlier key. `wanted` itself is never returned.
 *
 * @param wanted the key that was looked up and not found, e.g. `"answr"`.
 * @param keys the keys that exist, in their own order, e.g. a task's `Object.keys`.
 * @returns e.g. `"answer"` for `closestKey("answr", ["id", "question", "answer"])`.
 */
export function closestKey(wanted: string, keys: readonly string[]): string | undefined {
  const lower = wanted.toLowerCase();
  const caseOnly = keys.find((key) => key !== wanted && key.toLowerCase() === lower);
  if (caseOnly !== undefined) return caseOnly;
  const limit = Math.min(MAX_DISTANCE, Math.floor(wanted.length / 2));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const key of keys) {
    if (key === wanted || Math.abs(key.length - wanted.length) > limit) continue;
    const distance = levenshtein(lower, key.toLowerCase());
    if (distance < bestDistance) {
      best = key;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Keys an options object does not take, in words: each as `unknown option "concurency" (did you
 * mean "concurrency"?)`, then every key it does take, so the fix is on the line (fresh-user report:
 * `RolloutWorker.create({ concurency: 2 })` said only `Unrecognized key: "concurency"`).
 * @param keys the keys given that are not options.
 * @param known the options, in their documented order.
 */
export function unknownOptionsText(keys: readonly string[], known: readonly string[]): string {
  const each = keys.map((key) => {
    const near = closestKey(key, known);
    return `unknown option "${key}"${near ? ` (did you mean "${near}"?)` : ''}`;
  });
  return `${each.join(', ')}; its options are ${known.join(', ')}`;
}

/** Edits (insert, delete, substitute one UTF-16 unit) that turn `a` into `b`. */
export function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitute = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitute));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
