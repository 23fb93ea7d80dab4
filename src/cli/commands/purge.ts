import { Command, Option } from 'commander';
import type { PurgeOptions } from '../actions/purge.js';
import { queueOption, type CommandContext } from '../command-context.js';
import { HELP } from '../messages.js';
import { durationMs, runId } from '../option-parsers.js';

/** `rollout-queue purge RUN_ID` or `purge --older-than 7d`: remove finished runs from Redis now. */
export function purgeCommand(ctx: CommandContext): Command {
  return new Command('purge')
    .description(HELP.purge.description)
    .argument('[runId]', 'run id', runId)
    .addOption(new Option('--older-than <duration>', HELP.purge.olderThan).argParser(durationMs))
    .addOption(queueOption())
    .action(async (id: string | undefined, options: PurgeOptions) => {
      const { purgeAction } = await import('../actions/purge.js');
      ctx.exitCode = await purgeAction(id, options);
    });
}
