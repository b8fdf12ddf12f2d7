import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../lib/logger';
import { DEFAULT_DELIVERY_STUCK_AFTER_MS } from '../config';
import { readinessCheck } from '../app/readiness';
import { gatewayMetrics } from '../app/stats';
import type { Readiness } from '../domain/api-contract';
import {
  METRICS_CONTENT_TYPE,
  webhookAckSeconds,
  webhooksTotal,
  type WebhookOutcome,
} from '../metrics/settle-metrics';
import { writeDeliveryStuckAfter } from '../db/settings';
import { openApiDocument } from './openapi';
import { PROVIDER_NAMES } from '../providers/registry';
import type { Services } from '../app/services';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `error` code of a refusal, set by `reject` (replies.ts) where the refusal is made. */
    refusalCode?: string;
  }
}

/** The webhook routes counted by settle_webhooks_total and settle_webhook_ack_seconds (label `route`). */
const WEBHOOK_ROUTES: ReadonlySet<string> = new Set([
  '/webhooks/payments',
  ...PROVIDER_NAMES.map((name) => `/webhooks/${name}`),
]);

/**
 * What the gateway tells operators: its Prometheus text and its readiness in full. Both read
 * PostgreSQL through `pool` (the gateway role's own small operator pool, so a flood of scrapes never
 * takes a connection a webhook needs) and are cached (app/stats.ts, app/readiness.ts): a flood costs
 * a few statements per interval. Served on PORT to a bearer of SETTLE_API_TOKEN, and without a token
 * on the operator listener (SETTLE_GATEWAY_METRICS_PORT, gateway/run.ts).
 */
export type OperatorViews = {
  metrics(): Promise<string>;
  /** /readyz's answer: up or down per dependency, and why Temporal refuses settle, if it does. */
  readiness(): Promise<{ ready: boolean; body: Readiness }>;
};

export function operatorViews(
  deps: Pick<Services, 'pool' | 'client'> & { deliveryStuckAfterMs?: number },
): OperatorViews {
  const metrics = gatewayMetrics({
    pool: deps.pool,
    client: deps.client,
    deliveryStuckAfterMs: deps.deliveryStuckAfterMs ?? DEFAULT_DELIVERY_STUCK_AFTER_MS,
  });
  const check = readinessCheck(deps);
  return {
    metrics,
    async readiness() {
      const { postgres, temporal, problem } = await check();
      const ready = postgres && temporal;
      const body = {
        status: ready ? 'ready' : 'not_ready',
        postgres,
        temporal,
        // Unreachable needs no words; a missing namespace or refused credentials are named.
        ...(problem && problem.code !== 'unreachable'
          ? { temporal_error: problem.code, message: problem.message }
          : {}),
      } satisfies Readiness;
      return { ready, body };
    },
  };
}

/**
 * `GET /metrics` (bearer token), `GET /openapi.json`, and the counting of every webhook by outcome.
 * The gateway is the one role that exports the gauges read from PostgreSQL (backlog, open exceptions).
 */
export function registerOperatorRoutes(
  app: FastifyInstance,
  deps: Pick<Services, 'pool'> & { logger: Logger; deliveryStuckAfterMs?: number; operator: OperatorViews },
) {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? '';
    if (!WEBHOOK_ROUTES.has(route)) return;
    const outcome = webhookOutcome(reply.statusCode, request.ingestOutcome);
    const error = reply.statusCode >= 400 ? (request.refusalCode ?? '') : '';
    webhooksTotal.inc({ route, outcome, error });
    webhookAckSeconds.observe({ route, outcome }, reply.elapsedTime / 1000);
  });

  // The gateway sets the deployment's stuck threshold for every surface (see src/db/settings.ts). In
  // the background, retried until PostgreSQL takes it: a gateway whose database is down still starts
  // and says so on /readyz, rather than failing to start.
  const stuckAfterMs = deps.deliveryStuckAfterMs;
  if (stuckAfterMs !== undefined) {
    const closing = new AbortController();
    app.addHook('onClose', async () => closing.abort());
    app.addHook('onReady', async () => {
      void publishDeliveryStuckAfter(deps.logger, deps.pool, stuckAfterMs, closing.signal);
    });
  }

  app.get('/metrics', { config: { bearerToken: true } }, async (_request, reply) =>
    reply.header('content-type', METRICS_CONTENT_TYPE).send(await deps.operator.metrics()),
  );

  app.get('/openapi.json', async () => openApiDocument);
}

function webhookOutcome(statusCode: number, ingestOutcome: string | undefined): WebhookOutcome {
  if (statusCode === 503) return 'unavailable';
  if (statusCode === 409) return 'conflict';
  if (statusCode >= 400) return 'rejected';
  // An Adyen batch reports `status:count,…`: one outcome when every item had the same, else accepted.
  const statuses = new Set((ingestOutcome ?? '').split(',').map((part) => part.split(':')[0]));
  const only = statuses.size === 1 ? [...statuses][0] : undefined;
  if (only === 'duplicate' || only === 'ignored' || only === 'unmatched') return only;
  return 'accepted';
}

async function publishDeliveryStuckAfter(
  logger: Logger,
  pool: Services['pool'],
  stuckAfterMs: number,
  closing: AbortSignal,
): Promise<void> {
  for (let attempt = 1; !closing.aborted; attempt++) {
    try {
      const replaced = await writeDeliveryStuckAfter(pool, stuckAfterMs, `gateway pid ${process.pid}`);
      if (replaced !== undefined) {
        logger.warn(
          { previous_ms: replaced, now_ms: stuckAfterMs },
          'SETTLE_DELIVERY_STUCK_AFTER differs from the one the deployment had (another gateway ' +
            "started with another value): this gateway's value now applies to every surface " +
            '(settle exceptions, settle stats, settle_open_exceptions)',
        );
      }
      return;
    } catch (error) {
      if (closing.aborted) return;
      if (attempt === 1) {
        logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "could not record the deployment's stuck threshold yet; retrying every 2 s",
        );
      }
      await delay(2_000, undefined, { signal: closing }).catch(() => {});
    }
  }
}
