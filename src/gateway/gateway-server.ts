import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { queueKeys } from '../lease/index.js';
import { childLogger, createLogger } from '../platform/logger.js';
import { connectProducerRedis, DEFAULT_MAX_TASK_BYTES, MAX_PRODUCER_BYTES, RolloutQueue } from '../producer/index.js';
import { DEFAULT_HANG_MS } from '../spec/index.js';
import { queueDispatch } from '../harness/coordinator/index.js';
import { handleDispatch } from '../harness/http/dispatch-route.js';
import { BodyTooLargeError, hasBearer, readBody, sendError } from '../harness/http/http-io.js';
import { compileGatewayOptions, type GatewayOptions } from './gateway-options.js';
import { GatewayMetrics, type GatewayRoute } from './gateway-metrics.js';
import { RunLog } from './run-log.js';
import type { RunPump } from './run-pump.js';
import { acknowledgeRoute, cancelRunRoute, getRun, postRun, streamResults, type RunsDeps } from './runs-routes.js';

/** A running gateway. */
export interface Gateway {
  /** Where it answers, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly port: number;
  /**
   * Stops it: it stops accepting connections and answers new requests 503 `GatewayClosing`;
   * dispatches in flight get up to `graceMs` to be answered as usual, then what is left is
   * answered 503 `GatewayClosing` (their leases keep running: a client's retry to another or
   * the restarted gateway attaches to them); result streams end; then connections close. Idempotent.
   */
  close(): Promise<void>;
}

/** How long close() waits, after the producer closed, for the last answers to be written, ms. */
const CLOSE_WAIT_MS = 5000;

/** The metrics label of a request path. */
function routeOf(pathname: string, run: RegExpExecArray | null): GatewayRoute {
  if (pathname === '/dispatch') return 'dispatch';
  if (pathname === '/runs') return 'runs';
  if (pathname === '/metrics') return 'metrics';
  if (!run) return 'other';
  return run[2] === '/results' ? 'results' : run[2] === '/ack' ? 'ack' : run[2] === '/cancel' ? 'cancel' : 'run';
}

const RUN_PATH = /^\/runs\/([A-Za-z0-9_-]{1,200})(\/results|\/ack|\/cancel)?$/;

/**
 * Serves the harness' `POST /dispatch` wire and the runs API over one long-lived producer
 * (DESIGN.md "Any-language edge"). Routes: `POST /dispatch`, `POST /runs`, `GET /runs/ID`,
 * `GET /runs/ID/results?after=N`, `POST /runs/ID/cancel`, `GET /metrics` (Prometheus text, see
 * `GatewayMetrics`); anything else is 404. Every request needs `Authorization: Bearer <token>`
 * (401 without) unless started with `noAuth` on loopback. Bodies over `maxBodyBytes` are read to
 * their end (up to 4 × the limit, at least 64 MiB) and answered 413, so any client sees the
 * status. Each answered request is one log line: method, path, status, ms, cellId (dispatch).
 * @throws Error for invalid options (naming the option: no auth off loopback is refused), when
 *   Redis is unreachable, or when the port cannot be bound.
 */
