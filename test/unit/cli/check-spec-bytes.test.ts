import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildDrafts } from '../../../src/cli/build-drafts.js';
import { checkDrafts, checkSpecBytes } from '../../../src/cli/check-drafts.js';
import { UsageError } from '../../../src/cli/errors.js';
import type { TaskLine } from '../../../src/cli/tasks-file.js';
import { prepareDraft } from '../../../src/producer/rollout-draft.js';

const RUN_ID = 'run-20261204-215002-7d4b';
const lines = (...tasks: Array<Record<string, unknown>>): TaskLine[] => tasks.map((task, i) => ({ taskKey: (task.id as string | undefined) ?? i + 1, task: task as TaskLine['task'], line: i + 1 }));
const ref = (target: string) => ({ $ref: target, config: {} });

/** Drafts as `run` builds them, with their specs as `checkDrafts` returns them. */
function drafted(tasks: readonly TaskLine[], rendered: string) {
  const drafts = buildDrafts(tasks, { rendered, run: ref('rollout-queue/runners:codeRunner'), reward: ref('rollout-queue/rewards:lastNumber') });
  return { drafts, specs: checkDrafts('tasks.jsonl', tasks, drafts) };
}

/** The spec size the producer measures (and refuses over maxSpecBytes), bytes. */
function producerBytes(tasks: readonly TaskLine[], rendered: string, index: number): number {
  const { drafts } = drafted(tasks, rendered);
  const prepared = prepareDraft(drafts[index], { runId: RUN_ID, runAttemptId: randomUUID(), index, maxSpecBytes: 512 * 1024 * 1024, maxTaskBytes: 256 * 1024 });
  if (!prepared.ok) throw new Error('the draft was refused');
  return prepared.bytes;
}

/** The UsageError message `checkSpecBytes` throws under `limit`, or undefined when it passes. */
function refusal(tasks: readonly TaskLine[], rendered: string, limit: number): string | undefined {
  const { drafts, specs } = drafted(tasks, rendered);
  try {
    checkSpecBytes('tasks.jsonl', tasks, drafts, specs, RUN_ID, limit);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
}

describe('checkSpecBytes (run, before anything is enqueued)', () => {
  const tasks = lines({ id: 'a', answer: 1 }, { id: 'b-with-a-longer-id', answer: 'ünïcode ✓', extra: 'x'.repeat(300) });
  const artifact = `console.log("é${'a'.repeat(2000)}")\n`;

  it('measures a spec to the byte as the producer does (ids, UTF-8, the artifact counted once per spec)', () => {
    for (const index of [0, 1]) {
      const bytes = producerBytes(tasks, artifact, index);
      const single = [tasks[index] as TaskLine];
      expect(refusal(single, artifact, bytes)).toBeUndefined();
      expect(refusal(single, artifact, bytes - 1)).toContain(`would be ${bytes} bytes, over --max-spec-bytes ${bytes - 1}`);
    }
  });

  // Fresh-user report: a 40 MB artifact was enqueued, and the run stopped on a caller Result (exit 3)
  // whose fix, "raise maxSpecBytes", was a library option `run` did not have.
  // Fresh-user report (second pass): the value it suggested fitted the first task line only, so
  // a tasks file of lines of growing length took one retry per line.
  it('names --artifact when the artifact alone is over, with the --max-spec-bytes that fits every spec', () => {
    const big = 'a'.repeat(1_100_000);
    const largest = producerBytes(tasks, big, 1);
    expect(largest).toBeGreaterThan(producerBytes(tasks, big, 0));
    expect(refusal(tasks, big, 1024 * 1024)).toBe(
      `--artifact: the largest rollout spec (the artifact, the task and the options, as JSON) would be ${largest} bytes, over --max-spec-bytes 1048576 (the default); ` +
        `pass --max-spec-bytes ${largest} or more (at most 536870912), or keep large data out of the artifact (put it where the worker can read it and pass its path or key). Nothing was enqueued.`,
    );
    expect(refusal(tasks, big, largest)).toBeUndefined();
  });

  it('names the task line whose task tips its spec over, when the artifact alone fits', () => {
    const first = producerBytes(tasks, artifact, 0);
    expect(refusal(tasks, artifact, first)).toMatch(/^tasks\.jsonl:2: the largest rollout spec .* over --max-spec-bytes \d+; pass --max-spec-bytes \d+ or more/);
  });
});
