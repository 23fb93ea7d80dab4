import { InvalidArgumentError, Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { DEFAULT_PREFIX } from '../lease/index.js';
import { DEFAULT_REDIS_URL } from '../platform/redis-connection.js';
import { DEFAULT_REDIS_TIMEOUT_MS, REDIS_TIMEOUT_ENV, redisTimeoutProblem } from '../platform/redis-timeout.js';
import { EXAMPLES, HELP } from './messages.js';

/**
 * How every `--help` of the CLI reads (issue 31: defaults were written three ways, required
 * options unmarked, no examples, `--redis-url` nowhere):
 * - each option's description, then `(required; one of a, b; default: X)`: the default written
 *   once, in that one place, from the value commander applies or, where the default is applied
 *   below the CLI (a worker option the worker compiles, a spec field the schema fills), from
 *   {@link documentDefault}'s text, which names the same constant the code uses;
 * - required options marked `required` and named in the usage line;
 * - `--redis-url`, `--prefix` and `--redis-timeout-ms` on every command, winning over `REDIS_URL`,
 *   `ROLLOUT_QUEUE_PREFIX` and `ROLLOUT_QUEUE_REDIS_TIMEOUT_MS`;
 * - an `Examples:` section after each command's options ({@link EXAMPLES}).
 */

/** Options made mandatory by `.requiredOption` (main.ts checks them itself, after unknown ones, so commander's flag is turned off). */
const REQUIRED = new WeakSet<object>();

/**
 * Sets the default shown in help for an option whose default the CLI does not apply itself
 * (undefined is passed on and the layer below fills it): `text` should be built from the very
 * constant that layer uses, so help cannot drift from behaviour (checked by test/unit/cli/help-defaults).
 */
export function documentDefault<T extends Option>(option: T, text: string | number): T {
  option.defaultValueDescription = String(text);
  return option;
}

/** The default of `option` as help shows it, or undefined when it has none to show. */
export function defaultText(option: Option): string | undefined {
  if (option.defaultValueDescription !== undefined) return option.defaultValueDescription;
  const value: unknown = option.defaultValue;
  if (value === undefined || option.negate || typeof value === 'boolean') return undefined;
  return Array.isArray(value) ? value.join(' ') : String(value);
}

/** Whether `option` must be given (`.requiredOption`), whatever main.ts did with commander's own check. */
export function isRequired(option: Option): boolean {
  return option.mandatory || REQUIRED.has(option);
}

/** An option's help line: its description, then what it must be and its default, in one parenthesis. */
export function optionDescription(option: Option): string {
  const extras: string[] = [];
  if (isRequired(option)) extras.push('required');
  if (option.argChoices) extras.push(`one of ${option.argChoices.join(', ')}`);
  const fallback = defaultText(option);
  if (fallback !== undefined) extras.push(`default: ${fallback}`);
  return extras.length > 0 ? `${option.description} (${extras.join('; ')})` : option.description;
}

/** `--redis-url`, `--prefix` and `--redis-timeout-ms` of every command: set, they win over the environment. */
function connectionOptions(): Option[] {
  return [
    documentDefault(new Option('--redis-url <url>', HELP.redisUrl), `env REDIS_URL, else ${DEFAULT_REDIS_URL}`),
    documentDefault(new Option('--prefix <prefix>', HELP.prefix), `env ROLLOUT_QUEUE_PREFIX, else ${DEFAULT_PREFIX}`),
    documentDefault(new Option('--redis-timeout-ms <ms>', HELP.redisTimeoutMs).argParser(redisTimeoutArg), `env ${REDIS_TIMEOUT_ENV}, else ${DEFAULT_REDIS_TIMEOUT_MS}`),
  ];
}

/** Commander parser of `--redis-timeout-ms`: the text as given (it goes into the environment), or a usage error naming the option. */
function redisTimeoutArg(text: string): string {
  const problem = redisTimeoutProblem(text.trim());
  if (problem) throw new InvalidArgumentError(`${problem}`);
  return text.trim();
}

/**
 * Applies the conventions above to a subcommand. `--redis-url`, `--prefix` and `--redis-timeout-ms`
 * are written into `REDIS_URL`, `ROLLOUT_QUEUE_PREFIX` and `ROLLOUT_QUEUE_REDIS_TIMEOUT_MS` before
 * the action runs (the timeout also reaches every client the command makes, and a worker's): every path that reads the
 * connection (cliEnvironment, the hints a user pastes, password masking of errors, the demo's
 * worker processes) reads the environment, so a flag reaches all of them and cannot be
 * half-applied.
 */
export function applyHelpConventions(command: CommandUnknownOpts): void {
  for (const option of command.options) if (option.mandatory) REQUIRED.add(option);
  for (const option of connectionOptions()) command.addOption(option);
  command.hook('preAction', (_command, action) => {
    const url = action.getOptionValue('redisUrl') as string | undefined;
    const prefix = action.getOptionValue('prefix') as string | undefined;
    const timeoutMs = action.getOptionValue('redisTimeoutMs') as string | undefined;
    if (url !== undefined) process.env.REDIS_URL = url;
    if (prefix !== undefined) process.env.ROLLOUT_QUEUE_PREFIX = prefix;
    if (timeoutMs !== undefined) process.env[REDIS_TIMEOUT_ENV] = timeoutMs;
  });
  const required = command.options.filter(isRequired);
  if (required.length > 0) {
    const args = command.registeredArguments.map((arg) => (arg.required ? `<${arg.name()}>` : `[${arg.name()}]`));
    command.usage([...required.map((option) => option.flags), '[options]', ...args].join(' '));
  }
  command.configureHelp({ optionDescription: (option) => optionDescription(option as Option) });
  const examples = EXAMPLES[command.name() as keyof typeof EXAMPLES];
  if (examples) command.addHelpText('after', `\nExamples:\n${examples.map((line) => `  ${line}`).join('\n')}`);
}
