import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkflowNotFoundError } from '@temporalio/client';
import { paymentWorkflowId } from '../src/domain/ids';
import { signWebhook } from '../src/lib/webhook-signature';
import { newSecret, paymentEvent, postWebhook, uniqueId } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';

const rotatedOutSecret = newSecret();
const unknownSecret = newSecret();
// No worker: nothing here may start a workflow, and an accepted one need not run.
const stack = useTestStack({ worker: false, otherSecrets: [rotatedOutSecret] });

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

/** A body the schema refuses: 400 invalid_event, naming the field at `path`. */
const invalidEvent = (name: string, path: string, send: BadCase['send']): BadCase => ({
  name,
  status: 400,
  error: 'invalid_event',
  path,
  send,
});
/** A request whose signature the gateway refuses: 401 invalid_signature. */
const badSignature = (name: string, send: BadCase['send']): BadCase => ({
  name,
  status: 401,
  error: 'invalid_signature',
  send,
});

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
  invalidEvent('missing id', 'id', (id) => post(without(valid(id), 'id'))),
  invalidEvent('empty id', 'id', (id) => post({ ...valid(id), id: '' })),
  invalidEvent('id with a space', 'id', (id) => post({ ...valid(id), id: `${id} x` })),
  invalidEvent('id with a slash', 'id', (id) => post({ ...valid(id), id: `${id}/../x` })),
  invalidEvent('id of 201 characters', 'id', (id) => post({ ...valid(id), id: id.padEnd(201, 'x') })),
  invalidEvent('numeric id', 'id', (id) => post({ ...valid(id), id: 42 })),
  invalidEvent('missing type', 'type', (id) => post(without(valid(id), 'type'))),
  invalidEvent('missing created_at', 'created_at', (id) => post(without(valid(id), 'created_at'))),
  invalidEvent('created_at not a timestamp', 'created_at', (id) =>
    post({ ...valid(id), created_at: 'yesterday' }),
  ),
  invalidEvent('missing data', 'data', (id) => post(without(valid(id), 'data'))),
  invalidEvent('missing shipment_id', 'data.shipment_id', (id) =>
    post({ ...valid(id), data: without(valid(id).data, 'shipment_id') }),
  ),
  invalidEvent('empty payment_id', 'data.payment_id', (id) => post(withData(id, { payment_id: '' }))),
  invalidEvent('negative amount', 'data.amount', (id) => post(withData(id, { amount: -1 }))),
  invalidEvent('fractional amount', 'data.amount', (id) => post(withData(id, { amount: 12.5 }))),
  invalidEvent('amount as a string', 'data.amount', (id) => post(withData(id, { amount: '12500' }))),
  invalidEvent('lower-case currency', 'data.currency', (id) => post(withData(id, { currency: 'eur' }))),
  invalidEvent('four-letter currency', 'data.currency', (id) => post(withData(id, { currency: 'EURO' }))),
  invalidEvent('a currency code ISO 4217 does not list', 'data.currency', (id) =>
    post(withData(id, { currency: 'ABC' })),
  ),
  badSignature('signed with an unknown secret', (id) => post(valid(id), { secret: unknownSecret })),
  badSignature('no signature headers', (id) =>
    rawPost({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(valid(id)),
    }),
  ),
  badSignature('timestamp 6 minutes old', (id) => post(valid(id), { at: new Date(Date.now() - 6 * 60_000) })),
  badSignature('timestamp 6 minutes ahead', (id) =>
    post(valid(id), { at: new Date(Date.now() + 6 * 60_000) }),
  ),
  badSignature('timestamp header not a number', (id) =>
    post(valid(id), { headers: { 'webhook-timestamp': 'now' } }),
  ),
  badSignature('signature over another body (tampered amount)', async (id) => {
    const original = JSON.stringify(valid(id));
    const headers = signWebhook(stack.secret, 'msg_tamper', original);
    return rawPost({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(withData(id, { amount: 1 })),
    });
  }),
  badSignature('malformed signature header', (id) =>
    post(valid(id), { headers: { 'webhook-signature': 'v1,not base64!!' } }),
  ),
  badSignature('only a non-v1 signature', (id) =>
    post(valid(id), { headers: { 'webhook-signature': 'v2,AAAA' } }),
  ),
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
