/**
 * Canonical JSON text of plain JSON data (see `findJsonDataIssue`): the keys of every object
 * sorted by UTF-16 code units (`Array.prototype.sort`, so `"10"` before `"9"`), keys holding
 * `undefined` left out, no whitespace; strings, numbers and `null` as `JSON.stringify` writes
 * them. Equal data give equal text whatever their key order, so its hash fingerprints the data
 * (a dispatch request, an evaluation, a Ref's cache key, a draft list).
 * @param normalize applied once to every object before it is written (not to arrays), e.g. to
 *   fill a Ref's defaults; the object it returns is written instead, its values walked as usual.
 */
export function canonicalJson(value: unknown, normalize?: (object: Record<string, unknown>) => Record<string, unknown>): string {
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item, normalize))).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const record = normalize ? normalize(value as Record<string, unknown>) : (value as Record<string, unknown>);
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key], normalize)}`).join(',')}}`;
}
