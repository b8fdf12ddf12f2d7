import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCode } from '../../src/domain/errors';
import {
  EVENT_ID_PATTERN,
  isDeliveryId,
  isEventId,
  isShipmentId,
  WORKFLOW_ID_IN_TEXT,
} from '../../src/domain/ids';
import { eventIdSchema, paymentEventSchema, shipmentIdSchema } from '../../src/domain/payment-event';
import { isPaymentEvent, RFC3339_PATTERN } from '../../src/domain/payment-event-shape';
import { deliveryIdSchema, reminderRequestSchema } from '../../src/domain/reminder';
import { openApiDocument } from '../../src/gateway/openapi';
import { PARSER_REFUSAL_CODES } from '../../src/lib/listener-limits';
import { redactIds } from '../../src/temporal/redact-ids';

const keys: [unknown, boolean][] = [
  ['pay_7f3', true],
  ['evt_1:a.b-c', true],
  ['a'.repeat(200), true],
  ['a'.repeat(201), false],
  ['', false],
  ['has space', false],
  ['évt', false],
  ['a/b', false],
  [42, false],
  [undefined, false],
];
const shipments: [unknown, boolean][] = [
  ['SHP-4821', true],
  ['SHP 4821', true],
  ['Lieferung/ä 7', true],
  [' ', true],
  ['s'.repeat(200), true],
  ['s'.repeat(201), false],
  ['', false],
  [null, false],
  [4821, false],
];

