/**
 * The outbox lifecycle in one place: what a row's status means, which rows a delivery may still
 * send, and the delivery targets. Plain code, safe in the workflow bundle. The worker, the exceptions
 * view, `npm start`'s stand-in and docs/delivery.md read this. Adding a target is an entry in
 * DELIVERY_TARGETS, its two example lines (.env.example, deploy/kubernetes/base/secrets/settle.env.example)
 * and its tests: reconcile, delivery, compensation (its undo), the answer and address policies, the
 * configuration variables (src/config/schema.ts), the database's list of targets
 * (db/generated-checks.ts) and the proof harness read the table, and test/unit/delivery-targets.test.ts
 * names each line compose, the manifests and the Helm chart still need (docs/delivery.md).
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

/** What reconcile has decided for one event, inside its transaction: what a target's effect reads. */
export type EffectContext = {
  event: {
    id: string;
    type: string;
    data: { shipment_id: string; payment_id: string; amount: number; currency: string };
  };
  /** The ledger entry this event appended, if any. */
  entry?: { entryId: number; kind: 'capture' | 'refund' };
  /** The shipment's hold before this event. */
  holdStatus: 'held' | 'released';
};

/** The row an undo is built from: the delivered effect's shipment and body. */
export type UndoneRow = { shipmentId: string; body: Record<string, unknown> };

/** How a delivered effect is undone by calling its target again (the saga's compensation). */
type TargetUndo = {
  /** The action asked of the target; the call's key is `<event id>:<target>:<keyAction>`. */
  action: string;
  keyAction: string;
  /** The call's body after `action` (every call also names its `audience`), from the row it undoes. */
  body(row: UndoneRow): Record<string, unknown>;
  /** How the row's notes name the undo: `<name> not sent: …`, `<name> refused: …`, `<name> not yet done: …`. */
  name: string;
  /** The saga step's name, and the activity's summary in the Temporal UI. */
  step: string;
  summary: string;
  /** The note on the row once the target confirmed the undo. */
  note: string;
  /** The undo activity's status once the target confirmed it (in workflow history: UndoneStatus). */
  status: string;
  /** Whether the confirmed undo holds the shipment again. */
  holdsShipment: boolean;
};

export type DeliveryTarget = {
  /** How messages name it. */
  label: string;
  /** The URL's environment variable; `configKey` its key in the configuration. */
  variable: string;
  configKey: string;
  /** What reconcile asks of it (the outbox row's action, part of its idempotency key). */
  action: string;
  /** The row's body for this event, or undefined when the event asks nothing of this target. */
  effect(context: EffectContext): Record<string, unknown> | undefined;
  /** Whether a delivered row releases the shipment's hold (in the same statement). */
  releasesShipment: boolean;
  /**
   * Whether it is the operator's own API. Its answers are then read by the internal-API policy: a
   * 4xx (but 408 and 429) is a refusal retrying cannot change, and the saga compensates. A target
   * that is not (a third party's receiver) is read as a customer's endpoint is: only 410 ends it,
   * any other failure may be a misconfiguration on its side and is retried (src/activities/downstream.ts).
   */
  internal: boolean;
  /**
   * Which addresses its URL may reach: `private`, the operator's network (private and loopback
   * addresses allowed), or `public`, globally reachable addresses only unless
   * SETTLE_ALLOW_PRIVATE_TARGETS (the reminders' guard, src/lib/target-policy.ts).
   */
  network: 'private' | 'public';
  /** Its undo by a call, if any; a target without one is undone in the ledger (reversal entries). */
  undo?: TargetUndo;
};

/**
 * The downstream APIs a payment's effects go to, in delivery order: reconcile writes one outbox row
 * per target whose `effect` has a body, the workflow delivers them in this order and, after a refusal,
 * undoes the delivered ones that have an `undo`, newest first. The stand-in serves `/<name>` for each.
 */
export const DELIVERY_TARGETS = {
  carrier: {
    label: 'carrier',
    variable: 'SETTLE_CARRIER_URL',
    configKey: 'carrierUrl',
    /** Release the shipment's hold once money is captured. */
    action: 'release_hold',
    effect: ({ event, entry, holdStatus }) =>
      entry?.kind === 'capture' && holdStatus === 'held'
        ? { shipment_id: event.data.shipment_id, payment_id: event.data.payment_id, reason: event.type }
        : undefined,
    releasesShipment: true,
    internal: true,
    network: 'private',
    /** Ask for `hold` again, under the key `<event id>:carrier:rehold`. */
    undo: {
      action: 'hold',
      keyAction: 'rehold',
      body: ({ shipmentId, body }) => ({
        shipment_id: shipmentId,
        payment_id: body.payment_id,
        reason: 'compensation',
      }),
      name: 're-hold',
      step: 're-hold the shipment at the carrier',
      summary: 'carrier hold · compensate: re-hold the shipment',
      note: 'compensated: the carrier re-held the shipment',
      status: 'reheld',
      holdsShipment: true,
    },
  },
  erp: {
    label: 'ERP',
    variable: 'SETTLE_ERP_URL',
    configKey: 'erpUrl',
    /** Post each capture or refund ledger entry; a refusal is compensated by a `reversal` entry. */
    action: 'post_ledger_entry',
    effect: ({ event, entry }) =>
      entry
        ? {
            entry_id: entry.entryId,
            kind: entry.kind,
            shipment_id: event.data.shipment_id,
            payment_id: event.data.payment_id,
            amount: event.data.amount,
            currency: event.data.currency,
          }
        : undefined,
    releasesShipment: false,
    internal: true,
    network: 'private',
  },
} as const satisfies Record<string, DeliveryTarget>;

