import { Command, Option } from 'commander';
import type { DashboardCommandOptions } from '../actions/dashboard.js';
import type { CommandContext } from '../command-context.js';
import { HELP } from '../messages.js';
import { portOf, queueNameList } from '../option-parsers.js';

/** `rollout-queue dashboard [--port 3000] [--host 127.0.0.1] [--queue NAME ...] [--writable]`. */
export function dashboardCommand(ctx: CommandContext): Command {
  return new Command('dashboard')
    .description(HELP.dashboard.description)
    .addOption(new Option('--port <port>', HELP.dashboard.port).default(3000).argParser(portOf('--port', 3000)))
    .option('--host <host>', HELP.dashboard.host, '127.0.0.1')
    .addOption(new Option('--queue <name>', HELP.dashboard.queue).argParser(queueNameList))
    .option('--writable', HELP.dashboard.writable)
    .action(async (options: DashboardCommandOptions) => {
      const { dashboardAction } = await import('../actions/dashboard.js');
      ctx.exitCode = await dashboardAction(options);
    });
}
