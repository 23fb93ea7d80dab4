/**
 * Which built-in rewards read a gold answer from the task, and from which key, so that a caller
 * holding every task (the CLI's `run`) can check each one before enqueueing instead of the
 * worker ending every lease `caller`. Not exported from `./index.ts` (the public
 * `rollout-queue/rewards` lists factories only).
 */

/** The task key `lastNumber`, `exactMatch` and `contains` read when `config.goldKey` is not set. */
export const DEFAULT_GOLD_KEY = 'answer';

/** Exports of `rollout-queue/rewards` that read `task[goldKey]` (each takes a `goldKey` option). */
const READS_GOLD: ReadonlySet<string> = new Set(['lastNumber', 'exactMatch', 'contains']);

/**
 * The task key built-in reward `exportName` reads its gold answer from under `config`:
 * `config.goldKey` when it is a non-empty string, else {@link DEFAULT_GOLD_KEY}.
 *
 * @param exportName the export of `rollout-queue/rewards`, e.g. `lastNumber`.
 * @param config the Ref's config, already accepted by the factory (its own check names a bad
 *   `goldKey`; this one only reads it).
 * @returns the key, or `undefined` for a reward that reads no gold answer (`regex`) or a name
 *   that is not a built-in reward.
 */
export function goldKeyOf(exportName: string, config: Readonly<Record<string, unknown>>): string | undefined {
  if (!READS_GOLD.has(exportName)) return undefined;
  const { goldKey } = config;
  return typeof goldKey === 'string' && goldKey.length > 0 ? goldKey : DEFAULT_GOLD_KEY;
}
