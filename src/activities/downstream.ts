import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import type { Config } from '../config';
import { ErrorCode } from '../domain/errors';
import type { DeliveryTarget, SigningSecrets, TargetConfigKey } from '../domain/outbox';
import type { TargetLimitsConfig } from '../domain/target-limits';
import { signWebhook } from '../lib/webhook-signature';
import { HttpRequestError, type HttpClient, type HttpFailureKind, type HttpResponse } from '../lib/http';
import { retryAfterMs } from '../lib/retry-after';
import { deliveriesTotal } from '../metrics/settle-metrics';
import { untilDrained } from '../lib/shutdown';

/** What the delivery activities need from the configuration; unset targets are reported, not fatal. */
export type DownstreamConfig = Partial<Pick<Config, TargetConfigKey | 'allowPrivateTargets'>> &
  SigningSecrets &
  TargetLimitsConfig;

export type DeliveryTuning = {
  /** One call, connect to last byte. Must stay well inside the reminder lease. */
  requestTimeoutMs: number;
  /** How long a reminder attempt owns its delivery before another attempt may take over. */
  reminderLeaseMs: number;
};

export const DEFAULT_DELIVERY_TUNING: DeliveryTuning = { requestTimeoutMs: 15_000, reminderLeaseMs: 120_000 };

export type DeliveryDependencies = {
  pool: pg.Pool;
  http: HttpClient;
  config: DownstreamConfig;
  tuning: DeliveryTuning;
};

/** How one downstream call ended, before it is recorded and turned into the activity's result. */
export type CallOutcome =
  | { kind: 'delivered'; statusCode: number }
  | {
      kind: 'retry';
      code: typeof ErrorCode.DownstreamUnavailable | typeof ErrorCode.DownstreamThrottled;
      statusCode: number | null;
      /** Why there was no HTTP answer, when `statusCode` is null. */
      noAnswer?: HttpFailureKind;
      detail: string;
      /** From Retry-After: the exact wait before the next attempt. */
      delayMs?: number;
      /** settle's own wait before the next attempt when the target named none (target-gate.ts). */
      backoffMs?: number;
    }
  | {
      kind: 'permanent';
      code: typeof ErrorCode.DownstreamRejected | typeof ErrorCode.TargetRefused;
      statusCode: number | null;
      noAnswer?: HttpFailureKind;
      detail: string;
    };

/** Which HTTP answers end delivery for a kind of receiver (every other non-2xx is retried). */
export type ResponsePolicy = { isPermanent(statusCode: number): boolean };

/** settle's own downstream APIs (an `internal` target): a 4xx is a refusal that retrying cannot change. */
export const INTERNAL_API_POLICY: ResponsePolicy = {
  isPermanent: (statusCode) =>
    statusCode >= 400 && statusCode < 500 && statusCode !== 408 && statusCode !== 429,
};

/**
 * Customers' reminder endpoints: only `410 Gone` stops delivery (Standard Webhooks practice); any
 * other failure may be a misconfiguration the customer fixes, so it is retried on the backoff schedule.
 */
export const CUSTOMER_ENDPOINT_POLICY: ResponsePolicy = { isPermanent: (statusCode) => statusCode === 410 };

/**
 * How a call to a delivery target is made, from its entry in DELIVERY_TARGETS: which answers end it
 * (INTERNAL_API_POLICY for an `internal` target, else CUSTOMER_ENDPOINT_POLICY's) and whether its URL
 * may reach private addresses (`network: 'private'`, else only when SETTLE_ALLOW_PRIVATE_TARGETS).
 */
export function targetCallPolicy(
  config: Pick<DownstreamConfig, 'allowPrivateTargets'>,
  entry: Pick<DeliveryTarget, 'internal' | 'network'>,
): { policy: ResponsePolicy; allowPrivateTargets: boolean } {
  return {
    policy: entry.internal ? INTERNAL_API_POLICY : CUSTOMER_ENDPOINT_POLICY,
    allowPrivateTargets: entry.network === 'private' || (config.allowPrivateTargets ?? false),
  };
}

export type DownstreamRequest = {
  url: string;
  /** Sent as `Idempotency-Key` and as the signature's `webhook-id`: the same on every retry. */
  idempotencyKey: string;
  /** Signs the call (the first of a variable's secrets: see targetSigningSecrets). */
  signingSecret: string;
  /** Who the call is for (callAudience): the body's `audience`, so the signature covers it. */
  audience: string;
  /** The body's fields: sent as JSON with `audience` added (signedBody), and signed. */
  body: Record<string, unknown>;
  timeoutMs: number;
  allowPrivateTargets: boolean;
};

/** How often an in-flight call tells Temporal its worker is alive; a dead worker is noticed by the heartbeat timeout. */
const HEARTBEAT_EVERY_MS = 1_000;

/**
 * The JSON text of a call: its fields and, last and always, `audience`, naming the receiver the call
 * is signed for (a field of the same name in `body` cannot override it).
 */
export function signedBody(request: Pick<DownstreamRequest, 'audience' | 'body'>): string {
  return JSON.stringify({ ...request.body, audience: request.audience });
}

/**
 * The headers of every call settle makes downstream (carrier, ERP, a customer's reminder endpoint):
 * JSON, the `Idempotency-Key`, and a Standard Webhooks signature (`webhook-id` = the idempotency key,
 * `webhook-timestamp` = now, `webhook-signature` = `v1,<base64 HMAC-SHA256 of id.timestamp.body>`),
 * made fresh for each attempt so a retry is never refused as stale.
 */
