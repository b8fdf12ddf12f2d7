import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import fc from 'fast-check';
import { paymentWorkflowId } from '../../../src/domain/ids';
import { EVENT_ID_PATTERN } from '../../../src/domain/payment-event';
import { signWebhook } from '../../../src/lib/webhook-signature';
import { httpRequest } from '../../../testkit/load';
import { failureList, type Scenario } from './common';

const FIELDS = [
  'id',
  'type',
  'created_at',
  'data',
  'data.shipment_id',
  'data.payment_id',
  'data.amount',
  'data.currency',
];

type BodyChange =
  | { kind: 'valid' }
  | { kind: 'replace'; path: string; value: unknown }
  | { kind: 'delete'; path: string }
  | { kind: 'extra'; fields: Record<string, unknown> }
  | { kind: 'unknown-type' }
  | { kind: 'raw'; text: string }
  | { kind: 'json'; value: unknown }
  | { kind: 'huge' };

type HeaderChange =
  | 'valid'
  | 'wrong-secret'
  | 'other-body'
  | 'stale'
  | 'future'
  | 'no-id'
  | 'no-signature'
  | 'garbage-signature'
  | 'bad-timestamp';

const bodyChange: fc.Arbitrary<BodyChange> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<BodyChange>({ kind: 'valid' }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      path: fc.constantFrom(...FIELDS),
      value: fc.jsonValue(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), path: fc.constantFrom(...FIELDS) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('extra' as const),
      fields: fc.dictionary(fc.string(), fc.jsonValue()),
    }),
  },
  { weight: 1, arbitrary: fc.constant<BodyChange>({ kind: 'unknown-type' }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('raw' as const), text: fc.string({ maxLength: 300 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue() }) },
  { weight: 1, arbitrary: fc.constant<BodyChange>({ kind: 'huge' }) },
);

const headerChange = fc.oneof(
  { weight: 6, arbitrary: fc.constant<HeaderChange>('valid') },
  {
    weight: 4,
    arbitrary: fc.constantFrom<HeaderChange>(
      'wrong-secret',
      'other-body',
      'stale',
      'future',
      'no-id',
      'no-signature',
      'garbage-signature',
      'bad-timestamp',
    ),
  },
);

const contentType = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  undefined,
);
const method = fc.constantFrom('POST', 'POST', 'POST', 'POST', 'PUT', 'PATCH', 'DELETE', 'GET');

function applyBody(id: string, change: BodyChange): { raw: string; ids: string[] } {
  const event: Record<string, unknown> = {
    id,
    type: 'payment.settled',
    created_at: '2026-08-10T02:14:00Z',
    data: { shipment_id: `SHP-${id}`, payment_id: `pi_${id}`, amount: 12500, currency: 'EUR' },
  };
  const ids = [id];
  const setPath = (path: string, fn: (parent: Record<string, unknown>, key: string) => void) => {
    const [head, tail] = path.split('.') as [string, string | undefined];
    if (!tail) return fn(event, head);
    const parent = event[head];
    if (parent && typeof parent === 'object') fn(parent as Record<string, unknown>, tail);
  };
  switch (change.kind) {
    case 'valid':
      break;
    case 'replace':
      setPath(change.path, (parent, key) => (parent[key] = change.value));
      if (change.path === 'id' && typeof change.value === 'string') ids.push(change.value);
      break;
    case 'delete':
      setPath(change.path, (parent, key) => delete parent[key]);
      break;
    case 'extra':
      Object.assign(
        event,
        Object.fromEntries(Object.entries(change.fields).filter(([key]) => !(key in event))),
      );
      break;
    case 'unknown-type':
      event.type = 'payment.exploded';
      break;
    case 'raw':
      return { raw: change.text, ids };
    case 'json':
      return { raw: JSON.stringify(change.value) ?? 'null', ids };
    case 'huge':
      event.padding = 'x'.repeat(300 * 1024);
      break;
  }
  return { raw: JSON.stringify(event), ids };
}

