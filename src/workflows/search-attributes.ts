import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { formatUnits } from '../domain/money';
import type { PaymentEvent } from '../domain/payment-event';

/**
 * The search attributes of payment runs, all Keyword: what an operator filters the Temporal UI's list
 * by (`ShipmentId="SHP-4821"`, `SettleOutcome="needs_review"`, `SettleDeliveryState="retrying"`). Every
 * run carries the first three from its start; SettleOutcome and SettleDeliveryState only once it leaves
 * the happy path (workflows/operator-view.ts). settle registers them itself (the dev server's start
 * flags, `settle migrate` on a real server); a namespace without them refuses every start that sets them.
 */
export const ShipmentIdKey = defineSearchAttributeKey('ShipmentId', SearchAttributeType.KEYWORD);
export const PaymentIdKey = defineSearchAttributeKey('PaymentId', SearchAttributeType.KEYWORD);
export const PaymentEventTypeKey = defineSearchAttributeKey('PaymentEventType', SearchAttributeType.KEYWORD);
/** The claim's outcome when it is not applied: stale, unmatched or needs_review. */
export const SettleOutcomeKey = defineSearchAttributeKey('SettleOutcome', SearchAttributeType.KEYWORD);
/** Where the run's deliveries stand; see DeliveryState. */
export const SettleDeliveryStateKey = defineSearchAttributeKey(
  'SettleDeliveryState',
  SearchAttributeType.KEYWORD,
);

/** All of them: what settle registers. */
export const SETTLE_SEARCH_ATTRIBUTES = [
  ShipmentIdKey,
  PaymentIdKey,
  PaymentEventTypeKey,
  SettleOutcomeKey,
  SettleDeliveryStateKey,
];

/**
 * `pending`: nothing delivered yet; `delivering`: a step is being sent; `retrying`: a step's first
 * attempt failed and the durable activity is retrying it (backoff, Retry-After); `delivered`: every step
 * delivered; `compensated`: a downstream refused a step and the earlier ones were undone (the outcome is
 * `needs_review`); `not_configured`: a step's target has no URL on the worker that ran it. A run shows it
 * from its first `retrying`, `compensated` or `not_configured` on; a run that never reaches one, or has
 * nothing to deliver (stale, unmatched), has no delivery state.
 */
export type DeliveryState =
  'pending' | 'delivering' | 'retrying' | 'delivered' | 'compensated' | 'not_configured';

/**
 * What a payment run carries from its start, before anything has run: the event's business keys.
 * Attributes given at start cost no Temporal action.
 */
export function paymentStartSearchAttributes(event: PaymentEvent): SearchAttributePair[] {
  return [
    { key: ShipmentIdKey, value: event.data.shipment_id },
    { key: PaymentIdKey, value: event.data.payment_id },
    { key: PaymentEventTypeKey, value: event.type },
  ];
}

/**
 * The run's one-line summary in the UI: "payment.settled · SHP-4821 · 125.00 EUR", the amount in its
 * currency's ISO 4217 digits (or, for an amount ISO cannot express, in the provider's own decimals).
 */
export function paymentSummary(event: PaymentEvent): string {
  const { shipment_id: shipmentId, amount, currency, amount_decimals: decimals } = event.data;
  const shown = formatUnits(amount, currency, typeof decimals === 'number' ? decimals : undefined);
  return `${event.type} · ${shipmentId} · ${shown} ${currency}`;
}

/** A reminder run's summary: "renewal reminder · CT-88 · due 2026-08-10T09:00:00.000Z". */
export function reminderSummary(reminder: { contractId?: string; dueAt: Date }): string {
  const contract = reminder.contractId ? ` · ${reminder.contractId}` : '';
  return `renewal reminder${contract} · due ${reminder.dueAt.toISOString()}`;
}
