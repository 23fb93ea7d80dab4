/** Built-in reward factories: `rollout-queue/rewards`. Import only `../spec/index.js` and node builtins. */
export { answerText } from './answer-text.js';
export type { BuiltinRewardFn } from './builtin-reward-fn.js';
export { lastNumber, type LastNumberOptions } from './last-number.js';
export { exactMatch, type ExactMatchOptions } from './exact-match.js';
export { contains, type ContainsOptions } from './contains.js';
export { regex, type RegexOptions } from './regex.js';
