/**
 * Every downstream call is signed the Standard Webhooks way (docs/delivery.md, "Signed calls"): the
 * carrier and the ERP can tell settle's calls from anyone else's, with the target's own secret when it
 * has one, and the `webhook-id` is the Idempotency-Key, the same on every retry.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import type { PaymentWorkflowResult } from '../src/workflows';
import { startDevDownstream } from '../src/stack/dev-downstream';
import { signWebhook } from '../src/lib/webhook-signature';
import type { Config } from '../src/config';
import {
  newSecret,
  paymentEvent,
  postWebhook,
  uniqueId,
  waitFor,
  type TestStack,
  startStackWithReceivers,
} from '../testkit/harness';
import { useCleanups } from '../testkit/hooks';
import { remindersApi } from './support/reminders';
import { startReceiver, type Behaviour, type ReceivedRequest, type Receiver } from '../testkit/receiver';

const cleanups = useCleanups();

type Setup = { stack: TestStack; carrier: Receiver; erp: Receiver; shipmentId: string };

async function setUp(
  signing: Pick<Config, 'outboundSecret'> &
    Partial<Pick<Config, 'carrierSecret' | 'erpSecret' | 'reminderSecret'>>,
  behaviours: { carrier?: Behaviour; erp?: Behaviour } = {},
): Promise<Setup> {
  const { stack, carrier, erp, close } = await startStackWithReceivers({
    ...behaviours,
    stack: { config: signing },
  });
  cleanups.push(close);
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  return { stack, carrier, erp, shipmentId };
}

async function settle(setup: Setup): Promise<{ eventId: string; result: PaymentWorkflowResult }> {
  const event = paymentEvent({ shipmentId: setup.shipmentId, type: 'payment.settled' });
  assert.equal((await postWebhook(setup.stack, event)).status, 202);
  const result: PaymentWorkflowResult = await setup.stack.client.workflow
    .getHandle(paymentWorkflowId(event.id))
    .result();
  return { eventId: event.id, result };
}

/** Whether `secret` verifies the request, checked with the standardwebhooks package as a receiver would. */
function verifiesWith(request: ReceivedRequest, secret: string): boolean {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

describe('signed carrier and ERP calls', () => {
  test('signed with the first of SETTLE_OUTBOUND_SECRET; webhook-id is the Idempotency-Key, the same on a retry', async () => {
    const [first, second] = [newSecret(), newSecret()];
    const setup = await setUp(
      { outboundSecret: [first, second] },
      // The carrier's first answer is a 503: the retry must carry the same webhook-id.
      { carrier: (_request, index) => ({ status: index === 0 ? 503 : 200 }) },
    );
    setup.carrier.secrets = [first];
    setup.erp.secrets = [first];
    const { eventId, result } = await settle(setup);
    assert.equal(result.outcome, 'applied', 'a legitimate event is still delivered');

    const release = `${eventId}:carrier:release_hold`;
    const ledger = `${eventId}:erp:post_ledger_entry`;
    assert.deepEqual(
      setup.carrier.requests.map((r) => [r.headers['webhook-id'], r.headers['idempotency-key'], r.verified]),
      [
        [release, release, true],
        [release, release, true],
      ],
    );
    assert.deepEqual(
      setup.erp.requests.map((r) => [r.headers['webhook-id'], r.headers['idempotency-key'], r.verified]),
      [[ledger, ledger, true]],
    );
    for (const request of [...setup.carrier.requests, ...setup.erp.requests]) {
      assert.ok(verifiesWith(request, first), 'the first secret verifies');
      assert.ok(!verifiesWith(request, second), 'only the first secret signs');
      assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
      assert.ok(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
    }
    assert.deepEqual(setup.carrier.effects, [release]);
  });

  test("a target's own secret signs its calls in place of SETTLE_OUTBOUND_SECRET; the other target keeps the global one", async () => {
    const [global, carrierOwn, carrierOld] = [newSecret(), newSecret(), newSecret()];
    const setup = await setUp({ outboundSecret: [global], carrierSecret: [carrierOwn, carrierOld] });
    setup.carrier.secrets = [carrierOwn];
    setup.erp.secrets = [global];
    const { result } = await settle(setup);
    assert.equal(result.outcome, 'applied');

    const [release] = setup.carrier.requests;
    assert.ok(release?.verified, 'the carrier verifies with its own secret');
    assert.ok(!verifiesWith(release, global), 'the carrier call is not signed with the global secret');
    assert.ok(!verifiesWith(release, carrierOld), 'nor with the second of its own');
    const [entry] = setup.erp.requests;
    assert.ok(entry?.verified, 'the ERP verifies with SETTLE_OUTBOUND_SECRET');
    assert.ok(!verifiesWith(entry, carrierOwn));
  });

  test("the carrier's re-hold (a compensation) is signed as well, under its own key", async () => {
    const carrierSecret = newSecret();
    const setup = await setUp(
      { outboundSecret: [newSecret()], carrierSecret: [carrierSecret] },
      { erp: () => ({ status: 400 }) },
    );
    setup.carrier.secrets = [carrierSecret];
    const { eventId, result } = await settle(setup);
    assert.equal(result.compensated, true);
    assert.deepEqual(
      setup.carrier.requests.map((r) => [r.json.action, r.headers['webhook-id'], r.verified]),
      [
        ['release_hold', `${eventId}:carrier:release_hold`, true],
        ['hold', `${eventId}:carrier:rehold`, true],
      ],
    );
  });
});

/** Schedules a reminder due now to `receiver` and waits until the run has finished with it. */
async function remindNow(stack: TestStack, receiver: Receiver) {
  const key = uniqueId('rem');
  const body = {
    contract_id: uniqueId('CT'),
    due_at: new Date().toISOString(),
    webhook_url: `${receiver.url}/hooks/renewal`,
    payload: { plan: 'yearly' },
  };
  const scheduled = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', { key, body });
  assert.equal(scheduled.status, 202, JSON.stringify(scheduled.body));
  return { key, body };
}

/** The request re-sent, byte for byte with its signature headers, to `url`: what a replay is. */
async function replay(request: ReceivedRequest, url: string): Promise<number> {
  const headers = Object.fromEntries(
    ['content-type', 'idempotency-key', 'webhook-id', 'webhook-timestamp', 'webhook-signature'].map(
      (name) => [name, String(request.headers[name])],
    ),
  );
  const response = await fetch(url, { method: 'POST', headers, body: request.body });
  await response.body?.cancel();
  return response.status;
}

describe('reminders are signed with SETTLE_REMINDER_SECRET, every call naming its audience', () => {
  test('a reminder verifies with its own secret only and names its webhook URL; carrier and ERP calls name theirs', async () => {
    const [outbound, reminder] = [newSecret(), newSecret()];
    const setup = await setUp({ outboundSecret: [outbound], reminderSecret: [reminder] });
    setup.carrier.secrets = [outbound];
    setup.erp.secrets = [outbound];
    const customer = await startReceiver(undefined, [reminder]);
    cleanups.push(() => customer.close());

    const { eventId } = await settle(setup);
    const { key, body } = await remindNow(setup.stack, customer);
    const [delivered] = await waitFor(
      'the reminder',
      async () => customer.requests.length > 0 && customer.requests,
    );
    assert.equal(delivered!.headers['webhook-id'], key);
    assert.ok(delivered!.verified, 'the customer verifies with SETTLE_REMINDER_SECRET');
    assert.ok(
      !verifiesWith(delivered!, outbound),
      'a reminder never verifies with the carrier and ERP secret',
    );
    assert.equal(delivered!.json.audience, body.webhook_url);

    const [release] = setup.carrier.requests;
    const [entry] = setup.erp.requests;
    assert.equal(release!.json.audience, 'carrier');
    assert.equal(entry!.json.audience, 'erp');
    assert.ok(!verifiesWith(release!, reminder) && !verifiesWith(entry!, reminder));
    assert.equal(release!.headers['webhook-id'], `${eventId}:carrier:release_hold`);
  });

  test('a replayed reminder, or a carrier call replayed to the ERP, is refused by a receiver that checks', async () => {
    const [outbound, reminder] = [newSecret(), newSecret()];
    // The stand-in verifies as a well-kept carrier and ERP do: signature, then audience.
    const standIn = await startDevDownstream(0, { outboundSecret: [outbound] });
    cleanups.push(() => standIn.close());
    const setup = await setUp({ outboundSecret: [outbound], reminderSecret: [reminder] });
    const customer = await startReceiver(undefined, [reminder]);
    cleanups.push(() => customer.close());
    await settle(setup);
    await remindNow(setup.stack, customer);
    const [delivered] = await waitFor(
      'the reminder',
      async () => customer.requests.length > 0 && customer.requests,
    );

    // The customer holds the reminders' secret and re-sends what it got to the carrier and the ERP.
    assert.equal(await replay(delivered!, `${standIn.url}/carrier`), 401);
    assert.equal(await replay(delivered!, `${standIn.url}/erp`), 401);
    // Both targets share SETTLE_OUTBOUND_SECRET here: the signature verifies, the audience does not.
    const [release] = setup.carrier.requests;
    assert.equal(await replay(release!, `${standIn.url}/erp`), 401);
    assert.equal(await replay(release!, `${standIn.url}/carrier`), 200, 'sent where it was for, it is taken');
  });

  test('without SETTLE_REMINDER_SECRET a due reminder is held, naming it, and never signed with SETTLE_OUTBOUND_SECRET', async () => {
    const setup = await setUp({ outboundSecret: [newSecret()], reminderSecret: [] });
    const customer = await startReceiver();
    cleanups.push(() => customer.close());
    const { key } = await remindNow(setup.stack, customer);
    const held = await waitFor('the reminder to be held', async () => {
      const { rows } = await setup.stack.pool.query<{ state: string; last_error: string | null }>(
        'SELECT state, last_error FROM reminders WHERE delivery_id = $1::text',
        [key],
      );
      return rows[0]?.last_error ? rows[0] : undefined;
    });
    assert.equal(held.state, 'processing');
    assert.match(held.last_error!, /SETTLE_REMINDER_SECRET is not configured/);
    assert.equal(customer.requests.length, 0);
  });
});

describe("npm start's stand-in downstream", () => {
  test('applies a call signed with the target secret, refuses an unsigned or wrongly signed one with 401', async () => {
    const [global, erpOwn] = [newSecret(), newSecret()];
    const standIn = await startDevDownstream(0, { outboundSecret: [global], erpSecret: [erpOwn] });
    cleanups.push(() => standIn.close());
    const call = async (target: string, secret: string | undefined) => {
      const key = `evt_${randomBytes(6).toString('hex')}:${target}:x`;
      const body = JSON.stringify({ action: 'x', audience: target });
      const response = await fetch(`${standIn.url}/${target}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          ...(secret ? signWebhook(secret, key, body) : {}),
        },
        body,
      });
      return response.status;
    };
    assert.equal(await call('carrier', global), 200);
    assert.equal(await call('erp', erpOwn), 200);
    assert.equal(await call('erp', global), 401, "the ERP's own secret replaces the global one");
    assert.equal(await call('carrier', undefined), 401);
    assert.equal(await call('carrier', newSecret()), 401);
  });
});
