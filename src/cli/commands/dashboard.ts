import { Command, Option } from '@commander-js/extra-typings';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { portOf, queueNameList } from '../option-parsers.js';

/** `rollout-queue dashboard [--port 3000] [--host 127.0.0.1] [--queue NAME ...] [--writable]`. */
export function dashboardCommand() {
  return new Command('dashboard')
    .description(HELP.dashboard.description)
    .addOption(new Option('--port <port>', HELP.dashboard.port).default(3000).argParser(portOf('--port', 3000)))
    .option('--host <host>', HELP.dashboard.host, '127.0.0.1')
    .addOption(documentDefault(new Option('--queue <name>', HELP.dashboard.queue), 'rollouts and every queue found under the prefix').argParser(queueNameList))
    .option('--writable', HELP.dashboard.writable);
}

/** Parsed options of `dashboard`, inferred (by extra-typings) from the flags dashboardCommand declares. */
export type DashboardCommandOptions = ReturnType<ReturnType<typeof dashboardCommand>['opts']>;
