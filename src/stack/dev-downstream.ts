import type { AddressInfo } from 'node:net';
import { OUTBOX_TARGETS } from '../domain/outbox';
import { shortHash } from '../lib/hash';
import { createLimitedServer, type ListenerLimits } from '../lib/listener-limits';
import { logger } from '../lib/logger';

export type DevDownstream = {
  /** Base URL; each delivery target of src/domain/outbox.ts is `<url>/<target>` (`/carrier`, `/erp`). */
  url: string;
  close(): Promise<void>;
};

/**
 * `npm start`'s stand-in for the delivery targets (carrier, ERP) whose URL is not configured, so an example
 * event goes all the way to `delivered`. It behaves as a well-kept downstream does: a 2xx for each
 * call, the effect applied once per `Idempotency-Key` (a repeat answers `duplicate`), and a log line
 * per call that names the key by its short hash only (keys carry event IDs). Kept in memory.
 */
const PATHS = OUTBOX_TARGETS.map((target) => `/${target}`).join(' or ');

export async function startDevDownstream(port: number, limits?: ListenerLimits): Promise<DevDownstream> {
  const applied = new Set<string>();
  const server = createLimitedServer((request, response) => {
    let size = 0;
    request.on('data', (chunk: Buffer) => (size += chunk.length));
    request.on('end', () => {
      const key = request.headers['idempotency-key'];
      const target = request.url?.split('?')[0]?.replace(/^\//, '') ?? '';
      if (
        request.method !== 'POST' ||
        typeof key !== 'string' ||
        !(OUTBOX_TARGETS as string[]).includes(target)
      ) {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: `expected POST ${PATHS} with an Idempotency-Key` }));
        return;
      }
      const status = applied.has(key) ? 'duplicate' : 'applied';
      applied.add(key);
      logger.info(
        { component: 'dev-downstream', target, key: shortHash(key), status, bytes: size },
        'received',
      );
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ status }));
    });
  }, limits);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
