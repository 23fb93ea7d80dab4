import { Allowlist, checkBareSpecifier, DEFAULT_ALLOWLIST, isSpecifierRefusal } from '../ref/index.js';
import { parseRefTarget } from '../spec/ref-target.js';
import type { RolloutDraft } from './build-drafts.js';
import { shellWord } from './cli-command.js';

const defaults = Allowlist.compile(DEFAULT_ALLOWLIST);

/**
 * The `--allow` flags a worker needs for the run and reward Refs of `drafts` (the CLI's drafts
 * share them: the first draft's are read), beyond the default allowlist: ` --allow 'pkg/*'` per
 * package, shell-quoted, or '' when the built-ins suffice. For the "start a worker" hints: a
 * worker started as hinted refused the run's own reward package, which stopped the run
 * (fresh-user report).
 */
export function workerAllowFlags(drafts: readonly RolloutDraft[]): string {
  const [first] = drafts;
  if (!first) return '';
  const packages = new Set<string>();
  for (const ref of [first.run, first.reward]) {
    const target = parseRefTarget(ref?.$ref);
    if (typeof target === 'string' || defaults.check(target.module).allowed) continue;
    const specifier = checkBareSpecifier(target.module);
    if (!isSpecifierRefusal(specifier)) packages.add(specifier.packageName);
  }
  return [...packages].map((name) => ` --allow ${shellWord(`${name}/*`)}`).join('');
}
