import type { PaymentEventType } from './payment-event';

export const PAYMENT_STATUSES = [
  'pending',
  'authorized',
  'captured',
  'settled',
  'refunded',
  'failed',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** The forward-only order; `failed` stands outside it. */
const FORWARD_RANK: Record<Exclude<PaymentStatus, 'failed'>, number> = {
  pending: 0,
  authorized: 1,
  captured: 2,
  settled: 3,
  refunded: 4,
};

const STATUS_FOR_EVENT: Record<PaymentEventType, PaymentStatus> = {
  'payment.authorized': 'authorized',
  'payment.captured': 'captured',
  'payment.settled': 'settled',
  'payment.refunded': 'refunded',
  'payment.failed': 'failed',
};

export type Transition = { kind: 'advance'; from: PaymentStatus; to: PaymentStatus } | { kind: 'stale' };

/**
 * Status only moves forward: pending → authorized → captured → settled → refunded, skipping allowed;
 * `failed` only from pending or authorized, and nothing leaves `failed`. Each refund event is its own
 * refund, so `refunded → refunded` is an advance (it appends its own ledger entry).
 */
export function decideTransition(current: PaymentStatus, type: PaymentEventType): Transition {
  const target = STATUS_FOR_EVENT[type];
  if (current === 'failed') return { kind: 'stale' };
  if (target === 'failed') {
    return current === 'pending' || current === 'authorized'
      ? { kind: 'advance', from: current, to: 'failed' }
      : { kind: 'stale' };
  }
  if (target === 'refunded' && current === 'refunded') return { kind: 'advance', from: current, to: target };
  return FORWARD_RANK[target] > FORWARD_RANK[current]
    ? { kind: 'advance', from: current, to: target }
    : { kind: 'stale' };
}

/** Money is captured once per payment, by whichever of captured/settled arrives first. */
export function capturesMoney(to: PaymentStatus): boolean {
  return to === 'captured' || to === 'settled';
}
