/** Built-in reward factories: `rollout-queue/rewards`. Imports node builtins, `../runners` and `../sandbox` (the command reward's judge runs through runContained), and spec modules that load no package (never `../spec/index.js`, which loads zod into every rollout child that runs them). */
export { answerText } from './answer-text.js';
export type { BuiltinRewardFn } from './builtin-reward-fn.js';
export { lastNumber, type LastNumberOptions } from './last-number.js';
export { exactMatch, type ExactMatchOptions } from './exact-match.js';
export { contains, type ContainsOptions } from './contains.js';
export { regex, type RegexOptions } from './regex.js';
export { command, type CommandRewardFn } from './command.js';
export type { CommandRewardOptions } from './command-options.js';
