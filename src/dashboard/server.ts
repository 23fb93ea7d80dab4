import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import express from 'express';
import { DEFAULT_PREFIX, queueKeys } from '../lease/index.js';
import { createRedisClient } from '../platform/redis-connection.js';
import { discoverQueues } from './discover-queues.js';
import { publicText } from './public-text.js';
import { hasLogin, isLoopbackHost, requireLogin, type DashboardAuth } from './dashboard-auth.js';
import { summarizeJobData } from './job-data-summary.js';
import { jobName, publicApiBody, resultView } from './result-view.js';
import { runsRouter } from './runs-routes.js';

/** Options of {@link startDashboard}. */
export interface DashboardOptions {
  /** Redis URL, credentials included (never shown). */
  readonly redisUrl: string;
  /** Key prefix of the queues (default `rq`). */
  readonly prefix?: string;
  /**
   * Queues to show; empty or undefined: `rollouts` plus every queue found under the prefix, looked
   * for again (at most every 2 s) when the UI asks for the list, so queues made later join.
   */
  readonly queues?: readonly string[];
  /** Port, default 3000; 0 picks a free one (see `url`). */
  readonly port?: number;
  /**
   * Listen address, default `127.0.0.1`. Any address beyond loopback (127.0.0.0/8, ::1,
   * localhost) requires `auth`: bull-board has no login of its own.
   */
  readonly host?: string;
  /** Login required of every request (bearer token or basic auth); required off loopback. */
  readonly auth?: DashboardAuth;
  /**
   * bull-board's `readOnlyMode` (default true): every write endpoint answers HTTP 405 and its
   * button is hidden (retry, remove, clean, pause, …). Writing from the dashboard bypasses
   * the run's bookkeeping, so keep it read-only unless you know why.
   */
  readonly readOnly?: boolean;
}

/** Thrown by {@link startDashboard} when asked to listen beyond loopback without a login. */
export class DashboardAuthRequiredError extends Error {
  override readonly name = 'DashboardAuthRequiredError';
  constructor(readonly host: string) {
    super(`dashboard host "${host}" is reachable from other machines but no login is set; pass auth { token } or { user, password }, or listen on 127.0.0.1`);
  }
}

/** A running dashboard. */
export interface Dashboard {
  /** Where it answers, e.g. `http://127.0.0.1:3000/`. */
  readonly url: string;
  /** The queues it shows (grows as queues made after the start join; see `DashboardOptions.queues`). */
  readonly queues: readonly string[];
  /** Stops the HTTP server and closes the Redis connection (idempotent). */
  close(): Promise<void>;
}

/** Least time between two looks for queues made after the dashboard started (when it discovers its queues), ms. */
const REDISCOVER_MS = 2000;

/**
 * Serves bull-board (express adapter) over the given queues, read-only by default:
 * - each job's name shows its Result kind (`✔ ok · t1 · reward 1`, `✖ model · t2 · TypeError`),
 *   so failures stand apart from successes although BullMQ lists both as completed;
 * - job data through {@link summarizeJobData} (task and artifact as summaries, env names only),
 *   return values through {@link resultView};
 * - no stack traces, install paths or Redis address and stats (`hideRedisDetails`; see
 *   `public-text.ts`), also in error answers;
 * - a login (`auth`) on every request when given, and required beyond loopback.
 * @throws DashboardAuthRequiredError when `host` is beyond loopback and `auth` sets no login.
 * @throws Error when the port cannot be bound or a queue name is invalid.
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const host = options.host ?? '127.0.0.1';
  const readOnlyMode = options.readOnly ?? true;
  if (!isLoopbackHost(host) && !hasLogin(options.auth)) throw new DashboardAuthRequiredError(host);
  const connection = createRedisClient(options.redisUrl);
  connection.on('error', () => {});
  const discovering = !(options.queues && options.queues.length > 0);
  const names = discovering ? await discoverQueues(connection, prefix) : [...(options.queues ?? [])];
  for (const name of names) queueKeys(prefix, name);
  const queues = names.map((name) => new Queue(name, { connection, prefix, skipMetasUpdate: true }));
  const boardQueue = (queue: Queue): BullMQAdapter => {
    queue.on('error', () => {});
    const adapter = new BullMQAdapter(queue, { readOnlyMode });
    adapter.setFormatter('data', summarizeJobData);
    adapter.setFormatter('returnValue', resultView);
    adapter.setFormatter('name', jobName);
    return adapter;
  };
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath('/');
  const board = createBullBoard({
    queues: queues.map(boardQueue),
    // @bull-board/express 9.10.1 pins its own @bull-board/api 9.10.1, whose types differ from
    // api 9.10.2 only by private fields; at run time the adapter does not load the api package.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: {
      // The runs view (runs-routes.ts) beside bull-board's queues: a link in its header.
      uiConfig: { boardTitle: 'rollout-queue', hideRedisDetails: true, miscLinks: [{ text: 'Runs', url: '/runs' }] },
      handlerHooks: { after: (_context, result) => ({ ...result, body: publicApiBody(result.body) as typeof result.body }) },
    },
  });
  // bull-board's own error handler answers with the error's message (and its stack when
  // NODE_ENV=development): either can name paths or the Redis address.
  serverAdapter.setErrorHandler((error: Error & { statusCode?: number }) => ({
    status: (error.statusCode ?? 500) as 500,
    body: { error: 'dashboard request failed', message: publicText(error.message) },
  }));
  const app = express();
  app.disable('x-powered-by');
  if (hasLogin(options.auth)) app.use(requireLogin(options.auth as DashboardAuth));
  if (discovering) {
    // Queues made after the start (a new --queue, a placement queue) join the board when the UI
    // next asks for the list, at most one keyspace scan per REDISCOVER_MS (fresh-user report: a
    // dashboard started first never showed a queue made later).
    let lastLook = Date.now();
    app.use('/api/queues', (_req, _res, next) => {
      if (Date.now() - lastLook < REDISCOVER_MS) return next();
      lastLook = Date.now();
      discoverQueues(connection, prefix).then((found) => {
        for (const name of found) {
          if (names.includes(name)) continue;
          const queue = new Queue(name, { connection, prefix, skipMetasUpdate: true });
          names.push(name);
          queues.push(queue);
          board.addQueue(boardQueue(queue));
        }
      }, () => undefined).finally(() => next());
    });
  }
  // Runs (runs-routes.ts), read-only, behind the same login; their queues are looked for again
  // as bull-board's are, at most once per REDISCOVER_MS.
  let runsLook = 0;
  let runsQueues: readonly string[] = names;
  app.use(runsRouter({
    redis: connection,
    prefix,
    queues: async () => {
      if (discovering && Date.now() - runsLook >= REDISCOVER_MS) {
        runsLook = Date.now();
        runsQueues = await discoverQueues(connection, prefix);
      }
      return discovering ? runsQueues : names;
    },
  }));
  app.use('/', serverAdapter.getRouter());
  // Express' own final handler prints the stack (with install paths) outside production.
  app.use((_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ error: 'dashboard request failed' });
  });
  let server: Server;
  try {
    server = await listen(app, options.port ?? 3000, host);
  } catch (err) {
    await Promise.all(queues.map((queue) => queue.close()));
    connection.disconnect();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}/`,
    queues: names,
    close() {
      closed ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await Promise.all(queues.map((queue) => queue.close()));
        await connection.quit().catch(() => connection.disconnect());
      })();
      return closed;
    },
  };
}

function listen(app: express.Express, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}
