import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { goldKeyList, integerAtLeast, portOf } from '../option-parsers.js';

/**
 * `rollout-queue gateway --port P [--host 127.0.0.1] [--queue NAME] [--dispatch TARGET
 * [--dispatch-config JSON] [--gold-key KEY...]] (--auth-token-env NAME | --no-auth) [--max-body-bytes N]`.
 */
export function gatewayCommand() {
  return new Command('gateway')
    .description(HELP.gateway.description)
    .addOption(new Option('--port <port>', HELP.gateway.port).argParser(portOf('--port', 8080)).makeOptionMandatory())
    .option('--host <host>', HELP.gateway.host, '127.0.0.1')
    .addOption(queueOption())
    .option('--dispatch <module:export>', HELP.gateway.dispatch)
    .option('--dispatch-config <json>', HELP.gateway.dispatchConfig)
    .option('--auth-token-env <name>', HELP.gateway.authTokenEnv)
    .option('--no-auth', HELP.gateway.noAuth)
    .addOption(documentDefault(new Option('--max-body-bytes <n>', HELP.gateway.maxBodyBytes), 10 * 1024 * 1024).argParser(integerAtLeast(1024)))
    .addOption(new Option('--gold-key <key...>', HELP.gateway.goldKey).argParser(goldKeyList));
}

/**
 * Parsed options of `gateway`, inferred (by extra-typings) from the flags gatewayCommand declares;
 * `auth` is commander's `--no-auth`: false when given.
 */
export type GatewayCommandOptions = ReturnType<ReturnType<typeof gatewayCommand>['opts']>;