function headersFor(
  secret: string,
  otherSecret: string,
  raw: string,
  change: HeaderChange,
): Record<string, string> {
  const msgId = `msg_${randomBytes(6).toString('hex')}`;
  const now = new Date();
  const sign = (body: string, at = now, key = secret) => signWebhook(key, msgId, body, at);
  switch (change) {
    case 'valid':
      return sign(raw);
    case 'wrong-secret':
      return sign(raw, now, otherSecret);
    case 'other-body':
      return sign(`${raw} `);
    case 'stale':
      return sign(raw, new Date(now.getTime() - 6 * 60_000));
    case 'future':
      return sign(raw, new Date(now.getTime() + 6 * 60_000));
    case 'no-id':
      return without(sign(raw), 'webhook-id');
    case 'no-signature':
      return without(sign(raw), 'webhook-signature');
    case 'garbage-signature':
      return { ...sign(raw), 'webhook-signature': `v1,${randomBytes(32).toString('base64')}` };
    case 'bad-timestamp':
      return { ...sign(raw), 'webhook-timestamp': 'yesterday' };
  }
}

function without(headers: Record<string, string>, name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([key]) => key !== name));
}

/**
 * Property-based fuzz of POST /webhooks/payments: random and mutated bodies, headers, signatures,
 * content types and methods. Never a 5xx; a 2xx only for a correctly signed, valid POST; and for every
 * refused (or ignored) request, no events row and no workflow under any ID it carried.
 */
export const gatewayFuzz: Scenario = {
  id: 'fuzz',
  name: 'property-based fuzz of the gateway input',
  async run({ stack, provider, short }) {
    const { check, failures } = failureList();
    const otherSecret = `whsec_${randomBytes(24).toString('base64')}`;
    const statuses: Record<string, number> = {};
    let counter = 0;
    let refusedChecked = 0;
    const resent: string[] = [];
    const noAnswer: string[] = [];
    const numRuns = short ? 150 : 600;
    const outcome = await fc.check(
      fc.asyncProperty(bodyChange, headerChange, contentType, method, async (body, header, type, verb) => {
        counter += 1;
        const id = `fz_${randomBytes(4).toString('hex')}_${counter}`;
        const { raw, ids } = applyBody(id, body);
        const headers: Record<string, string> = { ...headersFor(stack.secret, otherSecret, raw, header) };
        if (type) headers['content-type'] = type;
        const reply = await httpRequest(`${stack.gatewayUrl}/webhooks/payments`, {
          method: verb,
          headers,
          body: verb === 'GET' ? undefined : raw,
        });
        statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
        if (reply.resent) resent.push(`${reply.resent.error} after ${reply.resent.idleMs} ms idle`);
        if (reply.status === 0) noAnswer.push(reply.error ?? 'unknown');
        if (reply.status === 0 || reply.status >= 500) return false;
        const accepted = reply.status === 202;
        if (accepted) {
          if (header !== 'valid' || verb !== 'POST') return false;
          const event = JSON.parse(raw) as { id: string };
          provider.acknowledged.set(event.id, {
            event: event as never,
            status: 202,
            body: reply.body,
            at: Date.now(),
          });
          return true;
        }
        if (reply.status === 200 && reply.body.includes('"duplicate"')) return false;
        const candidates = ids.filter((candidate) => EVENT_ID_PATTERN.test(candidate));
        const { rowCount } = await stack.pool.query('SELECT 1 FROM events WHERE event_id = ANY($1::text[])', [
          candidates,
        ]);
        if (rowCount) return false;
        for (const candidate of candidates) {
          try {
            await stack.client.workflow.getHandle(paymentWorkflowId(candidate)).describe();
            return false;
          } catch (error) {
            if (!(error instanceof WorkflowNotFoundError)) throw error;
          }
        }
        refusedChecked += 1;
        return true;
      }),
      { numRuns, endOnFailure: true },
    );
    check(
      !outcome.failed,
      `counterexample: ${fc.stringify(outcome.counterexample)}` +
        (noAnswer.length ? ` (no answer: ${noAnswer.join(', ')})` : ''),
    );
    return {
      figures: {
        runs: outcome.numRuns,
        refusedChecked,
        statuses: JSON.stringify(statuses),
        resentOnClosedKeepAlive: resent.length ? resent.join('; ') : 0,
      },
      failures,
    };
  },
};
