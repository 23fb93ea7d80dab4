import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../../src/cli/errors.js';
import { REPO_ROOT } from '../cli/cli-process.js';

// Fresh-user report: after `cancel RUN` the `run` command exited 1 although its Results were
// `caller`/`Cancelled`, and README said "3 stopped on a caller Result". The code follows
// docs/cli.md's table (a cancel is 1: test/integration/cli/run.test.ts, "cancel from another
// process"); this keeps the table and README's summary of it saying the same as EXIT, and saying
// where a cancel goes, so a caller Result of a cancel is not read as exit 3.

const CLI_DOC = readFileSync(path.join(REPO_ROOT, 'docs', 'cli.md'), 'utf8');
const README = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');

/** docs/cli.md's "## Exit codes" table: code → its "when" cell. */
function exitTable(): Map<number, string> {
  const section = CLI_DOC.split('\n## Exit codes\n')[1]?.split('\n## ')[0] ?? '';
  const rows = new Map<number, string>();
  for (const match of section.matchAll(/^\| (\d+) \| (.+) \|$/gm)) rows.set(Number(match[1]), match[2] as string);
  return rows;
}

describe('exit codes: docs/cli.md table, README and EXIT agree', () => {
  it('the table has a row for every EXIT code and no other', () => {
    expect([...exitTable().keys()].sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });

  it('a cancelled run is exit 1 in the table and in README; exit 3 is a caller Result of a broken contract, not a cancel', () => {
    const table = exitTable();
    expect(table.get(EXIT.failure)).toContain('the run was cancelled');
    expect(table.get(EXIT.stopped)).toContain('broken caller contract');
    expect(table.get(EXIT.stopped)).toContain('A `cancel` is not this');
    const readme = /Exit codes: ([^]*?)\n\n/.exec(README)?.[1]?.replace(/\s+/g, ' ') ?? '';
    for (const code of Object.values(EXIT)) expect(readme).toMatch(new RegExp(`\\b${code} `));
    expect(readme).toContain('3 stopped on a `caller` Result (a broken caller contract)');
    expect(readme).toContain('1 anything else, a cancelled run included');
  });
});
