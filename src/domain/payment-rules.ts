import { formatUnits, isoMinorDigits } from './money';
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

/** What a shipment expects to be paid, each part unset (null) when the shipment names none. */
export type PaymentExpectation = { amount: number | null; currency: string | null };

/**
 * The accounts of one provider whose payments settle applies (its module's `accountRule`, from a
 * variable such as SETTLE_STRIPE_ACCOUNTS). `platform`: an event naming no account is the platform's
 * own and always taken, one naming an account only if it is listed (an empty list takes no other
 * account). `listed`: an empty list takes every account, else the event's account must be listed.
 */
export type AccountRule = {
  kind: 'platform' | 'listed';
  accounts: readonly string[];
  /** How the refusal names an account (`Stripe account`) and where it is listed (the variable). */
  noun: string;
  variable: string;
};

/** Each provider's account rule, by its name; a provider without one takes every account. */
export type AccountPolicy = Readonly<Record<string, AccountRule>>;

export const OPEN_ACCOUNT_POLICY: AccountPolicy = {};

export const MISMATCH_REASONS = [
  'amount_short',
  'amount_over',
  'amount_inexact',
  'currency_differs',
  'account_not_allowed',
] as const;
export type MismatchReason = (typeof MISMATCH_REASONS)[number];
export type Mismatch = { reason: MismatchReason; detail: string };

/** The event fields the match reads: the canonical event's `data` (provider adapters set the last two). */
export type PaymentFacts = {
  type: PaymentEventType;
  amount: number;
  currency: string;
  provider?: unknown;
  provider_account?: unknown;
  /** Set by a provider adapter when ISO's minor units cannot express the amount (src/domain/money.ts). */
  amount_decimals?: unknown;
};

/** Types that pay for the shipment: their amount and currency must be what it expects. */
const PAYS_FOR_SHIPMENT: ReadonlySet<PaymentEventType> = new Set([
  'payment.authorized',
  'payment.captured',
  'payment.settled',
]);

/**
 * Whether a payment may move its shipment, or why not (a `needs_review` with this reason, nothing
 * released). The account comes first, for every type: a payment of an account not allowed pays for
 * nothing of this merchant's. Then, for every type, an amount ISO 4217 minor units cannot express
 * (`amount_decimals`): no ledger entry, capture or refund, can hold it unrounded. Then, for a type
 * that pays (authorized, captured, settled), the shipment's expected currency and amount, exactly: a
 * short payment is not applied in part, and payments do not add up across events (a shipment is paid
 * by one payment).
 */
export function paymentMismatch(
  facts: PaymentFacts,
  expected: PaymentExpectation,
  accounts: AccountPolicy,
): Mismatch | undefined {
  const account = typeof facts.provider_account === 'string' ? facts.provider_account : undefined;
  const rule = typeof facts.provider === 'string' ? accounts[facts.provider] : undefined;
  if (rule && !accountAllowed(rule, account)) {
    return {
      reason: 'account_not_allowed',
      detail: `${rule.noun} ${account ?? '(none)'} is not in ${rule.variable}`,
    };
  }
  if (facts.amount_decimals !== undefined) {
    return { reason: 'amount_inexact', detail: inexactDetail(facts) };
  }
  if (!PAYS_FOR_SHIPMENT.has(facts.type)) return undefined;
  if (expected.currency !== null && facts.currency !== expected.currency) {
    return {
      reason: 'currency_differs',
      detail: `paid in ${facts.currency}, the shipment expects ${expected.currency}`,
    };
  }
  if (expected.amount !== null && facts.amount !== expected.amount) {
    const short = facts.amount < expected.amount;
    return {
      reason: short ? 'amount_short' : 'amount_over',
      detail: `paid ${facts.amount}, the shipment expects ${expected.amount} (minor units): ${short ? 'short' : 'over'}`,
    };
  }
  return undefined;
}

/** "paid 1000.50 ISK: inexact, ISO 4217 gives ISK 0 decimals; nothing was rounded". */
function inexactDetail(facts: PaymentFacts): string {
  const decimals = facts.amount_decimals;
  const digits = isoMinorDigits(facts.currency);
  const stated =
    typeof decimals === 'number' && Number.isInteger(decimals) && decimals >= 0 && decimals <= 15
      ? `${formatUnits(facts.amount, facts.currency, decimals)} ${facts.currency}`
      : `${facts.amount} ${facts.currency} in units amount_decimals names`;
  const iso =
    digits === undefined
      ? `ISO 4217 does not list ${facts.currency}`
      : `ISO 4217 gives ${facts.currency} ${digits} decimal(s)`;
  return `paid ${stated}: inexact, ${iso}; nothing was rounded`;
}

function accountAllowed(rule: AccountRule, account: string | undefined): boolean {
  if (rule.kind === 'platform') return account === undefined || rule.accounts.includes(account);
  return rule.accounts.length === 0 || (account !== undefined && rule.accounts.includes(account));
}
