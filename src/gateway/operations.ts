import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { DEFAULT_DELIVERY_STUCK_AFTER_MS } from '../config';
import { gatewayMetrics } from '../app/stats';
import {
  METRICS_CONTENT_TYPE,
  webhookAckSeconds,
  webhooksTotal,
  type WebhookOutcome,
} from '../metrics/settle-metrics';
import { openApiDocument } from './openapi';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `error` code of a refusal, read from the reply body; counted, never logged with an ID. */
    refusalCode?: string;
  }
}

const WEBHOOK_ROUTE = '/webhooks/payments';

/**
 * `GET /metrics`, `GET /openapi.json`, and the counting of every webhook by outcome. The gateway is the
 * one role that exports the gauges read from PostgreSQL (backlog, open exceptions).
 */
export function registerOperatorRoutes(
  app: FastifyInstance,
  deps: { pool: pg.Pool; client: Client; deliveryStuckAfterMs?: number },
) {
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (
      reply.statusCode >= 400 &&
      typeof payload === 'string' &&
      request.routeOptions.url === WEBHOOK_ROUTE
    ) {
      try {
        const error = (JSON.parse(payload) as { error?: unknown }).error;
        if (typeof error === 'string') request.refusalCode = error;
      } catch {
        // Not JSON: counted without a code.
      }
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url !== WEBHOOK_ROUTE) return;
    const outcome = webhookOutcome(reply.statusCode, request.ingestOutcome);
    webhooksTotal.inc({ outcome, error: outcome === 'accepted' ? '' : (request.refusalCode ?? '') });
    webhookAckSeconds.observe({ outcome }, reply.elapsedTime / 1000);
  });

  app.get('/metrics', async (_request, reply) =>
    reply.header('content-type', METRICS_CONTENT_TYPE).send(
      await gatewayMetrics({
        db: deps.pool,
        client: deps.client,
        deliveryStuckAfterMs: deps.deliveryStuckAfterMs ?? DEFAULT_DELIVERY_STUCK_AFTER_MS,
      }),
    ),
  );

  app.get('/openapi.json', async () => openApiDocument);
}

function webhookOutcome(statusCode: number, ingestOutcome: string | undefined): WebhookOutcome {
  if (statusCode === 503) return 'unavailable';
  if (statusCode === 409) return 'conflict';
  if (statusCode >= 400) return 'rejected';
  if (ingestOutcome === 'duplicate' || ingestOutcome === 'ignored') return ingestOutcome;
  return 'accepted';
}
