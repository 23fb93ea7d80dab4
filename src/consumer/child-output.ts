import { findJsonDataIssue, type JsonDataIssue } from '../spec/json-data.js';

/**
 * What a rollout child makes of a run's output before it is scored and reported: the stored form
 * (plain JSON data, or an issue naming the path JSON would lose), its size against the worker's
 * `maxOutputBytes`, and the JSON form of a log object.
 */

/** Deepest nesting of a run's output (deeper than a config or task may be: a parse tree, say). */
const MAX_OUTPUT_DEPTH = 512;

/**
 * A run's output as it is stored (in Redis, the results file) and scored: plain JSON data as it
 * is (the IPC channel serializes it once anyway, and a copy made here held a codeRunner's kept
 * stdout and stderr twice more on the child's heap, which `sandbox.memoryMb` bounds); `undefined`
 * as null; a value whose JSON form `JSON.stringify` writes faithfully (a Date, an `undefined`
 * field) as that form. Anything JSON would lose or refuse (a BigInt, a cycle, a function, NaN, a
 * Map or another class instance) is an issue naming its path.
 */
export function storedOutput(output: unknown): { readonly value: unknown } | { readonly issue: JsonDataIssue } {
  if (output === undefined) return { value: null };
  // One walk for plain data (nearly every output); a second only for the rest.
  if (findJsonDataIssue(output, 'output', { scalarArraysOnly: false, jsonForm: false, maxDepth: MAX_OUTPUT_DEPTH }) === undefined) return { value: output };
  const issue = findJsonDataIssue(output, 'output', { scalarArraysOnly: false, jsonForm: true, maxDepth: MAX_OUTPUT_DEPTH });
  let text: string;
  try {
    text = JSON.stringify(output);
  } catch (error) {
    // A cycle runs the walk to its depth limit, a path 512 steps long: V8's message names where
    // it closes instead ("property 'self' closes the circle").
    if (issue && !issue.message.startsWith('nesting deeper')) return { issue };
    const why = error instanceof Error ? error.message.replace(/\s*\n\s*/g, ' ') : String(error);
    return { issue: { path: 'output', message: `JSON cannot write it (${why})` } };
  }
  return issue ? { issue } : { value: JSON.parse(text) as unknown };
}

/**
 * True when the JSON text of `value` (plain JSON data) is longer than `limit`, counted without
 * writing it: string lengths (UTF-16 code units, at most the UTF-8 bytes) plus quotes, keys and
 * separators. Stops as soon as it is over.
 */
export function jsonTextOver(value: unknown, limit: number): boolean {
  if (!Number.isFinite(limit)) return false;
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') total += item.length + 2;
    else if (Array.isArray(item)) {
      total += item.length + 1;
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, field] of Object.entries(item)) {
        total += key.length + 4;
        stack.push(field);
      }
      total += 2;
    } else total += 5;
    if (total > limit) return true;
  }
  return false;
}

/**
 * A log object as JSON data: plain data as it is, anything else (a Date, a class instance, a
 * cycle) as its JSON form, or its string. Logs are best effort, never refused.
 */
export function toJsonData(output: unknown): unknown {
  if (output === undefined) return null;
  if (findJsonDataIssue(output, 'output', { scalarArraysOnly: false }) === undefined) return output;
  try {
    return JSON.parse(JSON.stringify(output)) as unknown;
  } catch {
    return String(output);
  }
}
