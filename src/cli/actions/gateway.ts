import { isLoopbackHost, startGateway, type Gateway } from '../../gateway/index.js';
import { createLogger } from '../../platform/logger.js';
import { cliLogDestination } from '../log-lines.js';
import { buildRef, parseConfigOption } from '../build-drafts.js';
import { cliEnvironment } from '../environment.js';
import { CliError, EXIT, UsageError, type ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { requireRedis } from '../redis-preflight.js';
import { untilStopSignal } from '../signals.js';
import type { GatewayCommandOptions } from '../commands/gateway.js';

/**
 * `rollout-queue gateway`: serves the runs API, and `POST /dispatch` when `--dispatch` names a
 * Dispatch, until SIGINT/SIGTERM, then stops accepting, gives requests in flight `--grace-ms`
 * to be answered, answers what is left with 503 (leases keep running; a client's retry against
 * another or the restarted gateway attaches to them) and exits 0. The token is read from the environment
 * variable `--auth-token-env` names, never from the command line (it would show in `ps`).
 * Usage errors (exit 2): neither or both of --auth-token-env / --no-auth, --no-auth off loopback,
 * the variable unset or short, a bad --dispatch or --dispatch-config, --dispatch-config without --dispatch.
 */
export async function gatewayAction(options: GatewayCommandOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  const noAuth = options.auth === false;
  if (noAuth && options.authTokenEnv !== undefined) throw new UsageError(MSG.gatewayAuthBoth);
  if (!noAuth && options.authTokenEnv === undefined) throw new UsageError(MSG.gatewayAuthMissing);
  if (noAuth && !isLoopbackHost(options.host)) throw new UsageError(MSG.gatewayNoAuthOffLoopback(options.host));
  let authToken: string | undefined;
  if (options.authTokenEnv !== undefined) {
    authToken = process.env[options.authTokenEnv];
    if (!authToken) throw new UsageError(MSG.gatewayTokenUnset(options.authTokenEnv));
    if (authToken.length < 16) throw new UsageError(MSG.gatewayTokenShort(options.authTokenEnv));
  }
  if (options.dispatch === undefined && options.dispatchConfig !== undefined) throw new UsageError(MSG.gatewayConfigWithoutDispatch);
  const dispatch = options.dispatch === undefined ? undefined : buildRef('--dispatch', options.dispatch, parseConfigOption('--dispatch-config', options.dispatchConfig));
  await requireRedis(env);
  let gateway: Gateway;
  // Listening before the readiness line is printed: a stop signal sent once it is read (a
  // supervisor, a test; CI under load) ended the process by the default action, exit code null.
  // One sent while it starts stops it once it has started.
  const stopped = untilStopSignal();
  try {
    gateway = await startGateway({
      redisUrl: env.redisUrl,
      prefix: env.prefix,
      queue: options.queue,
      port: options.port,
      host: options.host,
      ...(dispatch ? { dispatch } : {}),
      noAuth,
      ...(authToken !== undefined ? { authToken } : {}),
      ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
      ...(options.env !== undefined ? { env: options.env } : {}),
      ...(options.runMs !== undefined ? { runMs: options.runMs } : {}),
      ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
      ...(options.keepAnswerMs !== undefined ? { keepAnswerMs: options.keepAnswerMs } : {}),
      ...(options.goldKey !== undefined ? { goldKeys: options.goldKey } : {}),
      logger: createLogger({ component: 'gateway' }, cliLogDestination('service')),
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new CliError(MSG.gatewayPortInUse(options.port));
    throw new CliError(MSG.gatewayFailed((err as Error).message));
  }
  process.stdout.write(`${MSG.gatewayListening(gateway.url, options.queue, options.dispatch, !noAuth)}\n`);
  await stopped;
  await gateway.close();
  return EXIT.ok;
}
