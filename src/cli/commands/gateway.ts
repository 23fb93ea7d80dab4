import { Command, Option } from '@commander-js/extra-typings';
import { queueOption } from '../command-context.js';
import { HELP } from '../messages.js';
import { documentDefault } from '../option-help.js';
import { envNameList, goldKeyList, integerAtLeast, integerBetween, portOf } from '../option-parsers.js';
import { DEFAULT_GRACE_MS } from '../../gateway/index.js';
import { DEFAULT_KEEP_ANSWER_MS } from '../../harness/coordinator/index.js';
import { DEFAULT_RUN_MS } from '../../spec/index.js';

/**
 * `rollout-queue gateway --port P [--host 127.0.0.1] [--queue NAME] [--dispatch TARGET
 * [--dispatch-config JSON] [--gold-key KEY...]] (--auth-token-env NAME | --no-auth) [--max-body-bytes N]
 * [--env NAME]... [--run-ms N] [--grace-ms N] [--keep-answer-ms N]`.
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
    .addOption(new Option('--gold-key <key...>', HELP.gateway.goldKey).argParser(goldKeyList))
    .addOption(new Option('--env <name>', HELP.gateway.env).argParser(envNameList))
    .addOption(documentDefault(new Option('--run-ms <ms>', HELP.gateway.runMs), DEFAULT_RUN_MS).argParser(integerBetween(1, 86_400_000)))
    .addOption(documentDefault(new Option('--grace-ms <ms>', HELP.gateway.graceMs), DEFAULT_GRACE_MS).argParser(integerBetween(0, 3_600_000)))
    .addOption(documentDefault(new Option('--keep-answer-ms <ms>', HELP.gateway.keepAnswerMs), DEFAULT_KEEP_ANSWER_MS).argParser(integerBetween(0, 86_400_000)));
}

/**
 * Parsed options of `gateway`, inferred (by extra-typings) from the flags gatewayCommand declares;
 * `auth` is commander's `--no-auth`: false when given.
 */
export type GatewayCommandOptions = ReturnType<ReturnType<typeof gatewayCommand>['opts']>;
