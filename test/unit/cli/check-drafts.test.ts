import { describe, expect, it } from 'vitest';
import { buildDrafts, parseConfigOption } from '../../../src/cli/build-drafts.js';
import { checkDrafts, fingerprintDifference, specsFingerprint } from '../../../src/cli/check-drafts.js';
import { UsageError } from '../../../src/cli/errors.js';
import type { TaskLine } from '../../../src/cli/tasks-file.js';

const tasks: TaskLine[] = [
  { taskKey: 'a', task: { id: 'a', answer: 1 }, line: 1 },
  { taskKey: 'b', task: { id: 'b', answer: 2 }, line: 2 },
];
const run = { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', timeoutMs: 3000 } };
const reward = { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'answer' } };

/** The fingerprint `run` stores for these tasks and options. */
function fingerprintOf(lines: readonly TaskLine[], options: Partial<Parameters<typeof buildDrafts>[1]> = {}): string {
  const drafts = buildDrafts(lines, { rendered: 'console.log(3)', run, reward, ...options });
  return specsFingerprint(drafts, checkDrafts('tasks.jsonl', lines, drafts));
}

describe('the run-id fingerprint of a tasks file and its options', () => {
  // Fresh-user reports: the same inputs spelt otherwise were refused as "other inputs".
  it('is the same for --env names in another order or repeated, config keys in another order, and a spec default given', () => {
    const base = fingerprintOf(tasks, { env: ['LANG', 'HOME'] });
    expect(fingerprintOf(tasks, { env: ['HOME', 'LANG'] })).toBe(base);
    expect(fingerprintOf(tasks, { env: ['LANG', 'HOME', 'HOME'] })).toBe(base);
    expect(fingerprintOf(tasks, { env: ['LANG', 'HOME'], memoryMb: 1024, runMs: 600_000 })).toBe(base);
    const reordered = buildDrafts(tasks, { rendered: 'console.log(3)', run: { ...run, config: { timeoutMs: 3000, entrypoint: 'main.js' } }, reward, env: ['LANG', 'HOME'] });
    expect(specsFingerprint(reordered, checkDrafts('tasks.jsonl', tasks, reordered))).toBe(base);
  });

  it('tells a changed task from a changed option', () => {
    const base = fingerprintOf(tasks);
    const edited = fingerprintOf([tasks[0] as TaskLine, { taskKey: 'b', task: { id: 'b', answer: 3 }, line: 2 }]);
    expect(fingerprintDifference(base, edited)).toBe('tasks');
    expect(fingerprintDifference(base, fingerprintOf(tasks, { runMs: 5000 }))).toBe('inputs');
  });

  it('refuses a task line whose placement is not an object, naming file:line', () => {
    const lines: TaskLine[] = [tasks[0] as TaskLine, { taskKey: 'b', task: { id: 'b', placement: 'eu' }, line: 7 }];
    const drafts = buildDrafts(lines, { rendered: 'x', run, reward });
    expect(() => checkDrafts('tasks.jsonl', lines, drafts)).toThrow(UsageError);
    expect(() => checkDrafts('tasks.jsonl', lines, drafts)).toThrow('tasks.jsonl:7: "placement" must be an object of labels');
  });
});

describe('a config option that is not JSON', () => {
  // Fresh-user report: `--reward-config '{goldKey:"answer"}'` was answered with an example of
  // `timeoutMs`, which lastNumber then refuses.
  it('names the option and shows a quoted object, with no key of another Ref in it', () => {
    const refused = (): unknown => parseConfigOption('--reward-config', '{goldKey:"answer"}');
    expect(refused).toThrow(UsageError);
    expect(refused).toThrow(/^--reward-config is not valid JSON \(.+\); write a JSON object, its keys and strings in double quotes/);
    expect(refused).toThrow(`e.g. --reward-config '{"key": "value", "count": 3}'`);
    expect(refused).not.toThrow(/timeoutMs/);
  });
});

describe('run --cpus, --disk-mb and --network (issue 28)', () => {
  it('put sandbox.cpus, sandbox.diskMb and sandbox.network in every spec, and --cpus refuses what is not 0.01–1024 CPUs', async () => {
    const drafts = buildDrafts(tasks, { rendered: 'x', run, reward, cpus: 0.5, diskMb: 64, network: 'host' });
    const specs = checkDrafts('tasks.jsonl', tasks, drafts);
    expect(specs.map((spec) => [spec.sandbox.cpus, spec.sandbox.diskMb, spec.sandbox.network])).toEqual([
      [0.5, 64, 'host'],
      [0.5, 64, 'host'],
    ]);
    const { cpusOf } = await import('../../../src/cli/option-parsers.js');
    expect(cpusOf('0.25')).toBe(0.25);
    for (const bad of ['0', '2000', 'one']) expect(() => cpusOf(bad)).toThrow(`--cpus takes a number of CPUs from 0.01 to 1024, e.g. 1 or 0.5, got "${bad}"`);
  });
});
