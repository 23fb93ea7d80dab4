/**
 * Exit codes of the `rollout-queue` command and the two error classes that carry them.
 * Every command throws one of these (or lets commander throw) and `main.ts` turns it into
 * the process exit code, so no command calls `process.exit` itself.
 */

/** Process exit codes. */
export const EXIT = {
  /** Every spec got a result (or a service command stopped cleanly). */
  ok: 0,
  /** Anything else that went wrong: Redis unreachable, a worker failed to start, a bug. */
  failure: 1,
  /** The command line or an input file is wrong; nothing was enqueued. */
  usage: 2,
  /** The run stopped on a `caller` result (a broken caller contract). */
  stopped: 3,
  /** Interrupted by SIGINT/SIGTERM; the run goes on in Redis and can be resumed. */
  interrupted: 130,
} as const;

/** One of {@link EXIT}'s values. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error whose message is meant for the user as is (no stack), with the exit code to use. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  constructor(message: string, exitCode: ExitCode = EXIT.failure, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.exitCode = exitCode;
  }
}

/** A wrong command line or input file: exit code 2, and nothing was enqueued. */
export class UsageError extends CliError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.usage, options);
  }
}
