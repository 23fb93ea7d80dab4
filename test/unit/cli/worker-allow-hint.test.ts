import { describe, expect, it } from 'vitest';
import { workerAllowFlags } from '../../../src/cli/worker-allow-hint.js';
import type { RolloutDraft } from '../../../src/producer/index.js';

const draft = (run: string, reward: string): RolloutDraft => ({ rendered: 'x', task: { id: 't' }, run: { $ref: run, config: {} }, reward: { $ref: reward, config: {} } });

describe('workerAllowFlags: the --allow flags of a "start a worker" hint', () => {
  it("names the run's own packages, so a worker started as hinted takes the run (fresh-user report: it refused my-rewards and stopped the run)", () => {
    expect(workerAllowFlags([draft('rollout-queue/runners:codeRunner', 'my-rewards:score')])).toBe(" --allow 'my-rewards/*'");
    expect(workerAllowFlags([draft('@acme/evals/solvers:solve', 'my-rewards/sub:score')])).toBe(" --allow '@acme/evals/*' --allow 'my-rewards/*'");
    expect(workerAllowFlags([draft('@acme/evals:solve', '@acme/evals:score')])).toBe(" --allow '@acme/evals/*'");
  });

  it('is empty when the built-ins suffice, or there are no drafts', () => {
    expect(workerAllowFlags([draft('rollout-queue/runners:codeRunner', 'rollout-queue/rewards:lastNumber')])).toBe('');
    expect(workerAllowFlags([])).toBe('');
  });
});