export async function startGateway(input: GatewayOptions): Promise<Gateway> {
  const options = compileGatewayOptions(input);
  const logger = childLogger(options.logger ?? createLogger({ component: 'gateway' }), { queue: options.queue });
  // A body the gateway accepts must fit the spec it becomes: the task holds the whole scenario.
  const maxTaskBytes = Math.min(MAX_PRODUCER_BYTES, Math.max(DEFAULT_MAX_TASK_BYTES, options.maxBodyBytes + 16 * 1024));
  const maxSpecBytes = Math.min(MAX_PRODUCER_BYTES, Math.max(1024 * 1024, maxTaskBytes + 64 * 1024));
  const rq = await RolloutQueue.create({ redisUrl: options.redisUrl, queue: options.queue, ...(options.prefix ? { prefix: options.prefix } : {}), maxTaskBytes, maxSpecBytes, logger });
  let redis: Redis | undefined;
  try {
    redis = await connectProducerRedis(options.redisUrl, rq.options.connectTimeoutMs, logger);
  } catch (err) {
    await rq.close();
    throw err;
  }
  // A lease's hang limit stays above its run limit (TimeoutsSchema), so a slow dispatch is judged, not presumed wedged.
  const timeouts = options.runMs !== undefined ? { runMs: options.runMs, hangMs: Math.max(DEFAULT_HANG_MS, options.runMs + 60_000) } : undefined;
  const dispatch = options.dispatch
    ? queueDispatch({
        dispatch: options.dispatch, producer: rq,
        ...(options.keepAnswerMs !== undefined ? { keepAnswerMs: options.keepAnswerMs } : {}),
        ...(options.env.length > 0 ? { sandbox: { env: [...options.env] } } : {}),
        ...(timeouts ? { timeouts } : {}),
        ...(options.goldKeys !== undefined ? { goldKeys: options.goldKeys } : {}),
      })
    : undefined;
  // Opens the queue's plane now: its sweeper finishes dispatch runs an earlier gateway left.
  await dispatch?.ready();
  const metrics = new GatewayMetrics();
  const routes = `${dispatch ? 'POST /dispatch, ' : ''}POST /runs, GET /runs/ID, GET /runs/ID/results?after=N, POST /runs/ID/ack, POST /runs/ID/cancel, GET /metrics`;
  const log = new RunLog(redis, queueKeys(rq.options.prefix, options.queue));
  const pumps = new Map<string, RunPump>();
  let closing = false;
  const deps: RunsDeps = { rq, log, logger, pumps, closing: () => closing };
  const inflight = new Set<Promise<void>>();

  /** What a request's log line and metrics say besides its status. */
  interface Seen { cellId?: string | undefined; final?: boolean }
  const route = async (req: IncomingMessage, res: ServerResponse, url: URL, run: RegExpExecArray | null, seen: Seen): Promise<void> => {
    if (closing) return sendError(res, 503, 'GatewayClosing', 'the gateway is shutting down; retry against its replacement', {}, { 'retry-after': '1' });
    if (options.authToken !== undefined && !hasBearer(req, options.authToken)) {
      res.setHeader('www-authenticate', 'Bearer');
      return sendError(res, 401, 'Unauthorized', 'missing or wrong bearer token; send "Authorization: Bearer <token>" with the token the gateway was started with');
    }
    if (req.method === 'POST' && url.pathname === '/dispatch') {
      if (!dispatch) return sendError(res, 404, 'NoDispatch', `this gateway was started without a Dispatch, so it serves the runs API only (${routes}); start it with --dispatch module:export (startGateway's dispatch) to serve POST /dispatch`);
      const outcome = await handleDispatch(req, res, await readBody(req, options.maxBodyBytes), dispatch, logger, () => closing);
      seen.cellId = outcome.cellId;
      seen.final = outcome.final !== undefined;
      return;
    }
    if (req.method === 'GET' && url.pathname === '/metrics') {
      const text = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
      return;
    }
    // A JSON body, or a 400 naming the shape to send (undefined: answered already).
    const jsonBody = async (shape: string): Promise<{ value: unknown } | undefined> => {
      const body = await readBody(req, options.maxBodyBytes);
      try {
        return { value: JSON.parse(body.toString('utf8')) as unknown };
      } catch (err) {
        sendError(res, 400, 'MalformedJson', `the body is not JSON (${(err as Error).message}); send ${shape}`);
        return undefined;
      }
    };
    if (req.method === 'POST' && url.pathname === '/runs') {
      const body = await jsonBody('{"runId": "...", "drafts": [...]}');
      return body && postRun(res, body.value, deps);
    }
    if (run && req.method === 'GET' && run[2] === undefined) return getRun(res, run[1] as string, deps);
    if (run && req.method === 'GET' && run[2] === '/results') return streamResults(req, res, run[1] as string, url.searchParams.get('after'), deps);
    if (run && req.method === 'POST' && run[2] === '/cancel') return cancelRunRoute(res, run[1] as string, deps);
    if (run && req.method === 'POST' && run[2] === '/ack') {
      const body = await jsonBody('{"count": N}');
      return body && acknowledgeRoute(res, run[1] as string, body.value, deps);
    }
    return sendError(res, 404, 'NotFound', `no route ${req.method} ${url.pathname}; the gateway serves ${routes}`);
  };

  const server: Server = createServer((req, res) => {
    const startedAt = performance.now();
    const done = metrics.started();
    const url = new URL(req.url ?? '/', 'http://gateway');
    const run = RUN_PATH.exec(url.pathname);
    const seen: Seen = {};
    // One line per request, when its answer is written (or the client went away first).
    res.once('close', () => {
      const ms = Math.round(performance.now() - startedAt);
      const status = res.writableFinished || res.headersSent ? res.statusCode : 499;
      done(routeOf(url.pathname, run), status, ms / 1000, seen.final === true);
      logger.info({ method: req.method, path: url.pathname, status, ms, ...(seen.cellId !== undefined ? { cellId: seen.cellId } : {}) }, 'request');
    });
    const handled = route(req, res, url, run, seen).catch((err: unknown) => {
      // Drained, the connection stays usable; otherwise it closes after the answer.
      if (err instanceof BodyTooLargeError) return sendError(res, 413, 'BodyTooLarge', err.message, {}, err.drained ? {} : { connection: 'close' });
      logger.error({ err: (err as Error).message, method: req.method, path: req.url }, 'gateway request failed');
      if (!res.headersSent) return sendError(res, 503, 'GatewayError', `the gateway failed on this request: ${(err as Error).message}; retry`);
      res.end();
    });
    inflight.add(handled);
    void handled.finally(() => inflight.delete(handled));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (err) {
    await dispatch?.close();
    await rq.close();
    redis.disconnect();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  logger.info({ url, auth: options.authToken !== undefined, maxBodyBytes: options.maxBodyBytes, dispatch: options.dispatch?.$ref ?? null, env: options.env, runMs: options.runMs ?? null, graceMs: options.graceMs }, 'gateway listening');
  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    close() {
      closed ??= (async () => {
        closing = true;
        for (const pump of pumps.values()) pump.stop();
        // Wake every results stream now so it ends instead of waiting out its poll.
        for (const runId of log.changed.eventNames()) log.changed.emit(runId);
        server.close();
        // Dispatches in flight finish as usual within the grace period; their clients get the answer.
        if (inflight.size > 0) logger.info({ inFlight: inflight.size, graceMs: options.graceMs }, 'gateway closing: answering the requests in flight');
        await boundedBy(options.graceMs, Promise.allSettled([...inflight]));
        await dispatch?.close();
        await rq.close();
        await boundedBy(CLOSE_WAIT_MS, Promise.allSettled([...inflight]));
        server.closeAllConnections();
        await redis.quit().catch(() => redis.disconnect());
        logger.info('gateway closed');
      })();
      return closed;
    },
  };
}

async function boundedBy(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