export function signedCallHeaders(
  request: Pick<DownstreamRequest, 'idempotencyKey' | 'signingSecret'> & { body: string },
  at: Date = new Date(),
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'settle',
    'idempotency-key': request.idempotencyKey,
    ...signWebhook(request.signingSecret, request.idempotencyKey, request.body, at),
  };
}

/**
 * Makes one call, its body naming its audience (signedBody) and signed (signedCallHeaders), and classifies the answer. Never throws: the caller
 * records the outcome on its delivery record first, then throws `failureFor(outcome)` so Temporal
 * retries (or not).
 */
export async function callDownstream(
  http: HttpClient,
  request: DownstreamRequest,
  policy: ResponsePolicy,
): Promise<CallOutcome> {
  const context = Context.current();
  // A local attempt cannot heartbeat: its worker's workflow task stands for it.
  const heartbeat = context.info.isLocal
    ? undefined
    : setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  const body = signedBody(request);
  let response: HttpResponse;
  try {
    response = await http.post(request.url, {
      headers: signedCallHeaders({ ...request, body }),
      body,
      timeoutMs: request.timeoutMs,
      allowPrivateTargets: request.allowPrivateTargets,
      signal: untilDrained(context.cancellationSignal),
    });
  } catch (error) {
    if (error instanceof HttpRequestError && error.kind === 'target_refused') {
      return {
        kind: 'permanent',
        code: ErrorCode.TargetRefused,
        statusCode: null,
        noAnswer: 'target_refused',
        detail: error.message,
      };
    }
    const detail = error instanceof HttpRequestError ? error.message : 'request failed';
    const noAnswer = error instanceof HttpRequestError ? error.kind : 'network';
    return { kind: 'retry', code: ErrorCode.DownstreamUnavailable, statusCode: null, noAnswer, detail };
  } finally {
    clearInterval(heartbeat);
  }
  return classifyResponse(response, policy);
}

function classifyResponse(response: HttpResponse, policy: ResponsePolicy): CallOutcome {
  const { status } = response;
  if (status >= 200 && status < 300) return { kind: 'delivered', statusCode: status };
  const detail = `HTTP ${status}${excerpt(response.body)}`;
  if (status === 429 || status === 503) {
    const delayMs = retryAfterMs(response.headers['retry-after']);
    if (delayMs !== undefined) {
      return {
        kind: 'retry',
        code: ErrorCode.DownstreamThrottled,
        statusCode: status,
        detail: `${detail} (Retry-After ${Math.ceil(delayMs / 1000)} s)`,
        delayMs,
      };
    }
  }
  if (policy.isPermanent(status)) {
    return { kind: 'permanent', code: ErrorCode.DownstreamRejected, statusCode: status, detail };
  }
  return { kind: 'retry', code: ErrorCode.DownstreamUnavailable, statusCode: status, detail };
}

/**
 * Counts one delivery attempt in `settle_deliveries_total{target,action,outcome,code}`: outcome
 * `delivered`, `retry`, `permanent` or `not_configured`; code the HTTP status, or why there was none
 * (`timeout`, `network`, `target_refused`, `aborted`), or `none` for a target with no URL.
 */
export function countDelivery(target: string, action: string, outcome: CallOutcome | 'not_configured'): void {
  if (outcome === 'not_configured') {
    deliveriesTotal.inc({ target, action, outcome, code: 'none' });
    return;
  }
  const code =
    outcome.statusCode === null
      ? outcome.kind === 'delivered'
        ? 'none'
        : (outcome.noAnswer ?? 'network')
      : String(outcome.statusCode);
  deliveriesTotal.inc({ target, action, outcome: outcome.kind, code });
}

/** What a throttled delivery's failure carries in `details[0]`. */
export type RetryAfterDetails = { retryAfterMs: number };

/**
 * The failure an activity throws for an outcome that did not deliver. A Retry-After delay becomes
 * `nextRetryDelay`, which replaces the retry policy's backoff for that one retry (so it is not capped
 * by `maximumInterval`), and `details[0].retryAfterMs` (see RetryAfterDetails); permanent outcomes are
 * non-retryable.
 */
export function failureFor(outcome: Exclude<CallOutcome, { kind: 'delivered' }>): ApplicationFailure {
  // The target's own Retry-After, else the wait settle chose (target-gate.ts).
  const delayMs = outcome.kind === 'retry' ? (outcome.delayMs ?? outcome.backoffMs) : undefined;
  return ApplicationFailure.create({
    // The response body stays on the delivery record: failure messages end up in logs.
    message:
      outcome.statusCode === null
        ? outcome.detail
        : `HTTP ${outcome.statusCode}${outcome.kind === 'retry' && outcome.delayMs !== undefined ? `, retry after ${outcome.delayMs} ms` : ''}`,
    type: outcome.code,
    nonRetryable: outcome.kind === 'permanent',
    ...(delayMs !== undefined
      ? // The details carry the delay to the workflow too, which honours it after a local attempt.
        { nextRetryDelay: delayMs, details: [{ retryAfterMs: delayMs }] }
      : {}),
  });
}

/** The start of a response body, on one line: enough for an operator, never the whole thing. */
function excerpt(body: string): string {
  const text = body.replace(/\s+/g, ' ').trim().slice(0, 200);
  return text ? `: ${text}` : '';
}
