import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import { paymentWorkflowId } from '../src/domain/ids';
import { signWebhook } from '../src/lib/webhook-signature';
import {
  newSecret,
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  type TestStack,
} from '../testkit/harness';

let stack: TestStack;
const rotatedOutSecret = newSecret();
const unknownSecret = newSecret();
before(async () => {
  // No worker: nothing here may start a workflow, and an accepted one need not run.
  stack = await startTestStack({ worker: false, otherSecrets: [rotatedOutSecret] });
});
after(async () => {
  await stack.close();
});

type BadCase = {
  name: string;
  status: number;
  error: string;
  /** The field path the message must name, for schema violations. */
  path?: string;
  send: (id: string) => Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>;
};

const valid = (id: string) => paymentEvent({ id });
const withData = (id: string, data: Record<string, unknown>) => ({
  ...valid(id),
  data: { ...valid(id).data, ...data },
});
const without = (object: Record<string, unknown>, key: string) =>
  Object.fromEntries(Object.entries(object).filter(([k]) => k !== key));
const post = (body: unknown, options?: Parameters<typeof postWebhook>[2]) =>
  postWebhook(stack, body, options);
const rawPost = async (init: RequestInit) => {
  const response = await fetch(`${stack.gatewayUrl}/webhooks/payments`, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
};

const cases: BadCase[] = [
  {
    name: 'malformed JSON',
    status: 400,
    error: 'invalid_event',
    send: (id) => post(undefined, { rawBody: `{"id":"${id}",` }),
  },
  { name: 'empty body', status: 400, error: 'invalid_event', send: () => post(undefined, { rawBody: '' }) },
  { name: 'a JSON array', status: 400, error: 'invalid_event', send: (id) => post([valid(id)]) },
  { name: 'JSON null', status: 400, error: 'invalid_event', send: () => post(null) },
  {
    name: 'missing id',
    status: 400,
    error: 'invalid_event',
    path: 'id',
    send: (id) => post(without(valid(id), 'id')),
  },
  {
    name: 'empty id',
    status: 400,
    error: 'invalid_event',
    path: 'id',
    send: (id) => post({ ...valid(id), id: '' }),
  },
  {
    name: 'id with a space',
    status: 400,
    error: 'invalid_event',
    path: 'id',
    send: (id) => post({ ...valid(id), id: `${id} x` }),
  },
  {
    name: 'id with a slash',
    status: 400,
    error: 'invalid_event',
    path: 'id',
    send: (id) => post({ ...valid(id), id: `${id}/../x` }),
  },
  {
    name: 'id of 201 characters',
    status: 400,
    error: 'invalid_event',
    path: 'id',
    send: (id) => post({ ...valid(id), id: id.padEnd(201, 'x') }),
  },
  {
    name: 'numeric id',
    status: 400,
    error: 'invalid_event',
    path: 'id',
    send: (id) => post({ ...valid(id), id: 42 }),
  },
  {
    name: 'missing type',
    status: 400,
    error: 'invalid_event',
    path: 'type',
    send: (id) => post(without(valid(id), 'type')),
  },
  {
    name: 'missing created_at',
    status: 400,
    error: 'invalid_event',
    path: 'created_at',
    send: (id) => post(without(valid(id), 'created_at')),
  },
  {
    name: 'created_at not a timestamp',
    status: 400,
    error: 'invalid_event',
    path: 'created_at',
    send: (id) => post({ ...valid(id), created_at: 'yesterday' }),
  },
  {
    name: 'missing data',
    status: 400,
    error: 'invalid_event',
    path: 'data',
    send: (id) => post(without(valid(id), 'data')),
  },
  {
    name: 'missing shipment_id',
    status: 400,
    error: 'invalid_event',
    path: 'data.shipment_id',
    send: (id) => post({ ...valid(id), data: without(valid(id).data, 'shipment_id') }),
  },
  {
    name: 'empty payment_id',
    status: 400,
    error: 'invalid_event',
    path: 'data.payment_id',
    send: (id) => post(withData(id, { payment_id: '' })),
  },
  {
    name: 'negative amount',
    status: 400,
    error: 'invalid_event',
    path: 'data.amount',
    send: (id) => post(withData(id, { amount: -1 })),
  },
  {
    name: 'fractional amount',
    status: 400,
    error: 'invalid_event',
    path: 'data.amount',
    send: (id) => post(withData(id, { amount: 12.5 })),
  },
  {
    name: 'amount as a string',
    status: 400,
    error: 'invalid_event',
    path: 'data.amount',
    send: (id) => post(withData(id, { amount: '12500' })),
  },
  {
    name: 'lower-case currency',
    status: 400,
    error: 'invalid_event',
    path: 'data.currency',
    send: (id) => post(withData(id, { currency: 'eur' })),
  },
  {
    name: 'four-letter currency',
    status: 400,
    error: 'invalid_event',
    path: 'data.currency',
    send: (id) => post(withData(id, { currency: 'EURO' })),
  },
  {
    name: 'a currency code ISO 4217 does not list',
    status: 400,
    error: 'invalid_event',
    path: 'data.currency',
    send: (id) => post(withData(id, { currency: 'ABC' })),
  },
  {
    name: 'signed with an unknown secret',
    status: 401,
    error: 'invalid_signature',
    send: (id) => post(valid(id), { secret: unknownSecret }),
  },
  {
    name: 'no signature headers',
    status: 401,
    error: 'invalid_signature',
    send: (id) =>
      rawPost({
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(valid(id)),
      }),
  },
  {
    name: 'timestamp 6 minutes old',
    status: 401,
    error: 'invalid_signature',
    send: (id) => post(valid(id), { at: new Date(Date.now() - 6 * 60_000) }),
  },
  {
    name: 'timestamp 6 minutes ahead',
    status: 401,
    error: 'invalid_signature',
    send: (id) => post(valid(id), { at: new Date(Date.now() + 6 * 60_000) }),
  },
  {
    name: 'timestamp header not a number',
    status: 401,
    error: 'invalid_signature',
    send: (id) => post(valid(id), { headers: { 'webhook-timestamp': 'now' } }),
  },
  {
    name: 'signature over another body (tampered amount)',
    status: 401,
    error: 'invalid_signature',
    send: async (id) => {
      const original = JSON.stringify(valid(id));
      const headers = signWebhook(stack.secret, 'msg_tamper', original);
      return rawPost({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(withData(id, { amount: 1 })),
      });
    },
  },
  {
    name: 'malformed signature header',
    status: 401,
    error: 'invalid_signature',
    send: (id) => post(valid(id), { headers: { 'webhook-signature': 'v1,not base64!!' } }),
  },
  {
    name: 'only a non-v1 signature',
    status: 401,
    error: 'invalid_signature',
    send: (id) => post(valid(id), { headers: { 'webhook-signature': 'v2,AAAA' } }),
  },
  { name: 'GET', status: 405, error: 'method_not_allowed', send: (id) => post(valid(id), { method: 'GET' }) },
  { name: 'PUT', status: 405, error: 'method_not_allowed', send: (id) => post(valid(id), { method: 'PUT' }) },
  {
    name: 'text/plain content type',
    status: 415,
    error: 'unsupported_media_type',
    send: (id) => post(valid(id), { headers: { 'content-type': 'text/plain' } }),
  },
  {
    name: 'form content type',
    status: 415,
    error: 'unsupported_media_type',
    send: (id) => post(valid(id), { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
  },
  {
    name: 'body over 256 KiB',
    status: 413,
    error: 'payload_too_large',
    send: (id) => post({ ...valid(id), padding: 'x'.repeat(260 * 1024) }),
  },
];

describe('refused requests', () => {
  const sentIds: string[] = [];

  for (const badCase of cases) {
    test(`${badCase.name}: ${badCase.status} ${badCase.error}`, async () => {
      const id = uniqueId('bad');
      sentIds.push(id);
      const response = await badCase.send(id);
      assert.equal(response.status, badCase.status, JSON.stringify(response.body));
      assert.equal(response.body.status, 'rejected');
      assert.equal(response.body.error, badCase.error);
      assert.equal(typeof response.body.message, 'string');
      if (badCase.path) {
        const issues = response.body.issues as { path: string }[];
        assert.ok(
          issues.some((issue) => issue.path === badCase.path),
          `issues: ${JSON.stringify(issues)}`,
        );
        assert.match(String(response.body.message), new RegExp(badCase.path.replace('.', '\\.')));
      }
      if (badCase.status === 405) assert.equal(response.headers.get('allow'), 'POST');
    });
  }

  test(`all ${cases.length} refusals wrote no row and started no workflow`, async () => {
    assert.ok(cases.length >= 25);
    for (const table of ['events', 'claims', 'ledger_entries', 'outbox']) {
      const { rows } = await stack.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      assert.equal(rows[0]!.n, 0, `${table} has rows`);
    }
    for (const id of sentIds) {
      await assert.rejects(
        stack.client.workflow.getHandle(paymentWorkflowId(id)).describe(),
        WorkflowNotFoundError,
      );
    }
  });
});

describe('accepted edge cases', () => {
  test('an unhandled type is acknowledged as ignored and starts nothing', async () => {
    const id = uniqueId('evt');
    const response = await post({ ...valid(id), type: 'payment.disputed' });
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { status: 'ignored', event_id: id });
    await assert.rejects(
      stack.client.workflow.getHandle(paymentWorkflowId(id)).describe(),
      WorkflowNotFoundError,
    );
    const { rows } = await stack.pool.query('SELECT 1 FROM events WHERE event_id = $1', [id]);
    assert.equal(rows.length, 0);
  });

  test('unknown extra fields are kept, not refused', async () => {
    const id = uniqueId('pay');
    const response = await post({ ...valid(id), livemode: false, data: { ...valid(id).data, note: 'kept' } });
    assert.equal(response.status, 202);
    const { rows } = await stack.pool.query<{ payload: { livemode: boolean; data: { note: string } } }>(
      'SELECT payload FROM events WHERE event_id = $1',
      [id],
    );
    assert.equal(rows[0]?.payload.livemode, false);
    assert.equal(rows[0]?.payload.data.note, 'kept');
  });

  test('during a secret rotation an event signed with either secret is accepted', async () => {
    const id = uniqueId('pay');
    const response = await post(valid(id), { secret: rotatedOutSecret });
    assert.equal(response.status, 202);
  });

  test('an event carrying several signatures is accepted when one of them matches', async () => {
    const id = uniqueId('pay');
    const body = JSON.stringify(valid(id));
    const good = signWebhook(stack.secret, 'msg_multi', body);
    const bad = signWebhook(
      unknownSecret,
      'msg_multi',
      body,
      new Date(Number(good['webhook-timestamp']) * 1000),
    );
    const response = await rawPost({
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        ...good,
        'webhook-signature': `${bad['webhook-signature']} ${good['webhook-signature']}`,
      },
      body,
    });
    assert.equal(response.status, 202);
  });

  test('GET /events/<id> needs the bearer token and answers 404 not_found for an unknown event', async () => {
    const unauthorized = await fetch(`${stack.gatewayUrl}/events/pay_unknown`);
    assert.equal(unauthorized.status, 401);
    const wrong = await fetch(`${stack.gatewayUrl}/events/pay_unknown`, {
      headers: { authorization: 'Bearer nope' },
    });
    assert.equal(wrong.status, 401);
    const missing = await fetch(`${stack.gatewayUrl}/events/pay_unknown`, {
      headers: { authorization: `Bearer ${stack.apiToken}` },
    });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: string }).error, 'not_found');
  });

  test('/healthz answers while the process is up and /readyz reports both dependencies', async () => {
    assert.equal((await fetch(`${stack.gatewayUrl}/healthz`)).status, 200);
    const ready = await fetch(`${stack.gatewayUrl}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', postgres: true, temporal: true });
  });
});
