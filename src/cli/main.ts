/**
 * The `rollout-queue` command (bin/rollout-queue.js imports this file). Commander parses;
 * each command lives in `commands/`, all text in `messages.ts`. Exit codes: 0 every spec got a
 * result, 3 stopped on a caller result, 2 usage error (commander's own errors too), 130
 * interrupted, 1 anything else.
 */
import { Command, CommanderError } from 'commander';
import { createContext } from './command-context.js';
import { cancelCommand } from './commands/cancel.js';
import { dashboardCommand } from './commands/dashboard.js';
import { demoCommand } from './commands/demo.js';
import { gatewayCommand } from './commands/gateway.js';
import { purgeCommand } from './commands/purge.js';
import { resumeCommand } from './commands/resume.js';
import { runCommand } from './commands/run.js';
import { statusCommand } from './commands/status.js';
import { workerCommand } from './commands/worker.js';
import { CliError, EXIT, type ExitCode } from './errors.js';
import { HELP } from './messages.js';

/** Applies the settings every (sub)command needs: throw instead of exit, help after errors. */
function configure(command: Command): Command {
  command.exitOverride().showHelpAfterError('(add --help for usage)').allowExcessArguments(false);
  for (const sub of command.commands) configure(sub);
  return command;
}

/** `text` with the password of `REDIS_URL` (raw or percent-encoded) replaced by `***`. */
function withoutPassword(text: string): string {
  let password = '';
  try {
    password = new URL(process.env.REDIS_URL ?? '').password;
  } catch {
    return text;
  }
  if (!password) return text;
  return [password, decodeURIComponent(password)].reduce((out, secret) => out.split(secret).join('***'), text);
}

/**
 * Parses `argv` and runs the command.
 * @returns the exit code; never throws.
 */
export async function runCli(argv: readonly string[]): Promise<ExitCode> {
  const context = createContext();
  const program = new Command('rollout-queue')
    .description(HELP.program)
    .addHelpText('after', HELP.envHelp)
    .addCommand(workerCommand(context))
    .addCommand(runCommand(context))
    .addCommand(resumeCommand(context))
    .addCommand(statusCommand(context))
    .addCommand(cancelCommand(context))
    .addCommand(purgeCommand(context))
    .addCommand(dashboardCommand(context))
    .addCommand(gatewayCommand(context))
    .addCommand(demoCommand(context));
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
    process.stderr.write(`error: ${withoutPassword(err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`);
    return EXIT.failure;
  }
}

process.exit(await runCli(process.argv.slice(2)));
