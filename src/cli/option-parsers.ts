/**
 * Parsers for option values. Each throws commander's `InvalidArgumentError`, so commander
 * prints `error: option '--x <n>' argument 'v' is invalid. <why>` (naming the option) and
 * `main.ts` exits 2. Values that need more than one option to check (Refs) are checked in
 * `build-drafts.ts` with {@link UsageError}s instead.
 */
import { InvalidArgumentError } from 'commander';
import { EnvNameSchema, MAX_ID_LENGTH, RunIdSchema } from '../spec/index.js';
import { MSG } from './messages.js';
import { MAX_RUN_WEIGHT, MIN_RUN_WEIGHT } from '../producer/index.js';

/** `value` as a whole number (digits only, spaces around allowed), else NaN. */
function wholeNumber(value: string): number {
  const trimmed = value.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
}

/** A whole number >= `min` (default 1), as commander's argParser. */
export function integerAtLeast(min: number): (value: string) => number {
  return (value) => {
    const parsed = wholeNumber(value);
    if (!Number.isSafeInteger(parsed) || parsed < min) throw new InvalidArgumentError(MSG.notAnInteger(value, min));
    return parsed;
  };
}

/** A whole number from `min` to `max`, as commander's argParser. */
export function integerBetween(min: number, max: number): (value: string) => number {
  return (value) => {
    const parsed = wholeNumber(value);
    if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) throw new InvalidArgumentError(MSG.notAnIntegerIn(value, min, max));
    return parsed;
  };
}

/** A positive whole number (counts, ms, MiB). */
export const positiveInteger = integerAtLeast(1);

/** A port, 0–65535 (0: pick a free one), as the argParser of `flag` (named with an example in errors). */
export function portOf(flag: string, example: number): (value: string) => number {
  return (value) => {
    const parsed = wholeNumber(value);
    if (!Number.isSafeInteger(parsed) || parsed > 65_535) throw new InvalidArgumentError(MSG.notAPort(flag, value, example));
    return parsed;
  };
}

/** A listen address (`127.0.0.1`, `0.0.0.0`, `::`, a host name): non-empty, no spaces or URL parts. */
export function hostOf(flag: string): (value: string) => string {
  return (value) => {
    const trimmed = value.trim();
    if (!/^[A-Za-z0-9.:_%-]+$/.test(trimmed)) throw new InvalidArgumentError(MSG.notAHost(flag, value));
    return trimmed;
  };
}

/** A queue name: the characters BullMQ and our key layout allow. */
export function queueName(value: string): string {
  if (!/^[A-Za-z0-9_{}-]+$/.test(value)) throw new InvalidArgumentError(MSG.notAQueueName(value));
  return value;
}

/** Collects a repeated queue name option into a list. */
export function queueNameList(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), queueName(value)];
}

/** A run id (letters, digits, `_`, `-`) as the argParser of `what` (`--run-id`, or `runId` for an argument). */
export function runIdOf(what: string): (value: string) => string {
  return (value) => {
    if (!RunIdSchema.safeParse(value).success) throw new InvalidArgumentError(MSG.notARunId(what, value, MAX_ID_LENGTH));
    return value;
  };
}

/** A run id given as the `<runId>` argument. */
export const runId = runIdOf('runId');

/** Collects environment variable names (variadic `--env A B` or repeated `--env A --env B`). */
export function envNameList(value: string, previous: string[] | undefined): string[] {
  if (!EnvNameSchema.safeParse(value).success) throw new InvalidArgumentError(MSG.notAnEnvName(value));
  return [...(previous ?? []), value];
}

/** Collects `--gold-key` values: task keys (non-empty, at most 256 characters, the spec's `goldKeys` rule). */
export function goldKeyList(value: string, previous: string[] | undefined): string[] {
  if (value === '' || value.length > 256) throw new InvalidArgumentError(MSG.notAGoldKey(value));
  return [...(previous ?? []), value];
}

/** Collects repeated string values (variadic or repeated option). */
export function stringList(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration like `500ms`, `90s`, `30m`, `12h`, `3d` (or `0`), in ms; a unit is required otherwise. */
export function durationMs(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  const amount = match ? Number(match[1]) : Number.NaN;
  const unit = match?.[2];
  if (!match || (unit === undefined && amount !== 0)) throw new InvalidArgumentError(MSG.notADuration(value));
  const ms = amount * (unit ? (DURATION_UNITS_MS[unit] as number) : 1);
  if (!Number.isSafeInteger(ms)) throw new InvalidArgumentError(MSG.notADuration(value));
  return ms;
}

/** A repeated `KEY=VALUE` label option (`--placement region=eu-west`) collected into an object; the last value of a key wins. */
export function labelPair(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  const at = value.indexOf('=');
  const key = at > 0 ? value.slice(0, at).trim() : '';
  const label = at > 0 ? value.slice(at + 1) : '';
  if (key === '' || key.length > 64 || label.length > 256) throw new InvalidArgumentError(MSG.notALabel(value));
  return { ...(previous ?? {}), [key]: label };
}

/** A number of CPUs, 0.01–1024 (`--cpus 0.5`): `sandbox.cpus`. */
export function cpusOf(value: string): number {
  const parsed = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isFinite(parsed) || parsed < 0.01 || parsed > 1024) throw new InvalidArgumentError(MSG.notCpus(value));
  return parsed;
}

/** A positive amount of US dollars (`--cost-ceiling-usd 2.50`). */
/**
 * `run --weight`: the run's fair share of the queue's workers, a number from MIN_RUN_WEIGHT to
 * MAX_RUN_WEIGHT (`fair-share.ts`).
 * @throws InvalidArgumentError naming the range and an example.
 */
export function runWeight(value: string): number {
  const parsed = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isFinite(parsed) || parsed < MIN_RUN_WEIGHT || parsed > MAX_RUN_WEIGHT) throw new InvalidArgumentError(MSG.notAWeight(value, MIN_RUN_WEIGHT, MAX_RUN_WEIGHT));
  return parsed;
}

export function positiveUsd(value: string): number {
  const parsed = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isFinite(parsed) || parsed <= 0) throw new InvalidArgumentError(MSG.notUsd(value));
  return parsed;
}
