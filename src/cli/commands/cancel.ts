import { Command } from 'commander';
import { queueOption, type CommandContext } from '../command-context.js';
import { HELP } from '../messages.js';
import { runId } from '../option-parsers.js';

/** `rollout-queue cancel RUN_ID`: cancel a run (exit 1 when it does not exist). */
export function cancelCommand(ctx: CommandContext): Command {
  return new Command('cancel')
    .description(HELP.cancel.description)
    .argument('<runId>', 'run id', runId)
    .addOption(queueOption())
    .action(async (id: string, options: { queue: string }) => {
      const { cancelAction } = await import('../actions/cancel.js');
      ctx.exitCode = await cancelAction(id, options);
    });
}
