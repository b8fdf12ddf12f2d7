import { randomBytes } from 'node:crypto';
import { recoverMissedEvents } from '../../src/app/recovery-missed-events';
import { advanceRecoveryCursor } from '../../src/db/recovery-cursor';
import { addShipments } from '../../src/db/shipments';
import { createStripeRecoverySource } from '../../src/providers/stripe/recovery-source';
import type { ProofStack } from '../../testkit/stack';
import { startStripeApi, storeAsAdmitted, type StripeApi } from '../../testkit/stripe-api';
import type { RowRun } from './context';

export type RecoveryPrepared = { api: StripeApi; missedIds: string[]; listed: number };

function capture(id: string, shipmentId: string, created: number): Record<string, unknown> {
  return {
    id,
    object: 'event',
    api_version: '2024-06-20',
    created,
    livemode: false,
    pending_webhooks: 0,
    type: 'payment_intent.succeeded',
    data: {
      object: {
        id: `pi_${id.slice(4)}`,
        object: 'payment_intent',
        amount: 12500,
        amount_received: 12500,
        currency: 'eur',
        status: 'succeeded',
        metadata: { shipment_id: shipmentId },
      },
    },
  };
}

/**
 * A local Stripe API listing `listed` captures after the sweep's cursor, of which all but `missed`
 * (spread evenly) are already in `events` as their webhooks would have stored them; the missed ones'
 * shipments exist, so their runs apply.
 */
export async function prepareRecovery(
  stack: ProofStack,
  listed: number,
  missed: number,
): Promise<RecoveryPrepared> {
  const api = await startStripeApi();
  const prefix = randomBytes(4).toString('hex');
  const base = Math.floor(Date.now() / 1000) - listed - 60;
  const anchor = capture(`evt_rs${prefix}anchor`, `SHP-RS-${prefix}-anchor`, base);
  api.add(anchor, { delivered: true });
  await advanceRecoveryCursor(stack.pool, 'stripe', {
    eventId: anchor.id as string,
    createdAt: new Date(base * 1000),
  });
  const every = Math.floor(listed / missed);
  const applied: Record<string, unknown>[] = [];
  const missedIds: string[] = [];
  const missedShipments: string[] = [];
  for (let i = 0; i < listed; i += 1) {
    const shipmentId = `SHP-RS-${prefix}-${i}`;
    const event = capture(`evt_rs${prefix}${i}`, shipmentId, base + 1 + i);
    const isMissed = i % every === every - 1 && missedIds.length < missed;
    api.add(event, { delivered: !isMissed });
    if (isMissed) {
      missedIds.push(event.id as string);
      missedShipments.push(shipmentId);
    } else {
      applied.push(event);
    }
  }
  await storeAsAdmitted(stack.pool, applied);
  await addShipments(stack.pool, missedShipments);
  return { api, missedIds, listed };
}

/**
 * One sweep from the cursor through settle's door, as the Schedule's activity runs it: events listed
 * per second, and the Temporal workflow starts it made (counted on the client).
 */
export async function benchRecovery(stack: ProofStack, prepared: RecoveryPrepared) {
  const workflows = stack.client.workflow;
  const start = workflows.start.bind(workflows);
  let starts = 0;
  workflows.start = ((...args: Parameters<typeof start>) => {
    starts += 1;
    return start(...args);
  }) as typeof start;
  try {
    const source = createStripeRecoverySource({ apiKey: prepared.api.apiKey, apiBase: prepared.api.url });
    const summary = await recoverMissedEvents(
      { pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue },
      source,
    );
    if (summary.listed !== prepared.listed) throw new Error(`listed ${summary.listed} of ${prepared.listed}`);
    return {
      listed: summary.listed,
      alreadyHad: summary.already_had,
      admitted: summary.admitted,
      starts,
      eventsPerSecond: summary.events_per_second,
      elapsedMs: summary.elapsed_ms,
    };
  } finally {
    workflows.start = start;
    await prepared.api.close();
  }
}

/** Of the recovery sweep's listed events, those never delivered (the rest are applied already). */
export const RECOVERY_MISSED = 10;

/** RS, once: the Schedule's sweep after a short outage, from the cursor, through the webhook's door. */
export const runRecovery: RowRun = async ({ stack, size, measure }) => {
  const listed = size.recoveryListed;
  await measure('RS', `recovery sweep: ${listed} listed, ${listed - RECOVERY_MISSED} already applied`, {
    prepare: () => prepareRecovery(stack, listed, RECOVERY_MISSED),
    run: (prepared) => benchRecovery(stack, prepared),
    events: listed,
    reps: 1,
  });
};
