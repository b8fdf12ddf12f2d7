/**
 * The HMAC simulator (src/providers/hmac/simulate.ts) writes a canonical event as each provider's own
 * event and signs it; the provider's adapter verifies that request and reads the same canonical
 * event back, for every type each spec maps and at the money units' special cases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PaymentEvent, PaymentEventType } from '../../src/domain/payment-event';
import { CHECKOUT_SPEC } from '../../src/providers/checkout/spec';
import { createHmacAdapter } from '../../src/providers/hmac/adapter';
import { hmacProviderEvent, simulateHmacRequest } from '../../src/providers/hmac/simulate';
import type { HmacProviderSpec } from '../../src/providers/hmac/spec';
import { SQUARE_SPEC } from '../../src/providers/square/spec';

const KEY = 'simulator-test-key';
const URL = 'https://settle.example.com/webhooks/square';

function canonical(spec: HmacProviderSpec, type: PaymentEventType, data: Partial<PaymentEvent['data']> = {}) {
  return {
    id: `${spec.name}:evt-sim-${type}`,
    type,
    created_at: '2026-09-21T10:00:00Z',
    data: {
      shipment_id: 'SHP-SIM-1',
      payment_id: 'pay_sim_1',
      amount: 12500,
      currency: 'EUR',
      ...(type === 'payment.refunded' ? { refund_id: `${spec.name}:re_sim_1` } : {}),
      ...data,
    },
  } satisfies PaymentEvent;
}

/** The request simulated for `event`, verified and adapted by the provider's own adapter. */
async function roundTrip(spec: HmacProviderSpec, event: PaymentEvent) {
  const request = simulateHmacRequest(spec, event, KEY, { url: URL });
  assert.equal(request.path, spec.route);
  const adapter = createHmacAdapter(spec, { keys: [KEY], notificationUrl: URL });
  const verified = await adapter.verify({ rawBody: request.body, headers: request.headers });
  assert.ok(verified.ok, JSON.stringify(verified));
  const adapted = adapter.adapt(verified.items[0]);
  assert.ok(adapted.kind === 'payment', JSON.stringify(adapted));
  return adapted.event;
}

for (const spec of [CHECKOUT_SPEC, SQUARE_SPEC] as HmacProviderSpec[]) {
  describe(`${spec.displayName}: simulated, verified, read back`, () => {
    for (const type of [
      'payment.authorized',
      'payment.captured',
      'payment.refunded',
      'payment.failed',
    ] as const) {
      test(type, async () => {
        const event = canonical(spec, type);
        const read = await roundTrip(spec, event);
        assert.equal(read.id, event.id);
        assert.equal(read.type, type);
        assert.equal(read.created_at, event.created_at);
        assert.deepEqual(
          [
            read.data.shipment_id,
            read.data.payment_id,
            read.data.amount,
            read.data.currency,
            read.data.refund_id,
          ],
          [
            event.data.shipment_id,
            event.data.payment_id,
            event.data.amount,
            event.data.currency,
            event.data.refund_id,
          ],
        );
      });
    }

    test('a type the spec does not map cannot be simulated', () => {
      assert.throws(() => hmacProviderEvent(spec, canonical(spec, 'payment.settled')), /no event type/);
    });
  });
}

describe("the simulator writes the provider's units", () => {
  test("Checkout.com's CLP in hundredths, and back to whole pesos", async () => {
    const event = canonical(CHECKOUT_SPEC, 'payment.captured', { amount: 5000, currency: 'CLP' });
    assert.equal((hmacProviderEvent(CHECKOUT_SPEC, event).data as { amount: number }).amount, 500000);
    assert.equal((await roundTrip(CHECKOUT_SPEC, event)).data.amount, 5000);
  });

  test('an amount the provider cannot count is refused, not rounded', () => {
    const event = canonical(CHECKOUT_SPEC, 'payment.captured', { amount: 1234, currency: 'JPY' });
    assert.equal((hmacProviderEvent(CHECKOUT_SPEC, event).data as { amount: number }).amount, 1234);
    const inexact = canonical(CHECKOUT_SPEC, 'payment.captured', {
      amount: 12345,
      currency: 'JPY',
      amount_decimals: 1,
    });
    assert.throws(() => hmacProviderEvent(CHECKOUT_SPEC, inexact), /counts JPY in 0 decimals/);
  });

  test("Square's refund is written where Square keeps a refund", () => {
    const body = hmacProviderEvent(SQUARE_SPEC, canonical(SQUARE_SPEC, 'payment.refunded'));
    const refund = (body.data as { object: { refund: Record<string, unknown> } }).object.refund;
    assert.deepEqual(refund, {
      status: 'COMPLETED',
      payment_id: 'pay_sim_1',
      id: 're_sim_1',
      amount_money: { amount: 12500, currency: 'EUR' },
    });
  });
});
