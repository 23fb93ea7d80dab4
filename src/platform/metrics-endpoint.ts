import http from 'node:http';
import type { Registry } from 'prom-client';

/** What `GET /healthz` answers: 200 `ok: <reason>` or 503 `unhealthy: <reason>`. */
export type HealthCheck = () => { ok: boolean; reason: string };

/** Options of {@link serveMetrics}. */
export interface MetricsEndpointOptions {
  /** TCP port; 0 picks a free one (see `port` of the result). */
  readonly port: number;
  /**
   * Listen address. `127.0.0.1` (the CLI default) keeps the endpoint on this machine; a probe
   * from outside (a Kubernetes kubelet, a Prometheus server) needs `0.0.0.0` or the pod IP.
   */
  readonly host: string;
  /** Liveness answer of `GET /healthz`; without it `/healthz` is 200 `ok` while the process serves. */
  readonly health?: HealthCheck;
}

/** A running metrics endpoint. */
export interface MetricsEndpoint {
  readonly server: http.Server;
  /** The bound port (the kernel's pick when `port` was 0). */
  readonly port: number;
  /** Stops listening and drops open connections; idempotent. */
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format from `registry`) and `GET /healthz` over plain
 * HTTP. A scrape that fails (a collect callback threw) answers 500 with the error's message,
 * so Prometheus marks the target down instead of seeing a truncated scrape.
 * @throws the listen error (`EADDRINUSE`, `EACCES`, with `syscall: 'listen'`) when the port cannot be bound.
 */
export async function serveMetrics(registry: Registry, options: MetricsEndpointOptions): Promise<MetricsEndpoint> {
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
    } else if (url === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`scrape failed: ${(err as Error).message}\n`),
      );
    } else if (url === '/healthz') {
      const state = options.health?.() ?? { ok: true, reason: 'serving' };
      res.writeHead(state.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(`${state.ok ? 'ok' : 'unhealthy'}: ${state.reason}\n`);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  let closed: Promise<void> | undefined;
  return {
    server,
    port: typeof address === 'object' && address ? address.port : options.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
