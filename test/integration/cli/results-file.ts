import { readFileSync } from 'node:fs';
import { RESULT_LINE_FIELDS } from '../../../src/spec/index.js';

/**
 * How many non-empty lines a results file being written holds now; 0 while it does not exist.
 * Before a run starts, `run` proves `--out` writable by creating and removing it (checkOutFile),
 * so a file seen to exist may be gone at the read: that reads as 0 too (CI: ENOENT between
 * existsSync and readFileSync while the run was starting).
 */
export function resultLineCount(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '').length;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

/** A results file's lines, parsed; fails the test on a line that is not JSON. */
export function readResults(file: string): Array<Record<string, unknown>> {
  const text = readFileSync(file, 'utf8');
  if (text !== '' && !text.endsWith('\n')) throw new Error(`${file} ends with a partial line`);
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Problems with a results file: leases twice or missing, lines without exactly RESULT_LINE_FIELDS in order. */
export function resultProblems(lines: ReadonlyArray<Record<string, unknown>>, expectedLeases: readonly string[]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  for (const line of lines) {
    const keys = Object.keys(line).join(',');
    if (keys !== RESULT_LINE_FIELDS.join(',')) problems.push(`line of ${String(line.leaseId)} has fields ${keys}`);
    seen.set(String(line.leaseId), (seen.get(String(line.leaseId)) ?? 0) + 1);
  }
  for (const [lease, count] of seen) if (count > 1) problems.push(`${lease} appears ${count} times`);
  for (const lease of expectedLeases) if (!seen.has(lease)) problems.push(`${lease} is missing`);
  for (const lease of seen.keys()) if (!expectedLeases.includes(lease)) problems.push(`${lease} was not expected`);
  return problems;
}
