import { Command } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { runId } from '../option-parsers.js';

/** `rollout-queue cancel RUN_ID`: cancel a run (exit 1 when it does not exist). */
export function cancelCommand() {
  return new Command('cancel')
    .description(HELP.cancel.description)
    .argument('<runId>', 'run id', runId)
    .addOption(queueOption());
}

/** Parsed options of `cancel`, inferred (by extra-typings) from the flags cancelCommand declares. */
export type CancelCommandOptions = ReturnType<ReturnType<typeof cancelCommand>['opts']>;
