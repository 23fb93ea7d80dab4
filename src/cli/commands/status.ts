import { Command } from 'commander';
import type { StatusOptions } from '../actions/status.js';
import { queueOption, type CommandContext } from '../command-context.js';
import { HELP } from '../messages.js';
import { runId } from '../option-parsers.js';

/** `rollout-queue status [RUN_ID] [--queue NAME] [--json]`. */
export function statusCommand(ctx: CommandContext): Command {
  return new Command('status')
    .description(HELP.status.description)
    .argument('[runId]', 'run id', runId)
    .addOption(queueOption())
    .option('--json', HELP.status.json)
    .action(async (id: string | undefined, options: StatusOptions) => {
      const { statusAction } = await import('../actions/status.js');
      ctx.exitCode = await statusAction(id, options);
    });
}
