import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_HOST } from '../config';
import { METRICS_CONTENT_TYPE, renderMetrics } from './settle-metrics';

/**
 * `settle worker`'s endpoint: GET /metrics (settle's and the Temporal SDK's) and GET /healthz. The
 * figures read from PostgreSQL are the gateway's to export, not a worker's (see settle-metrics.ts).
 */
export async function startMetricsServer(options: {
  port: number;
  /** The interface (HOST); unset: DEFAULT_HOST, this machine only. */
  host?: string;
}): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/metrics') {
      renderMetrics().then(
        (text) => response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(text),
        () => response.writeHead(500).end(),
      );
    } else if (request.method === 'GET' && request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"status":"rejected","error":"not_found","message":"no such route"}');
    }
  });
  const host = options.host ?? DEFAULT_HOST;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
