/**
 * Attaches each command's action. The commands (`commands/*.ts`) declare flags, defaults and
 * help; extra-typings infers the options an action receives from them, so an action's
 * parameter type (`XCommandOptions`, exported next to its command) cannot drift from the
 * flags. The actions are imported only when their command runs (startup and `--help` stay
 * fast); this file, not the command, imports them, so `actions → commands` (types) has no cycle.
 */
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import type { CommandContext } from './command-context.js';
import { cancelCommand } from './commands/cancel.js';
import { dashboardCommand } from './commands/dashboard.js';
import { demoCommand } from './commands/demo.js';
import { gatewayCommand } from './commands/gateway.js';
import { purgeCommand } from './commands/purge.js';
import { resumeCommand } from './commands/resume.js';
import { runCommand } from './commands/run.js';
import { statusCommand } from './commands/status.js';
import { workerCommand } from './commands/worker.js';
import { EXIT } from './errors.js';

/** Every subcommand in `--help` order, its action setting `ctx.exitCode`. */
export function commandsWithActions(ctx: CommandContext): CommandUnknownOpts[] {
  return [
    workerCommand().action(async (options) => {
      const { workerAction } = await import('./actions/worker.js');
      await workerAction(options);
      ctx.exitCode = EXIT.ok;
    }),
    runCommand().action(async (options) => {
      const { runAction } = await import('./actions/run.js');
      ctx.exitCode = await runAction(options);
    }),
    resumeCommand().action(async (id, options) => {
      const { resumeAction } = await import('./actions/resume.js');
      ctx.exitCode = await resumeAction(id, options);
    }),
    statusCommand().action(async (id, options) => {
      const { statusAction } = await import('./actions/status.js');
      ctx.exitCode = await statusAction(id, options);
    }),
    cancelCommand().action(async (id, options) => {
      const { cancelAction } = await import('./actions/cancel.js');
      ctx.exitCode = await cancelAction(id, options);
    }),
    purgeCommand().action(async (id, options) => {
      const { purgeAction } = await import('./actions/purge.js');
      ctx.exitCode = await purgeAction(id, options);
    }),
    dashboardCommand().action(async (options) => {
      const { dashboardAction } = await import('./actions/dashboard.js');
      ctx.exitCode = await dashboardAction(options);
    }),
    gatewayCommand().action(async (options) => {
      const { gatewayAction } = await import('./actions/gateway.js');
      ctx.exitCode = await gatewayAction(options);
    }),
    demoCommand().action(async (options) => {
      const { demoAction } = await import('./actions/demo.js');
      ctx.exitCode = await demoAction(options);
    }),
  ];
}
