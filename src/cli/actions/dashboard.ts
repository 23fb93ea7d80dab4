import type { DashboardAuth } from '../../dashboard/dashboard-auth.js';
import { DashboardAuthRequiredError, startDashboard } from '../../dashboard/server.js';
import { cliEnvironment } from '../environment.js';
import { CliError, EXIT, UsageError, type ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { DEFAULT_QUEUE } from '../../lease/index.js';
import { unusedQueues } from '../queue-usage.js';
import { requireRedis } from '../redis-preflight.js';
import { untilStopSignal } from '../signals.js';
import type { DashboardCommandOptions } from '../commands/dashboard.js';

/**
 * The dashboard login from the environment (never from flags: a flag's value shows in `ps`):
 * `ROLLOUT_QUEUE_DASHBOARD_TOKEN` (bearer token), else `ROLLOUT_QUEUE_DASHBOARD_USER` and
 * `ROLLOUT_QUEUE_DASHBOARD_PASSWORD` (basic auth). Undefined when neither is set.
 * @throws UsageError when only one of user and password is set.
 */
export function dashboardAuthFromEnv(env: NodeJS.ProcessEnv): DashboardAuth | undefined {
  const token = env.ROLLOUT_QUEUE_DASHBOARD_TOKEN;
  if (token) return { token };
  const user = env.ROLLOUT_QUEUE_DASHBOARD_USER;
  const password = env.ROLLOUT_QUEUE_DASHBOARD_PASSWORD;
  if (!user && !password) return undefined;
  if (!user || !password) throw new UsageError(MSG.dashboardHalfLogin(user ? 'ROLLOUT_QUEUE_DASHBOARD_PASSWORD' : 'ROLLOUT_QUEUE_DASHBOARD_USER'));
  return { user, password };
}

/** The one-line error of a dashboard that did not start: a taken `--port`, or why it failed. */
export function dashboardStartError(port: number, err: unknown): CliError {
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') return new CliError(MSG.dashboardPortInUse(port));
  return new CliError(MSG.dashboardFailed((err as Error).message));
}

/** `rollout-queue dashboard`: bull-board over the queues until SIGINT/SIGTERM; prints the URL. */
export async function dashboardAction(options: DashboardCommandOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  const auth = dashboardAuthFromEnv(process.env);
  await requireRedis(env);
  // A look that fails only loses the warning: the dashboard's own connection reports Redis trouble.
  // Without --queue it shows every queue under the prefix: it warns only when there is none (a
  // misspelt ROLLOUT_QUEUE_PREFIX; fresh-user report).
  const unused = (await unusedQueues(env, options.queue ?? [DEFAULT_QUEUE]).catch(() => [])).filter(({ used }) => options.queue !== undefined || used.queues.length === 0);
  let dashboard;
  // Listening before the readiness line is printed: a stop signal sent once it is read (a
  // supervisor, a test; CI under load) ended the process by the default action, exit code null.
  // One sent while it starts stops it once it has started.
  const stopped = untilStopSignal();
  try {
    dashboard = await startDashboard({
      redisUrl: env.redisUrl,
      prefix: env.prefix,
      ...(options.queue ? { queues: options.queue } : {}),
      port: options.port,
      host: options.host,
      readOnly: !options.writable,
      ...(auth ? { auth } : {}),
    });
  } catch (err) {
    if (err instanceof DashboardAuthRequiredError) throw new UsageError(MSG.dashboardNeedsLogin(options.host));
    throw dashboardStartError(options.port, err);
  }
  process.stdout.write(`${MSG.dashboardUrl(dashboard.url)}\n${MSG.dashboardQueues(dashboard.queues, !options.writable)}\n${auth ? `${MSG.dashboardLogin(auth.token ? 'token' : 'basic')}\n` : ''}${MSG.dashboardStop}\n`);
  for (const { queue, used } of unused) process.stderr.write(`${MSG.queueUnusedWarning(queue, env.prefix, used, 'it shows empty until a run or worker uses it')}\n`);
  await stopped;
  await dashboard.close();
  return EXIT.ok;
}
