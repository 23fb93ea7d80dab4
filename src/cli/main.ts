/**
 * The `rollout-queue` command (bin/rollout-queue.js imports this file). Commander parses;
 * each command is declared in `commands/`, its action attached in `command-actions.ts`, all
 * text in `messages.ts`. Exit codes: 0 every spec got a result, 3 stopped on a caller result,
 * 2 usage error (commander's own errors too), 130 interrupted, 1 anything else.
 */
import { Command, CommanderError, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { commandsWithActions } from './command-actions.js';
import { createContext } from './command-context.js';
import { startOtlpTracing } from '../platform/otlp-tracing.js';
import { packageVersion } from '../platform/process-metrics.js';
import { redisUrlPassword } from '../platform/redis-connection.js';
import { DEFAULT_REDIS_TIMEOUT_MS, isRedisTimeout, redisNoAnswerText, redisTimeoutMs } from '../platform/redis-timeout.js';
import { cliEnvironment } from './environment.js';
import { CliError, EXIT, type ExitCode } from './errors.js';
import { refusalLine } from './refusal-line.js';
import { applyHelpConventions } from './option-help.js';
import { HELP, MSG } from './messages.js';

/** Commands that create a worker or a producer, so have spans to export (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
const TRACED_COMMANDS: ReadonlySet<string> = new Set(['worker', 'run', 'resume', 'gateway']);

/**
 * Applies the settings every (sub)command needs: throw instead of exit, help after errors, and
 * required options checked after unknown ones. Commander checks required options first, so
 * `run --taks FILE` said only "required option '--tasks <file>' not specified", never that
 * `--taks` is unknown nor "Did you mean --tasks?" (fresh-user report); its `preAction` hooks
 * run once unknown options have been refused.
 */
function configure(command: CommandUnknownOpts, isProgram = true): CommandUnknownOpts {
  if (!isProgram) applyHelpConventions(command);
  command.exitOverride().showHelpAfterError('(add --help for usage)').allowExcessArguments(false);
  const required = command.options.filter((option) => option.mandatory);
  for (const option of required) option.makeOptionMandatory(false);
  if (required.length > 0) {
    command.hook('preAction', (_command, action) => {
      const missing = required.find((option) => action.getOptionValue(option.attributeName()) === undefined);
      if (missing) action.error(`error: required option '${missing.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
    });
  }
  for (const sub of command.commands) configure(sub, false);
  return command;
}

/** One line naming the address and the wait when `err` is ioredis giving up on a command (`commandTimeout`), else undefined. */
function noAnswerLine(err: unknown): string | undefined {
  if (!isRedisTimeout(err)) return undefined;
  let address = '(REDIS_URL)';
  let timeoutMs: number | undefined;
  try {
    address = cliEnvironment().address;
    timeoutMs = redisTimeoutMs();
  } catch {
    // a bad REDIS_URL or timeout has its own message elsewhere
  }
  return redisNoAnswerText(address, timeoutMs ?? DEFAULT_REDIS_TIMEOUT_MS);
}

/** `text` with the password of `REDIS_URL` (raw or percent-encoded) replaced by `***`. */
function withoutPassword(text: string): string {
  // Read as the connection reads it: `redis://s3cret@host` authenticates with s3cret (WHATWG URL
  // calls that a user name, and it was printed in the clear: fresh-user report).
  const password = redisUrlPassword(process.env.REDIS_URL ?? '');
  if (!password) return text;
  return [password, encodeURIComponent(password)].reduce((out, secret) => out.split(secret).join('***'), text);
}

/**
 * Parses `argv` and runs the command.
 * @returns the exit code; never throws.
 */
export async function runCli(argv: readonly string[]): Promise<ExitCode> {
  const context = createContext();
  const program = new Command('rollout-queue')
    .description(HELP.program)
    // Fresh-user report: `--version` was "unknown option".
    .version(packageVersion(), '-V, --version', 'print the version')
    .addHelpText('after', HELP.envHelp);
  for (const command of commandsWithActions(context)) program.addCommand(command);
  configure(program);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return context.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode;
    }
    // A Redis that stopped answering mid-command (the preflight passed): one line, not a stack.
    const silent = noAnswerLine(err);
    if (silent) {
      process.stderr.write(`error: ${silent}\n`);
      return EXIT.failure;
    }
    const refusal = refusalLine(err);
    if (refusal) {
      process.stderr.write(`error: ${withoutPassword(refusal)}\n`);
      return EXIT.failure;
    }
    process.stderr.write(`error: ${withoutPassword(err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`);
    return EXIT.failure;
  }
}

const argv = process.argv.slice(2);
// Commands that create a worker or a producer export their spans when an OTLP endpoint is set.
const tracing = TRACED_COMMANDS.has(argv[0] ?? '') ? await startOtlpTracing() : undefined;
const exitCode = await runCli(argv);
await tracing?.shutdown();
process.exit(exitCode);
