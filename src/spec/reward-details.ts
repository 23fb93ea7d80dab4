import { findJsonDataIssue, isPlainObject, type JsonDataIssue } from './json-data.js';

/**
 * Details a reward may keep with its score (a judge's "got 5, want 5", the failing test's name):
 * returned as `{ reward, details }` instead of a bare number, stored on the Result as
 * `rewardDetails`. Loads no package: the rollout child reads it (never zod there).
 */

/**
 * Largest `rewardDetails`: 8192 bytes of its JSON text (UTF-8). Details travel in every Result
 * (Redis, the coordinator, results files), so they are a summary; a long log belongs in the
 * run's output or elsewhere, keyed by the lease.
 */
export const MAX_REWARD_DETAILS_BYTES = 8192;

/** Deepest nesting accepted in `rewardDetails` (objects and arrays). */
export const MAX_REWARD_DETAILS_DEPTH = 8;

/**
 * What a reward function may return besides a bare number: the score and details to keep with
 * it. `details` must be plain JSON data within {@link MAX_REWARD_DETAILS_BYTES} bytes and
 * {@link MAX_REWARD_DETAILS_DEPTH} levels; `undefined` keeps none.
 */
export interface RewardWithDetails {
  /** The score: a finite number inside the spec's `rewardRange`, as a bare return would be. */
  readonly reward: number;
  /** Kept on the Result as `rewardDetails`. */
  readonly details?: unknown;
}

/**
 * Splits what a reward function returned into its score and details: a number is the score
 * with no details; a plain object with a `reward` key (and at most a `details` key besides) is
 * {@link RewardWithDetails}; anything else is returned as the score, for the caller's range check
 * to refuse by its type.
 */
export function rewardParts(value: unknown): { readonly reward: unknown; readonly details?: unknown } {
  if (!isPlainObject(value) || !('reward' in value)) return { reward: value };
  if (Object.keys(value).some((key) => key !== 'reward' && key !== 'details')) return { reward: value };
  return value.details === undefined ? { reward: value.reward } : { reward: value.reward, details: value.details };
}

/**
 * The first problem that keeps `value` from being a Result's `rewardDetails`, or undefined: plain
 * JSON data, at most {@link MAX_REWARD_DETAILS_DEPTH} levels deep and
 * {@link MAX_REWARD_DETAILS_BYTES} bytes as JSON. The message names the path and the fix, never
 * the value (it may hold the gold).
 */
export function findRewardDetailsIssue(value: unknown): JsonDataIssue | undefined {
  const issue = findJsonDataIssue(value, 'details', { scalarArraysOnly: false, maxDepth: MAX_REWARD_DETAILS_DEPTH });
  if (issue) return issue;
  const json = JSON.stringify(value);
  const bytes = json.length * 3 <= MAX_REWARD_DETAILS_BYTES ? json.length : new TextEncoder().encode(json).length;
  if (bytes > MAX_REWARD_DETAILS_BYTES) {
    return { path: 'details', message: `details are ${bytes} bytes as JSON, over the ${MAX_REWARD_DETAILS_BYTES}-byte limit; keep a summary (the verdict, the first failing case) and leave long logs out` };
  }
  return undefined;
}
