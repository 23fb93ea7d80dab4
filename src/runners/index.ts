/** Built-in run factories: `rollout-queue/runners`. Import only `../spec/index.js` and node builtins. */
export { codeRunner, type CodeRunFn, type CodeRunOutput } from './code-runner.js';
export {
  DEFAULT_CODE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  MAX_CODE_TIMEOUT_MS,
  MAX_MAX_OUTPUT_BYTES,
  type CodeRunnerOptions,
} from './code-runner-options.js';
