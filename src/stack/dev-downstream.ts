import type { AddressInfo } from 'node:net';
import {
  OUTBOX_TARGETS,
  targetSigningSecrets,
  type OutboxTarget,
  type SigningSecrets,
} from '../domain/outbox';
import { createSignatureVerifier } from '../lib/webhook-signature';
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
 * event goes all the way to `delivered`. It behaves as a well-kept downstream does: it verifies each
 * call's Standard Webhooks signature with the target's secrets (SETTLE_<TARGET>_SECRET, else
 * SETTLE_OUTBOUND_SECRET: all of them, as a receiver does while a secret rotates) and answers `401`
 * to one that does not verify or whose body's `audience` is not that target; a 2xx for each other call, the effect applied once per
 * `Idempotency-Key` (a repeat answers `duplicate`), and a log line per call that names the key by its
 * short hash only (keys carry event IDs) and says whether its signature verified. Kept in memory.
 */
/** The signed body's `audience` (docs/delivery.md, "Signed calls"), or undefined. */
function audienceOf(body: string): unknown {
  try {
    return (JSON.parse(body) as { audience?: unknown } | null)?.audience;
  } catch {
    return undefined;
  }
}

const PATHS = OUTBOX_TARGETS.map((target) => `/${target}`).join(' or ');
/** How long a stopping stand-in lets open requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 1_000;

export async function startDevDownstream(
  port: number,
  secrets: SigningSecrets,
  limits?: ListenerLimits,
): Promise<DevDownstream> {
  const applied = new Set<string>();
  const verifiers = new Map(
    OUTBOX_TARGETS.map((target) => [
      target,
      createSignatureVerifier(targetSigningSecrets(secrets, target).secrets),
    ]),
  );
  const server = createLimitedServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
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
      const verified = verifiers.get(target as OutboxTarget)!(body, request.headers);
      if (!verified.ok) {
        logger.warn(
          {
            component: 'dev-downstream',
            target,
            key: shortHash(key),
            signature: 'refused',
            reason: verified.reason,
          },
          'refused: the signature did not verify',
        );
        response.writeHead(401, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'signature_invalid' }));
        return;
      }
      // Signed, but for another receiver (a reminder's body, a call to the other target): refused.
      if (audienceOf(body) !== target) {
        logger.warn(
          {
            component: 'dev-downstream',
            target,
            key: shortHash(key),
            signature: 'verified',
            audience: 'other',
          },
          'refused: the call names another audience',
        );
        response.writeHead(401, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'audience_mismatch' }));
        return;
      }
      const status = applied.has(key) ? 'duplicate' : 'applied';
      applied.add(key);
      logger.info(
        {
          component: 'dev-downstream',
          target,
          key: shortHash(key),
          status,
          signature: 'verified',
          bytes: body.length,
        },
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
    async close() {
      const closing = new Promise<void>((resolve) => server.close(() => resolve()));
      // A delivery still open (a worker that outlasted its drain) would hold close() open: cut it.
      const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
      await closing;
      clearTimeout(cut);
    },
  };
}
