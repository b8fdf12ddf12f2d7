import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_HOST } from '../config';
import { createLimitedServer, type ListenerLimits } from '../lib/listener-limits';
import { METRICS_CONTENT_TYPE, renderMetrics } from './settle-metrics';

/** What an operator listener answers on /readyz: its status code and JSON body. */
export type ReadinessAnswer = { ready: boolean; body: unknown };

const NOT_FOUND = '{"status":"rejected","error":"not_found","message":"no such route"}';

/**
 * An operator listener: GET /metrics and GET /healthz, and GET /readyz when `readiness` is given.
 * `settle worker`'s (the process's own figures: those read from PostgreSQL are the gateway's to export,
 * see settle-metrics.ts) and the gateway's on SETTLE_GATEWAY_METRICS_PORT (`render` adds its gauges,
 * `readiness` says why it is not ready). No token: it belongs on a port only operators reach. Its
 * connections are held to `limits` as every listener's (lib/listener-limits.ts).
 */
export async function startMetricsServer(options: {
  port: number;
  /** The interface (HOST); unset: DEFAULT_HOST, this machine only. */
  host?: string;
  limits?: ListenerLimits;
  /** The Prometheus text; unset: this process's registry. */
  render?: () => Promise<string>;
  readiness?: () => Promise<ReadinessAnswer>;
}): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const render = options.render ?? (() => renderMetrics());
  const { readiness } = options;
  const server = createLimitedServer((request, response) => {
    // No route reads a body: one sent anyway is read away by Node, within the request timeout.
    const path = request.url?.split('?')[0];
    if (request.method === 'GET' && path === '/metrics') {
      render().then(
        (text) => response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(text),
        () => response.writeHead(500).end(),
      );
    } else if (request.method === 'GET' && path === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else if (request.method === 'GET' && path === '/readyz' && readiness) {
      readiness().then(
        ({ ready, body }) =>
          response
            .writeHead(ready ? 200 : 503, { 'content-type': 'application/json' })
            .end(JSON.stringify(body)),
        () => response.writeHead(500).end(),
      );
    } else {
      response.writeHead(404, { 'content-type': 'application/json' }).end(NOT_FOUND);
    }
  }, options.limits);
  const host = options.host ?? DEFAULT_HOST;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A scraper's kept-alive connection would hold close() open.
        server.closeIdleConnections();
      }),
  };
}
