import { startDashboard } from '../../dashboard/server.js';
import { cliEnvironment } from '../environment.js';
import { CliError, EXIT, type ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { requireRedis } from '../redis-preflight.js';
import { untilStopSignal } from '../signals.js';

/** Parsed options of `dashboard`. */
export interface DashboardCommandOptions {
  port: number;
  host: string;
  queue?: string[];
  writable?: boolean;
}

/** `rollout-queue dashboard`: bull-board over the queues until SIGINT/SIGTERM; prints the URL. */
export async function dashboardAction(options: DashboardCommandOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  await requireRedis(env);
  let dashboard;
  try {
    dashboard = await startDashboard({
      redisUrl: env.redisUrl,
      prefix: env.prefix,
      ...(options.queue ? { queues: options.queue } : {}),
      port: options.port,
      host: options.host,
      readOnly: !options.writable,
    });
  } catch (err) {
    throw new CliError(MSG.dashboardFailed((err as Error).message));
  }
  process.stdout.write(`${MSG.dashboardUrl(dashboard.url)}\n${MSG.dashboardQueues(dashboard.queues, !options.writable)}\n${MSG.dashboardStop}\n`);
  await untilStopSignal();
  await dashboard.close();
  return EXIT.ok;
}