export type OutboxTarget = keyof typeof DELIVERY_TARGETS;
export type TargetConfigKey = (typeof DELIVERY_TARGETS)[OutboxTarget]['configKey'];

export const OUTBOX_TARGETS = Object.keys(DELIVERY_TARGETS) as OutboxTarget[];

/** What the undo activity answers once a target confirmed its undo: each target's `undo.status` (`reheld`). */
export type UndoneStatus = {
  [T in OutboxTarget]: (typeof DELIVERY_TARGETS)[T] extends { undo: { status: infer S } } ? S : never;
}[OutboxTarget];

/** A target's entry, typed as the table's rows are (optional fields included). */
export function deliveryTarget(target: OutboxTarget): DeliveryTarget {
  return DELIVERY_TARGETS[target];
}

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

/**
 * The variables a configuration leaves unset for delivery: each target's URL, in table order; once
 * every URL is set, SETTLE_OUTBOUND_SECRET when a target has no secret of its own to sign with.
 */
export function unsetTargetVariables(
  config: Partial<Record<TargetConfigKey, string>> & SigningSecrets,
): string[] {
  const urls = OUTBOX_TARGETS.filter((target) => !targetUrl(config, target)).map(
    (target) => DELIVERY_TARGETS[target].variable,
  );
  if (urls.length > 0) return urls;
  const unsigned = OUTBOX_TARGETS.some((target) => targetSigningSecrets(config, target).secrets.length === 0);
  return unsigned ? [OUTBOUND_SECRET_VARIABLE] : [];
}

/** The config key of a target's own signing secrets (`carrierSecret`). */
export type TargetSecretKey = `${OutboxTarget}Secret`;

/** The variable of a target's own signing secrets: SETTLE_<TARGET>_SECRET (SETTLE_CARRIER_SECRET). */
export function targetSecretVariable(target: OutboxTarget): string {
  return `SETTLE_${target.toUpperCase()}_SECRET`;
}

export function targetSecretKey(target: OutboxTarget): TargetSecretKey {
  return `${target}Secret`;
}

/** Every target's secret key, in table order. */
export const TARGET_SECRET_KEYS: TargetSecretKey[] = OUTBOX_TARGETS.map(targetSecretKey);

/**
 * The secrets that sign settle's outbound calls: SETTLE_OUTBOUND_SECRET and each target's own for the
 * carrier and the ERP, SETTLE_REMINDER_SECRET for the customers' reminders.
 */
export type SigningSecrets = Partial<Record<TargetSecretKey | 'outboundSecret' | 'reminderSecret', string[]>>;

/** Every signing secret's config key. */
export const SIGNING_SECRET_KEYS = ['outboundSecret', ...TARGET_SECRET_KEYS, 'reminderSecret'] as const;

/** Only the signing secrets of a configuration (what the delivery activities are given). */
export function signingSecrets(config: SigningSecrets): SigningSecrets {
  return Object.fromEntries(SIGNING_SECRET_KEYS.map((key) => [key, config[key] ?? []]));
}

/** The reminders' signing secrets' variable: never SETTLE_OUTBOUND_SECRET's, which the carrier and ERP trust. */
export const REMINDER_SECRET_VARIABLE = 'SETTLE_REMINDER_SECRET';

/**
 * What a signed call's body names as its audience (its `audience` field, covered by the signature):
 * the target (`carrier`, `erp`) for settle's own APIs, the webhook URL itself for a customer's
 * reminder. A receiver checks it names itself, so a body signed for one receiver never takes effect
 * at another (docs/delivery.md, "Signed calls").
 */
export function callAudience(to: { target: OutboxTarget } | { webhookUrl: string }): string {
  return 'target' in to ? to.target : to.webhookUrl;
}

/** The global signing secrets' variable, used when a target has none of its own. */
export const OUTBOUND_SECRET_VARIABLE = 'SETTLE_OUTBOUND_SECRET';

/**
 * The secrets a call to `target` is signed with: the target's own (SETTLE_<TARGET>_SECRET) when set,
 * else SETTLE_OUTBOUND_SECRET's; the first signs, the others are there for the receiver's rotation.
 * `variable` names where they came from; `secrets` is empty when neither is set.
 */
export function targetSigningSecrets(
  config: SigningSecrets,
  target: OutboxTarget,
): { variable: string; secrets: string[] } {
  const own = config[targetSecretKey(target)] ?? [];
  if (own.length > 0) return { variable: targetSecretVariable(target), secrets: own };
  return { variable: OUTBOUND_SECRET_VARIABLE, secrets: config.outboundSecret ?? [] };
}

/**
 * Where a call to `target` goes and what signs it, or the variable that is missing: its URL's, else
 * that of the secrets it would be signed with (no call goes unsigned).
 */
export function targetEndpoint(
  config: Partial<Record<TargetConfigKey, string>> & SigningSecrets,
  target: OutboxTarget,
): { url: string; signingSecret: string } | { missing: string } {
  const url = targetUrl(config, target);
  if (!url) return { missing: DELIVERY_TARGETS[target].variable };
  const signing = targetSigningSecrets(config, target);
  if (signing.secrets.length === 0) return { missing: signing.variable };
  return { url, signingSecret: signing.secrets[0]! };
}

/**
 * The downstream `Idempotency-Key` of an effect: identical on every retry of the same effect (the
 * event, the target and what is asked of it).
 */
export function downstreamIdempotencyKey(eventId: string, target: string, action: string): string {
  return `${eventId}:${target}:${action}`;
}
