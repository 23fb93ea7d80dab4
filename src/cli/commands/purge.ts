import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { durationMs, runId } from '../option-parsers.js';

/** `rollout-queue purge RUN_ID` or `purge --older-than 7d`: remove finished runs from Redis now. */
export function purgeCommand() {
  return new Command('purge')
    .description(HELP.purge.description)
    .argument('[runId]', 'run id', runId)
    .addOption(new Option('--older-than <duration>', HELP.purge.olderThan).argParser(durationMs))
    .addOption(new Option('--discard-undelivered', HELP.purge.discardUndelivered))
    .addOption(queueOption());
}

/** Parsed options of `purge`, inferred (by extra-typings) from the flags purgeCommand declares; `olderThan` in ms. */
export type PurgeCommandOptions = ReturnType<ReturnType<typeof purgeCommand>['opts']>;
