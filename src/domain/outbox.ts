/**
 * The outbox lifecycle in one place: what a row's status means, which rows a delivery may still
 * send, and the delivery targets. Plain code, safe in the workflow bundle. The worker, the exceptions
 * view, `npm start`'s stand-in and docs/delivery.md read this; adding a target is an entry in
 * DELIVERY_TARGETS, its config variable in src/config/schema.ts, a migration if the database
 * constrains targets, and its tests.
 *
 *   pending ──2xx──▶ delivered ──a later step refused──▶ compensated
 *      │  ▲
 *      │  └── its target configured again, replayed
 *      ├──no URL on this worker──▶ not_configured
 *      └──4xx, or an earlier step refused──▶ failed
 */

export const OUTBOX_STATUSES = ['pending', 'delivered', 'failed', 'compensated', 'not_configured'] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

/**
 * A row a delivery may still send: pending, or parked as `not_configured` (pending again once its
 * target has a URL). The SQL that picks deliverable rows binds this list.
 */
export const DELIVERABLE_STATUSES = ['pending', 'not_configured'] as const satisfies readonly OutboxStatus[];

export function isDeliverable(status: OutboxStatus): boolean {
  return (DELIVERABLE_STATUSES as readonly OutboxStatus[]).includes(status);
}

/**
 * The downstream APIs a payment's effects go to. `variable` is the URL's environment variable (its
 * config key is `configKey`), `actions` what reconcile may ask of it, each with the compensation that
 * undoes it, if any. The stand-in serves `/<name>` for each.
 */
export const DELIVERY_TARGETS = {
  carrier: {
    label: 'carrier',
    variable: 'SETTLE_CARRIER_URL',
    configKey: 'carrierUrl',
    /** Release the shipment's hold once money is captured. */
    actions: ['release_hold'],
    /** Its undo: ask for `hold` again, under the key `<event id>:carrier:rehold`. */
    compensation: { action: 'hold', keyAction: 'rehold' },
  },
  erp: {
    label: 'ERP',
    variable: 'SETTLE_ERP_URL',
    configKey: 'erpUrl',
    /** Post each capture or refund ledger entry; a refusal is compensated by a `reversal` entry. */
    actions: ['post_ledger_entry'],
  },
} as const;

export type OutboxTarget = keyof typeof DELIVERY_TARGETS;
type DeliveryTarget = (typeof DELIVERY_TARGETS)[OutboxTarget];
export type TargetConfigKey = DeliveryTarget['configKey'];

export const OUTBOX_TARGETS = Object.keys(DELIVERY_TARGETS) as OutboxTarget[];

/** The target's URL in a configuration, or undefined when unset. */
export function targetUrl(
  config: Partial<Record<TargetConfigKey, string>>,
  target: OutboxTarget,
): string | undefined {
  return config[DELIVERY_TARGETS[target].configKey];
}

/** Only the targets' URLs of a configuration (what the delivery activities are given). */
export function targetUrls(
  config: Partial<Record<TargetConfigKey, string>>,
): Partial<Record<TargetConfigKey, string>> {
  return Object.fromEntries(
    OUTBOX_TARGETS.map((target) => [DELIVERY_TARGETS[target].configKey, targetUrl(config, target)]),
  );
}

/** The URL variables a configuration leaves unset, in table order. */
export function unsetTargetVariables(config: Partial<Record<TargetConfigKey, string>>): string[] {
  return OUTBOX_TARGETS.filter((target) => !targetUrl(config, target)).map(
    (target) => DELIVERY_TARGETS[target].variable,
  );
}

/**
 * The downstream `Idempotency-Key` of an effect: identical on every retry of the same effect (the
 * event, the target and what is asked of it).
 */
export function downstreamIdempotencyKey(eventId: string, target: string, action: string): string {
  return `${eventId}:${target}:${action}`;
}
