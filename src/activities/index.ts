import type pg from 'pg';
import { releaseOutboxAttempt, type StartedOutboxRow } from '../db/outbox';
import { OUTBOX_TARGETS, targetEndpoint } from '../domain/outbox';
import type { PaymentEvent } from '../domain/payment-event';
import type {
  CompensationInput,
  FailReminderInput,
  InvalidRunInput,
  OutboxInput,
  ReminderDeliveryInput,
} from '../domain/workflow-contracts';
import { createHttpClient, type HttpClient } from '../lib/http';
import { traceDownstreamCall } from '../tracing/tracing';
import { compensatePaymentEffects, undoDelivery } from './compensate-payment';
import { deliverOutboxRow, deliverOutboxRowThenStart, reconcileAndDeliver } from './deliver-outbox';
import { confirmReminderCancelled, deliverReminder, failReminder } from './deliver-reminder';
import {
  DEFAULT_DELIVERY_TUNING,
  type DeliveryDependencies,
  type DeliveryTuning,
  type DownstreamConfig,
} from './downstream';
import { reconcilePayment, reconcilePaymentThenStart } from './reconcile-payment';
import { recordInvalidRun } from './record-invalid-run';
import { OPEN_ACCOUNT_POLICY, type AccountPolicy } from '../domain/payment-rules';

export type ActivityDependencies = {
  pool: pg.Pool;
  /** settle's one HTTP client; every downstream call goes through it. */
  http?: HttpClient;
  /** Downstream targets and the outbound secret; an unset target is reported on its delivery. */
  config?: DownstreamConfig;
  /** Request timeout and reminder lease; the defaults suit production, tests shorten them. */
  tuning?: Partial<DeliveryTuning>;
  /** The provider accounts whose payments apply (SETTLE_STRIPE_ACCOUNTS, SETTLE_ADYEN_MERCHANT_ACCOUNTS). */
  accounts?: AccountPolicy;
};

/** Builds the activities with their dependencies injected; workflows import this type only. */
export function createActivities({
  pool,
  http = createHttpClient({ wrap: traceDownstreamCall }),
  config = {},
  tuning,
  accounts = OPEN_ACCOUNT_POLICY,
}: ActivityDependencies) {
  const delivery: DeliveryDependencies = {
    pool,
    http,
    config,
    tuning: { ...DEFAULT_DELIVERY_TUNING, ...tuning },
  };
  // A lease shorter than one call would let a second attempt start while the first may still deliver.
  if (delivery.tuning.reminderLeaseMs <= delivery.tuning.requestTimeoutMs) {
    throw new Error('the reminder lease must be longer than the request timeout');
  }
  const steps = {
    reconcilePayment: (event: PaymentEvent) => reconcilePayment(pool, event, accounts),
    deliverOutboxRow: (input: OutboxInput) => deliverOutboxRow(delivery, input),
  };
  // The targets this worker can call (a URL and a secret): a new claim's first row to one of them is
  // stored with its attempt counted.
  const callable = OUTBOX_TARGETS.filter((target) => !('missing' in targetEndpoint(config, target)));
  const firstPassSteps = {
    reconcilePaymentThenStart: (event: PaymentEvent) =>
      reconcilePaymentThenStart(pool, event, accounts, callable),
    releaseOutboxAttempt: (outboxId: number) => releaseOutboxAttempt(pool, outboxId),
    deliverOutboxRowThenStart: (input: OutboxInput, started?: StartedOutboxRow, next?: OutboxInput) =>
      deliverOutboxRowThenStart(delivery, input, started, next),
  };
  return {
    ...steps,
    reconcileAndDeliver: (event: PaymentEvent) =>
      reconcileAndDeliver(firstPassSteps, delivery.tuning.requestTimeoutMs, event),
    // The generic undo under the activity type its runs recorded.
    reholdShipment: (input: OutboxInput) => undoDelivery(delivery, input),
    compensatePaymentEffects: (input: CompensationInput) => compensatePaymentEffects(pool, input),
    deliverReminder: (input: ReminderDeliveryInput) => deliverReminder(delivery, input),
    failReminder: (input: FailReminderInput) => failReminder(pool, input),
    confirmReminderCancelled: (input: ReminderDeliveryInput) => confirmReminderCancelled(pool, input),
    recordInvalidRun: (input: InvalidRunInput) => recordInvalidRun(pool, input),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { DeliveryTuning } from './downstream';
