/** Built-in run factories: `rollout-queue/runners`. Imports node builtins, `../sandbox` and spec modules that load no package (never `../spec/index.js`, which loads zod into every rollout child that runs them). */
export { codeRunner, type CodeRunFn, type CodeRunOutput } from './code-runner.js';
export { runContained, type ContainedLimits, type ContainedRun, type ContainedRunRequest, type ContainmentReport } from './run-contained.js';
export {
  DEFAULT_CODE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  MAX_CODE_TIMEOUT_MS,
  MAX_MAX_OUTPUT_BYTES,
  type CodeRunnerOptions,
} from './code-runner-options.js';
