import { Command } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { runId } from '../option-parsers.js';

/** `rollout-queue status [RUN_ID] [--queue NAME] [--json]`. */
export function statusCommand() {
  return new Command('status')
    .description(HELP.status.description)
    .argument('[runId]', 'run id', runId)
    .addOption(queueOption())
    .option('--json', HELP.status.json);
}

/** Parsed options of `status`, inferred (by extra-typings) from the flags statusCommand declares. */
export type StatusCommandOptions = ReturnType<ReturnType<typeof statusCommand>['opts']>;
