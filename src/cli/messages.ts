import { DEMO_MSG } from './messages/demo-messages.js';
import { INPUT_MSG } from './messages/input-messages.js';
import { OPTION_MSG } from './messages/option-messages.js';
import { PROGRESS_MSG } from './messages/progress-messages.js';
import { REDIS_MSG } from './messages/redis-messages.js';
import { RESULTS_FILE_MSG } from './messages/results-file-messages.js';
import { RUN_MSG } from './messages/run-messages.js';
import { SERVICE_MSG } from './messages/service-messages.js';
import { STATUS_MSG } from './messages/status-messages.js';
import { SUMMARY_MSG } from './messages/summary-messages.js';

/**
 * Every user-facing text of the `rollout-queue` command, gathered from `messages/` (the habit of
 * lint-staged `lib/messages.js`): help, examples, errors, progress, summaries. Errors name the
 * option or file:line, what was wrong, and the fix. Redis addresses are always passed in already
 * redacted (see `redactRedisUrl`); nothing here ever receives a password.
 *
 * Where each group lives: `messages/help.ts` (HELP: command and option help),
 * `messages/examples.ts` (EXAMPLES of each command's --help), `messages/option-messages.ts`,
 * `input-messages.ts` (tasks file, artifact), `results-file-messages.ts`, `redis-messages.ts`,
 * `run-messages.ts` (run life, cancel, purge), `progress-messages.ts`, `summary-messages.ts`,
 * `status-messages.ts`, `service-messages.ts` (worker, dashboard, gateway), `demo-messages.ts`,
 * and `message-parts.ts` (pieces they share). Add a text to the group of its concern.
 */

export { EXAMPLES } from './messages/examples.js';
export { HELP } from './messages/help.js';
export { typeName } from './messages/message-parts.js';

/** Error and status texts of every command, one object so callers write `MSG.name(…)`. */
export const MSG = {
  ...OPTION_MSG,
  ...INPUT_MSG,
  ...RESULTS_FILE_MSG,
  ...REDIS_MSG,
  ...RUN_MSG,
  ...PROGRESS_MSG,
  ...SUMMARY_MSG,
  ...STATUS_MSG,
  ...SERVICE_MSG,
  ...DEMO_MSG,
} as const;
