import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import type { ReceivedRequest } from '../../testkit/receiver';

export type ApiResult = { status: number; body: Record<string, unknown> };

/** Calls the reminders API with the bearer token (unless `token: null`). */
export async function remindersApi(
  gatewayUrl: string,
  token: string | null,
  method: 'POST' | 'GET' | 'DELETE',
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<ApiResult> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gatewayUrl}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

/** Asserts a reminder delivery carries the delivery ID as webhook-id and key, and a valid signature. */
export function assertSignedDelivery(request: ReceivedRequest, deliveryId: string, secret: string): void {
  assert.equal(request.headers['webhook-id'], deliveryId);
  assert.equal(request.headers['idempotency-key'], deliveryId);
  const flat = Object.fromEntries(
    Object.entries(request.headers as IncomingHttpHeaders).map(([name, value]) => [name, String(value)]),
  );
  assert.doesNotThrow(() => new Webhook(secret).verify(request.body, flat), 'the signature must verify');
  assert.equal(request.json.delivery_id, deliveryId);
}
