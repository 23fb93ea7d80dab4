// Typecheck-only (not a vitest file; `npm run typecheck` compiles it through tsconfig.json's
// "test"): ref() types the config of every built-in factory by its target (issue 31 item 6).
// Each `@ts-expect-error` line must fail to compile, or the typecheck fails with "Unused
// '@ts-expect-error' directive"; the lines without one must compile.
import { ref, type BuiltinRefConfigs, type Ref } from '../../src/index.js';
import type * as rewards from '../../src/rewards/index.js';
import type { CodeRunnerOptions } from '../../src/runners/index.js';

// ── built-in configs that are right ────────────────────────────────────────
export const good: Ref[] = [
  ref('rollout-queue/runners:codeRunner', { entrypoint: 'main.py', timeoutMs: 10_000 }),
  ref('rollout-queue/runners:codeRunner', { entrypoint: ['python3', 'main.py'], maxOutputBytes: 4096 }),
  ref('rollout-queue/rewards:lastNumber'),
  ref('rollout-queue/rewards:lastNumber', { goldKey: 'answer', tolerance: 1e-6 }),
  ref('rollout-queue/rewards:exactMatch', { goldKey: 'expected' }),
  ref('rollout-queue/rewards:contains', {}),
  ref('rollout-queue/rewards:regex', { pattern: '^4\\d$', flags: 'i' }),
  ref('rollout-queue/rewards:command', { command: ['python3', 'judge.py'], files: { 'judge.py': 'print(1)' }, goldKeys: ['answer'] }),
  ref('rollout-queue/dispatch:dispatchRunner', { dispatch: ref('@acme/evals:solve', { model: 'x' }), maxArtifactBytes: 1024 }),
  ref('rollout-queue/dispatch:noReward'),
  // An options value typed elsewhere is accepted as it is (published-types regression).
  ref('rollout-queue/runners:codeRunner', { entrypoint: 'main.js' } satisfies CodeRunnerOptions),
  // The third argument still passes RefOptions.
  ref('rollout-queue/rewards:contains', {}, { call: true }),
];

// ── targets that are no built-in take any object, as before ─────────────────
const dynamicTarget: string = 'rollout-queue/rewards:lastNumber';
export const untyped: Ref[] = [
  ref('@acme/rollouts/rewards:judge', { model: 'gpt', anything: [1, 2] }),
  ref('@acme/rollouts/runners:agent'),
  // A target known only at run time is checked only at run time.
  ref(dynamicTarget, { goldkey: 'answer' }),
];

// ── built-in configs that are wrong ─────────────────────────────────────────
export const bad = [
  // @ts-expect-error misspelt key (the issue's example): codeRunner has `entrypoint`
  ref('rollout-queue/runners:codeRunner', { entrypiont: 'main.py' }),
  // @ts-expect-error codeRunner needs its entrypoint
  ref('rollout-queue/runners:codeRunner', { timeoutMs: 1000 }),
  // @ts-expect-error codeRunner's config cannot be left out (no entrypoint)
  ref('rollout-queue/runners:codeRunner'),
  // @ts-expect-error timeoutMs is a number of ms, not a string
  ref('rollout-queue/runners:codeRunner', { entrypoint: 'main.py', timeoutMs: '10s' }),
  // @ts-expect-error misspelt key: lastNumber has `goldKey`
  ref('rollout-queue/rewards:lastNumber', { goldkey: 'answer' }),
  // @ts-expect-error a config is an object, never a number
  ref('rollout-queue/rewards:lastNumber', 42),
  // @ts-expect-error exactMatch has no `tolerance`
  ref('rollout-queue/rewards:exactMatch', { goldKey: 'a', tolerance: 0.1 }),
  // @ts-expect-error contains' key is `goldKey`
  ref('rollout-queue/rewards:contains', { gold: 'a' }),
  // @ts-expect-error regex needs its pattern
  ref('rollout-queue/rewards:regex', {}),
  // @ts-expect-error regex's config cannot be left out (no pattern)
  ref('rollout-queue/rewards:regex'),
  // @ts-expect-error the command reward needs its command
  ref('rollout-queue/rewards:command', { files: { 'judge.py': 'print(1)' } }),
  // @ts-expect-error the command reward's command is an argv array, not a string
  ref('rollout-queue/rewards:command', { command: 'python3 judge.py' }),
  // @ts-expect-error dispatchRunner's dispatch is a nested Ref, not a string
  ref('rollout-queue/dispatch:dispatchRunner', { dispatch: '@acme/evals:solve' }),
  // @ts-expect-error noReward takes no config
  ref('rollout-queue/dispatch:noReward', { scale: 2 }),
];

// Every reward factory rollout-queue/rewards exports has an entry (a new one must add its options);
// `answerText` is a helper the factories share, no factory.
type RewardFactory = { [K in keyof typeof rewards]: (typeof rewards)[K] extends (...args: never[]) => unknown ? K : never }[keyof typeof rewards];
type Covered<T extends keyof BuiltinRefConfigs> = T;
export type EveryRewardTyped = Covered<`rollout-queue/rewards:${Exclude<RewardFactory, 'answerText'>}`>;
