import { patched, proxyLocalActivities } from '@temporalio/workflow';
import type { PlainConsumerActivities, PlainConsumerEvent } from './plain-consumer-activities';

const step = proxyLocalActivities<PlainConsumerActivities>({ startToCloseTimeout: '30 seconds' });

/**
 * T3W's workflow: what a team writes without settle, as three plain local activities (T3L's shape)
 * doing P's work: claim the event and apply it in one transaction, release the shipment at the
 * carrier, post the ledger entry to the ERP. A repeated event changes nothing. `likeSettle`
 * (SETTLE_BENCH_PLAIN_VIEW=full) adds what a settle payment run on the happy path adds on the server:
 * a patch marker (with its TemporalChangeVersion upsert); the happy path upserts nothing else.
 */
export async function plainConsumerWorkflow(event: PlainConsumerEvent, likeSettle = false): Promise<void> {
  if (likeSettle) patched('plain-consumer-like-settle');
  if (!(await step.claimAndApply(event))) return;
  await step.releaseShipment(event);
  await step.postLedgerEntry(event);
}
