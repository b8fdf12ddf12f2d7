/**
 * `settle simulate` and `settle simulate --out`: the planned traffic. Whatever the count and the
 * out-of-order share, each payment's events go out as its sequence, or as a prefix of it when the
 * count cuts the last payment, or whole with the capture and the settlement swapped: never a
 * settlement without the capture before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planTraffic } from '../../src/stack/simulate';

const IN_ORDER = ['payment.authorized', 'payment.captured', 'payment.settled'];
const SWAPPED = ['payment.authorized', 'payment.settled', 'payment.captured'];

test('every simulated payment is its sequence, a prefix of it, or whole with one swap', () => {
  for (let count = 1; count <= 31; count += 1) {
    for (const outOfOrderShare of [0, 0.5, 1]) {
      for (const seed of [1, 2, 3]) {
        const plan = planTraffic({
          count,
          duplicateShare: 0,
          lateReplayShare: 0,
          outOfOrderShare,
          runId: 'simtest',
          seed,
        });
        assert.equal(plan.events.length, count);
        const byPayment = new Map<string, string[]>();
        for (const event of plan.events) {
          const types = byPayment.get(event.data.payment_id) ?? [];
          types.push(event.type);
          byPayment.set(event.data.payment_id, types);
        }
        let swapped = 0;
        for (const types of byPayment.values()) {
          const isPrefix = types.every((type, i) => type === IN_ORDER[i]);
          const isSwapped = types.length === SWAPPED.length && types.every((type, i) => type === SWAPPED[i]);
          assert.ok(isPrefix || isSwapped, `count ${count}, seed ${seed}: ${types.join(' → ')}`);
          if (isSwapped) swapped += 1;
        }
        assert.equal(plan.outOfOrder, swapped, 'the reported out-of-order count is what was sent');
      }
    }
  }
});
