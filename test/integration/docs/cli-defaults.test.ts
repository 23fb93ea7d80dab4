import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultText, isRequired } from '../../../src/cli/option-help.js';
import { REPO_ROOT } from '../cli/cli-process.js';
import { optionsOf } from './cli-parse.js';

// Issue 31: defaults written one way. test/unit/cli/help-defaults compares each default --help
// shows with what the code applies; this compares docs/cli.md's option tables with --help's
// defaults, so the page cannot drift from the code either. A row's default cell must begin with
// the help's default (numbers compared without their thousands spaces, code quotes dropped), say
// `required` for a required option, and state no default where the CLI has none.

const CLI_DOC = readFileSync(path.join(REPO_ROOT, 'docs', 'cli.md'), 'utf8');
/**
 * What a default cell may say for an option --help shows no default for: nothing is set (`none`,
 * `off`), or a config option left out is the empty object (`{}`, what the factories receive).
 */
const NO_DEFAULT = /^(none|off|\{\})$/;

/** `docs/cli.md` section `## \`command\`` → flag → its default cell. */
function documentedDefaults(): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const line of CLI_DOC.split('\n')) {
    const section = /^## `([a-z]+)`/.exec(line);
    if (section) sections.set(section[1] ?? '', (current = new Map()));
    else if (/^## /.test(line)) current = undefined;
    const row = /^\| `(--[a-z][a-z-]*)[^`]*` \| ([^|]*) \|/.exec(line);
    if (row && current) current.set(row[1] ?? '', (row[2] ?? '').trim());
  }
  return sections;
}

/** A cell or help text as compared: no code quotes, `1 048 576` as `1048576`, spaces squeezed. */
function normalised(text: string): string {
  return text.replace(/`/g, '').replace(/(\d) (?=\d{3}\b)/g, '$1').replace(/\s+/g, ' ').trim();
}

describe('docs/cli.md defaults', () => {
  it('each documented default is the one --help shows (and so the one the code applies)', () => {
    const problems: string[] = [];
    let compared = 0;
    for (const [command, rows] of documentedDefaults()) {
      const options = optionsOf(command);
      if (!options) {
        problems.push(`docs/cli.md has a section for \`${command}\`, which is no command`);
        continue;
      }
      for (const [flag, cell] of rows) {
        const option = options.find((candidate) => candidate.long === flag);
        if (!option) {
          problems.push(`${command} ${flag}: documented, but the command has no such option`);
          continue;
        }
        const documented = normalised(cell);
        const help = defaultText(option);
        compared += 1;
        if (isRequired(option)) {
          if (!/^required\b/.test(documented)) problems.push(`${command} ${flag}: required, but docs/cli.md says "${cell}"`);
        } else if (help !== undefined) {
          if (!documented.startsWith(normalised(help))) problems.push(`${command} ${flag}: --help says default "${help}", docs/cli.md "${cell}"`);
        } else if (!NO_DEFAULT.test(documented)) {
          problems.push(`${command} ${flag}: --help shows no default, docs/cli.md says "${cell}"`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(compared).toBeGreaterThan(40);
  });
});