describe('the ID rules (src/domain/ids.ts), each declared once', () => {
  test('an event ID and a delivery ID: the plain check and the schema agree on every case', () => {
    for (const [value, valid] of keys) {
      const shown = JSON.stringify(value);
      assert.equal(isEventId(value), valid, shown);
      assert.equal(eventIdSchema.safeParse(value).success, valid, shown);
      assert.equal(isDeliveryId(value), valid, shown);
      assert.equal(deliveryIdSchema.safeParse(value).success, valid, shown);
    }
  });

  test("a shipment ID: the event's data.shipment_id and the CLI's rule agree on every case", () => {
    for (const [value, valid] of shipments) {
      const shown = JSON.stringify(value);
      assert.equal(isShipmentId(value), valid, shown);
      assert.equal(shipmentIdSchema.safeParse(value).success, valid, shown);
    }
  });

  test('the logger redacts every key a workflow ID can carry, and only the key', () => {
    const key = 'evt_1:a.b-c';
    assert.ok(isEventId(key));
    const line = redactIds(`workflow payment:${key} and reminder:${key} done`);
    assert.doesNotMatch(line, /evt_1/);
    assert.match(line, /^workflow payment:#\w+ and reminder:#\w+ done$/);
    assert.equal(WORKFLOW_ID_IN_TEXT.flags, 'g');
  });
});

/** A valid event, then single-field changes with the answer both checks must give. */
const valid = {
  id: 'pay_7f3',
  type: 'payment.settled',
  created_at: '2026-08-10T02:14:00Z',
  data: { shipment_id: 'SHP 4821', payment_id: 'pi_91', amount: 12500, currency: 'EUR' },
  livemode: false,
};
const withData = (data: object) => ({ ...valid, data: { ...valid.data, ...data } });
const events: [string, unknown, boolean][] = [
  ['the example', valid, true],
  ['an offset timestamp with a fraction', { ...valid, created_at: '2026-08-10T02:14:00.5+05:30' }, true],
  ['a leap day', { ...valid, created_at: '2024-02-29T00:00:00Z' }, true],
  ['no leap day', { ...valid, created_at: '2025-02-29T00:00:00Z' }, false],
  ['a local time', { ...valid, created_at: '2026-08-10T02:14:00' }, false],
  ['no seconds', { ...valid, created_at: '2026-08-10T02:14Z' }, false],
  ['an unhandled type', { ...valid, type: 'payment.disputed' }, false],
  ['a bad ID', { ...valid, id: 'pay 7f3' }, false],
  ['amount 0', withData({ amount: 0 }), true],
  ['a negative amount', withData({ amount: -1 }), false],
  ['a fractional amount', withData({ amount: 1.5 }), false],
  ['an unsafe amount', withData({ amount: Number.MAX_SAFE_INTEGER + 1 }), false],
  ['a lower-case currency', withData({ currency: 'eur' }), false],
  ['an empty shipment ID', withData({ shipment_id: '' }), false],
  ['a 201-character payment ID', withData({ payment_id: 'p'.repeat(201) }), false],
  ['data an array', { ...valid, data: [] }, false],
  ['no data', { id: valid.id, type: valid.type, created_at: valid.created_at }, false],
  ['null', null, false],
];

describe('the workflow-side event check (payment-event-shape.ts) against the zod schema', () => {
  for (const [name, value, expected] of events) {
    test(`${name}: ${expected ? 'accepted' : 'refused'} by both`, () => {
      assert.equal(paymentEventSchema.safeParse(value).success, expected);
      assert.equal(isPaymentEvent(value), expected);
    });
  }
});

type Json = Record<string, unknown>;
const components = openApiDocument.components.schemas as Record<string, Json>;

function* walk(node: unknown): Generator<Json> {
  if (Array.isArray(node)) for (const child of node) yield* walk(child);
  else if (node && typeof node === 'object') {
    yield node as Json;
    for (const child of Object.values(node)) yield* walk(child);
  }
}

describe('the OpenAPI document, generated from the zod schemas', () => {
  test('is plain JSON and every $ref names a component', () => {
    const document = JSON.parse(JSON.stringify(openApiDocument)) as Json;
    assert.equal(document.openapi, '3.1.0');
    const refs = [...walk(document)].flatMap((node) => (typeof node.$ref === 'string' ? [node.$ref] : []));
    assert.ok(refs.length > 20);
    for (const ref of refs) {
      const name = /^#\/components\/schemas\/([A-Za-z]+)$/.exec(ref)?.[1];
      assert.ok(name && components[name], `unresolved ${ref}`);
    }
    for (const node of walk(components)) assert.equal(node.$schema, undefined);
  });

  test('publishes the ID rule of src/domain/ids.ts wherever an ID is sent', () => {
    const idPatterns = [
      (components.PaymentEvent!.properties as Json).id,
      (components.EventEnvelope!.properties as Json).id,
      ...[...walk(openApiDocument.paths)]
        .filter((node) => node.in === 'path' || node.name === 'Idempotency-Key')
        .map((node) => node.schema),
    ].map((schema) => (schema as Json).pattern);
    assert.equal(idPatterns.length, 5);
    for (const pattern of idPatterns) assert.equal(pattern, EVENT_ID_PATTERN.source);
  });

  test("the published timestamp pattern is zod's, which the workflow's twin matches", () => {
    const created = (components.PaymentEvent!.properties as Json).created_at as Json;
    assert.equal(created.format, 'date-time');
    const published = new RegExp(created.pattern as string);
    for (const [, value] of events.filter(([name]) => /time|leap|seconds/.test(name))) {
      const text = (value as { created_at: string }).created_at;
      assert.equal(published.test(text), RFC3339_PATTERN.test(text), text);
    }
  });

  test('the Rejected body lists every error code, and requests name storable text', () => {
    const error = (components.Rejected!.properties as Json).error as Json;
    assert.deepEqual(error.enum, Object.values(ErrorCode));
    // What every listener answers for bytes Node's parser refuses is in that list too.
    assert.equal(PARSER_REFUSAL_CODES.headersTooLarge, ErrorCode.HeadersTooLarge);
    assert.equal(PARSER_REFUSAL_CODES.badRequest, ErrorCode.BadRequest);
    const data = (components.PaymentEvent!.properties as Json).data as Json;
    assert.equal(((data.properties as Json).shipment_id as Json).pattern, '^[^\\u0000]*$');
    assert.equal(components.Accepted!.additionalProperties, false);
  });

  test('a webhook_url the published pattern refuses gets one issue, as before it was a check of its own', () => {
    const result = reminderRequestSchema.safeParse({
      contract_id: 'c-1',
      due_at: '2026-08-10T02:14:00Z',
      webhook_url: 'ftp://example.com/hook',
    });
    assert.equal(result.success, false);
    assert.deepEqual(
      result.error!.issues.map((issue) => issue.path.join('.')),
      ['webhook_url'],
    );
    const withCredentials = reminderRequestSchema.safeParse({
      contract_id: 'c-1',
      due_at: '2026-08-10T02:14:00Z',
      webhook_url: 'https://user:pw@example.com/hook',
    });
    assert.equal(withCredentials.success, false);
  });
});
