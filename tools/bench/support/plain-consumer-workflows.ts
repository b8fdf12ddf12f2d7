import { patched, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { SettleDeliveryStateKey, SettleOutcomeKey } from '../../../src/workflows/search-attributes';
import type { PlainConsumerActivities, PlainConsumerEvent } from './plain-consumer-activities';

const step = proxyLocalActivities<PlainConsumerActivities>({ startToCloseTimeout: '30 seconds' });

/**
 * T3W's workflow: what a team writes without settle, as three plain local activities (T3L's shape)
 * doing P's work: claim the event and apply it in one transaction, release the shipment at the
 * carrier, post the ledger entry to the ERP. A repeated event changes nothing. `likeSettle`
 * (SETTLE_BENCH_PLAIN_VIEW=full) adds what a settle payment run adds on the server: a patch marker
 * (with its TemporalChangeVersion upsert) and one upsert of the outcome and the delivery state.
 */
export async function plainConsumerWorkflow(event: PlainConsumerEvent, likeSettle = false): Promise<void> {
  if (likeSettle) patched('plain-consumer-like-settle');
  if (!(await step.claimAndApply(event))) return;
  await step.releaseShipment(event);
  await step.postLedgerEntry(event);
  if (likeSettle) {
    upsertSearchAttributes([
      { key: SettleOutcomeKey, value: 'applied' },
      { key: SettleDeliveryStateKey, value: 'delivered' },
    ]);
  }
}
