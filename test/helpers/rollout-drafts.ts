import type { RolloutDraft } from '../../src/producer/index.js';

/** A minimal valid draft for producer tests; the stub worker ignores the Refs and reads `task`. */
export function draft(task: Record<string, unknown>, extra: Partial<RolloutDraft> = {}): RolloutDraft {
  return {
    rendered: 'print(42)',
    task,
    run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py' } },
    reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'answer' } },
    ...extra,
  };
}

/** `count` drafts with task ids `t0…`, each with the given task fields. */
export function drafts(count: number, fields: Record<string, unknown> = {}): RolloutDraft[] {
  return Array.from({ length: count }, (_, i) => draft({ id: `t${i}`, ...fields }));
}
