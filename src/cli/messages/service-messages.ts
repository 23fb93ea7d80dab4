import type { QueuesUsed } from '../queues-used.js';
import { nameList, queuesUsedThere } from './message-parts.js';

/** Queues the dashboard's start line names (its pages list them all). */
const MAX_QUEUES_SHOWN = 10;

/** Texts of the long-running commands: worker, dashboard and gateway. */
export const SERVICE_MSG = {
  // ── worker ───────────────────────────────────────────────────────────────
  workerStopping: (graceMs: number | undefined) =>
    `stopping: no new rollouts; active ones may finish within ${graceMs === undefined ? 'the shutdown grace' : `${graceMs} ms`}; signal again to hand them back now`,
  coordinatorMetrics: (url: string) => `coordinator metrics: ${url}`,
  notAHost: (flag: string, value: string) => `${flag} ${JSON.stringify(value)} is not a listen address; pass an IP or host name such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`,
  metricsPortInUse: (port: number) =>
    `--metrics-port ${port} is already in use by another process; stop that process or pass another port, e.g. --metrics-port ${port + 1} (0 picks a free one)`,
  metricsPortDenied: (port: number, why: string) =>
    `--metrics-port ${port} cannot be used (${why}); ports below 1024 need privileges: pass one above 1024, e.g. --metrics-port 9464`,
  workerStoppingNow: 'stopping now: active rollouts are handed back to the queue',

  // ── dashboard ────────────────────────────────────────────────────────────
  dashboardUrl: (url: string) => `dashboard: ${url}`,
  dashboardFailed: (why: string) => `dashboard: ${why}`,
  dashboardPortInUse: (port: number) => `--port ${port} is already in use by another process; stop it or pass another port (0 picks a free one)`,
  dashboardQueues: (queues: readonly string[], readOnly: boolean) =>
    `showing queue(s) ${nameList(queues, MAX_QUEUES_SHOWN)}${readOnly ? ' (read-only; --writable enables retry/remove/clean)' : ' (WRITABLE)'}`,
  dashboardStop: 'press Ctrl-C to stop',
  /** A command's warning about a queue nothing used (a misspelt --queue or prefix); `effect` says what that means for the command. */
  queueUnusedWarning: (queue: string, prefix: string, used: QueuesUsed, effect: string) =>
    `warning: nothing has used queue "${queue}" under prefix "${prefix}" yet (${queuesUsedThere(used)}); ${effect}: check --queue and ROLLOUT_QUEUE_PREFIX`,
  dashboardLogin: (how: 'token' | 'basic') =>
    how === 'token' ? 'login required: Authorization: Bearer <ROLLOUT_QUEUE_DASHBOARD_TOKEN> (a browser: any user name, the token as password)' : 'login required: basic auth with ROLLOUT_QUEUE_DASHBOARD_USER / ROLLOUT_QUEUE_DASHBOARD_PASSWORD',
  dashboardNeedsLogin: (host: string) =>
    `--host ${host} lets other machines reach the dashboard, which shows every job: set ROLLOUT_QUEUE_DASHBOARD_TOKEN (bearer token) or ROLLOUT_QUEUE_DASHBOARD_USER and ROLLOUT_QUEUE_DASHBOARD_PASSWORD (basic auth), or use --host 127.0.0.1`,
  dashboardHalfLogin: (missing: string) => `dashboard basic auth needs both ROLLOUT_QUEUE_DASHBOARD_USER and ROLLOUT_QUEUE_DASHBOARD_PASSWORD; set ${missing} too (or ROLLOUT_QUEUE_DASHBOARD_TOKEN instead)`,
  demoDashboardClosed: (url: string) => `dashboard ${url} closed with the demo; run it with --keep to keep the dashboard, the workers and Redis up until Ctrl-C`,
  /** `ownRedis`: the demo started its Redis (not one REDIS_URL names), so Ctrl-C stops it too. */
  // Retention takes a completed run's delivered jobs out of BullMQ's finished sets (docs/retention.md).
  demoDashboardKept: (url: string, ownRedis: boolean) =>
    `run finished; the dashboard stays up at ${url} (--keep), its queue's jobs and workers live; the completed tab lists only Results not yet delivered, so it is empty now that every Result is in the results file. Press Ctrl-C to stop it${ownRedis ? ', the workers and Redis' : ' and the workers'}`,

  // ── gateway ──────────────────────────────────────────────────────────────
  gatewayAuthMissing: 'the gateway needs auth: pass --auth-token-env NAME (the variable holding the bearer token), or --no-auth on a loopback --host',
  gatewayAuthBoth: 'pass either --auth-token-env or --no-auth, not both',
  gatewayNoAuthOffLoopback: (host: string) =>
    `--no-auth is refused with --host ${host}: without auth the gateway only listens on loopback (127.0.0.1, ::1); pass --auth-token-env NAME to listen on ${host}`,
  gatewayTokenUnset: (name: string) => `--auth-token-env ${name}: the environment variable ${name} is not set or empty; export it with the bearer token clients will send`,
  gatewayTokenShort: (name: string) => `--auth-token-env ${name}: the token is shorter than 16 characters; use a long random one, e.g. $(openssl rand -hex 32)`,
  gatewayPortInUse: (port: number) => `--port ${port} is already in use by another process; stop it or pass another port (0 picks a free one)`,
  gatewayFailed: (why: string) => `gateway: ${why}`,
  gatewayListening: (url: string, queue: string, dispatch: string | undefined, auth: boolean) =>
    `gateway: ${url} (queue "${queue}", ${dispatch !== undefined ? `dispatch ${dispatch}` : 'runs API only: no --dispatch'}, ${auth ? 'bearer token required' : 'NO AUTH, loopback only'}); press Ctrl-C to stop`,
  gatewayConfigWithoutDispatch: '--dispatch-config configures the Dispatch of --dispatch, which is not given; pass --dispatch module:export too, or drop --dispatch-config',
} as const;
