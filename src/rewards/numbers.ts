/**
 * Number syntax read by {@link lastNumber}: an optional sign (`-`, `+` or the Unicode minus
 * `−`) that does not follow a letter, digit or `)` (so `10-3` reads as 10 and 3), then
 * either digits grouped by commas in threes (`1,234,567`) or plain digits, an optional
 * fraction (`2.5`, `.5`) and an optional exponent (`1e3`, `2.5E-4`).
 */
const NUMBER = /(?:(?<![\p{L}\p{N})])[-+\u2212])?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+|(?=\.\d))(?:\.\d+)?(?:[eE][-+]?\d+)?/gu;

/** Anchored form of the same syntax, for a gold answer written as a string. */
const WHOLE_NUMBER = /^[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+|(?=\.\d))(?:\.\d+)?(?:[eE][-+]?\d+)?$/u;

function toNumber(token: string): number {
  return Number(token.replace(/,/g, '').replace('\u2212', '-'));
}

/** The value of the last number in `text`, or undefined when there is none. */
export function findLastNumber(text: string): number | undefined {
  let last: string | undefined;
  for (const match of text.matchAll(NUMBER)) last = match[0];
  if (last === undefined) return undefined;
  const value = toNumber(last);
  return Number.isFinite(value) ? value : undefined;
}

/** The value of a string that is exactly one number (surrounding spaces allowed), else undefined. */
export function parseNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (!WHOLE_NUMBER.test(trimmed)) return undefined;
  const value = toNumber(trimmed);
  return Number.isFinite(value) ? value : undefined;
}
