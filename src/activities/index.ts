import type pg from 'pg';
import type { PaymentEvent } from '../domain/payment-event';
import { reconcilePayment, type ReconcileHooks } from './reconcile-payment';

export type ActivityDependencies = {
  pool: pg.Pool;
  /** Test seams for fault injection; empty in production. */
  hooks?: ReconcileHooks;
};

/** Builds the activities with their dependencies injected; workflows import this type only. */
export function createActivities({ pool, hooks = {} }: ActivityDependencies) {
  return {
    reconcilePayment: (event: PaymentEvent) => reconcilePayment(pool, event, hooks),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ReconcileResult } from './reconcile-payment';
