import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { queueKeys } from '../lease/index.js';
import { childLogger, createLogger } from '../platform/logger.js';
import { connectProducerRedis, DEFAULT_MAX_TASK_BYTES, MAX_PRODUCER_BYTES, queueDispatch, RolloutQueue } from '../producer/index.js';
import { handleDispatch } from './dispatch-route.js';
import { compileGatewayOptions, type GatewayOptions } from './gateway-options.js';
import { BodyTooLargeError, hasBearer, readBody, sendError } from './http-io.js';
import { RunLog } from './run-log.js';
import type { RunPump } from './run-pump.js';
import { acknowledgeRoute, cancelRunRoute, getRun, postRun, streamResults, type RunsDeps } from './runs-routes.js';

/** A running gateway. */
export interface Gateway {
  /** Where it answers, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly port: number;
  /**
   * Stops it: new requests get 503, dispatches in flight are answered 503 (their leases keep
   * running: a client's retry to the restarted gateway attaches to them), result streams end,
   * then connections close. Idempotent.
   */
  close(): Promise<void>;
}

/** How long close() waits for in-flight requests to be answered, ms. */
const CLOSE_WAIT_MS = 5000;

const RUN_PATH = /^\/runs\/([A-Za-z0-9_-]{1,200})(\/results|\/ack|\/cancel)?$/;

/**
 * Serves the harness' `POST /dispatch` wire and the runs API over one long-lived producer
 * (DESIGN.md "Any-language edge"). Routes: `POST /dispatch`, `POST /runs`, `GET /runs/ID`,
 * `GET /runs/ID/results?after=N`, `POST /runs/ID/cancel`; anything else is 404. Every request
 * needs `Authorization: Bearer <token>` (401 without) unless started with `noAuth` on loopback.
 * Bodies over `maxBodyBytes` get 413.
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
  const dispatch = options.dispatch ? queueDispatch({ dispatch: options.dispatch, producer: rq, ...(options.keepAnswerMs !== undefined ? { keepAnswerMs: options.keepAnswerMs } : {}), ...(options.goldKeys !== undefined ? { goldKeys: options.goldKeys } : {}) }) : undefined;
  const routes = `${dispatch ? 'POST /dispatch, ' : ''}POST /runs, GET /runs/ID, GET /runs/ID/results?after=N, POST /runs/ID/ack, POST /runs/ID/cancel`;
  const log = new RunLog(redis, queueKeys(rq.options.prefix, options.queue));
  const pumps = new Map<string, RunPump>();
  let closing = false;
  const deps: RunsDeps = { rq, log, logger, pumps, closing: () => closing };
  const inflight = new Set<Promise<void>>();

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (closing) return sendError(res, 503, 'GatewayClosing', 'the gateway is shutting down; retry against its replacement', {}, { 'retry-after': '1' });
    if (options.authToken !== undefined && !hasBearer(req, options.authToken)) {
      res.setHeader('www-authenticate', 'Bearer');
      return sendError(res, 401, 'Unauthorized', 'missing or wrong bearer token; send "Authorization: Bearer <token>" with the token the gateway was started with');
    }
    const url = new URL(req.url ?? '/', 'http://gateway');
    const run = RUN_PATH.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/dispatch') {
      if (!dispatch) return sendError(res, 404, 'NoDispatch', `this gateway was started without a Dispatch, so it serves the runs API only (${routes}); start it with --dispatch module:export (startGateway's dispatch) to serve POST /dispatch`);
      return handleDispatch(req, res, await readBody(req, options.maxBodyBytes), dispatch, logger, () => closing);
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
    const handled = route(req, res).catch((err: unknown) => {
      if (err instanceof BodyTooLargeError) return sendError(res, 413, 'BodyTooLarge', err.message, {}, { connection: 'close' });
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
  logger.info({ url, auth: options.authToken !== undefined, maxBodyBytes: options.maxBodyBytes, dispatch: options.dispatch?.$ref ?? null }, 'gateway listening');
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

