/**
 * Stripe's units (docs/providers.md, "Money units"; docs.stripe.com/currencies): an amount counts
 * hundredths of every currency but these. Stripe's own rule, not ISO's: its zero-decimal list has MGA
 * (ISO: 2), and ISK, HUF and TWD stay two-decimal in its API (ISK is 0 in ISO), special cases that
 * only constrain which amounts Stripe accepts (whole krónur; whole forints and dollars in payouts).
 */
export const STRIPE_DECIMALS: Readonly<Record<string, number>> = {
  // Zero-decimal currencies.
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  MGA: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  // Three-decimal currencies.
  BHD: 3,
  JOD: 3,
  KWD: 3,
  OMR: 3,
  TND: 3,
};
const STRIPE_DEFAULT_DECIMALS = 2;

/** How many decimals Stripe counts `currency` (upper case) in. */
export function stripeDecimals(currency: string): number {
  return STRIPE_DECIMALS[currency] ?? STRIPE_DEFAULT_DECIMALS;
}
