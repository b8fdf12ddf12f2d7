/**
 * Money inside settle has one unit: ISO 4217 minor units (EUR 12500 is 125.00, JPY 5000 is 5,000 yen,
 * HUF 500000 is 5,000 forints). The digits come from the `currency-codes` package (ISO 4217 list one;
 * its `publishDate` names the edition), never from `Intl`: ICU's display digits differ from ISO's
 * (HUF, IDR, MGA, IQD on Node 20) and from one Node version to the next. Each provider adapter converts from its
 * provider's own units with `fromProviderUnits`; an amount ISO's minor units cannot express exactly is
 * kept as the provider stated it, marked with `amount_decimals`, and held for review, never rounded.
 *
 * Pure and free of Node built-ins: the workflow bundle loads it (through the payment summary).
 */
import { data as iso4217 } from 'currency-codes';

/** Minor-unit digits by ISO 4217 code: a constant table, built once from the package's list. */
const ISO_MINOR_DIGITS = new Map<string, number>(iso4217.map((entry) => [entry.code, entry.digits]));

/** ISO 4217's minor-unit digits of a code (EUR 2, JPY 0, KWD 3, CLF 4), or undefined for a code ISO does not list. */
export function isoMinorDigits(currency: string): number | undefined {
  return ISO_MINOR_DIGITS.get(currency);
}

export function isIsoCurrency(currency: unknown): currency is string {
  return typeof currency === 'string' && ISO_MINOR_DIGITS.has(currency);
}

/** The refusal of a code ISO 4217 does not list (`ABC`, or one withdrawn), on every route. */
export const NOT_ISO_CURRENCY = 'must be a currency code ISO 4217 lists';

/** A non-negative safe integer: a count of a currency's units, as providers send amounts. */
export function isUnitCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A canonical event's amount fields: `amount` in ISO minor units, or, where ISO's minor units cannot
 * express the provider's amount exactly (1000.50 ISK: ISK has none), the amount as the provider stated
 * it, `amount` counted in units of 10^-`amount_decimals` (100050 with 2). The second never reaches a
 * ledger: the payment rule holds every event that carries `amount_decimals` (`amount_inexact`).
 */
export type CanonicalAmount = { amount: number } | { amount: number; amount_decimals: number };

/**
 * `value` counted in 10^-`decimals` of `currency` (a provider's documented units: Stripe's JPY 0, its
 * ISK 2; Adyen's CLP 2) as ISO minor units: multiplied up, or divided down only when nothing is lost.
 * `value` must be a non-negative safe integer and `currency` an ISO code (the adapters check both).
 * A product past Number.MAX_SAFE_INTEGER is returned as is, for the event schema to refuse as too large.
 */
export function fromProviderUnits(value: number, decimals: number, currency: string): CanonicalAmount {
  const digits = isoMinorDigits(currency);
  if (digits === undefined) throw new Error(`${currency} is not an ISO 4217 code`);
  if (decimals <= digits) return { amount: value * 10 ** (digits - decimals) };
  const divisor = 10 ** (decimals - digits);
  if (value % divisor === 0) return { amount: value / divisor };
  return { amount: value, amount_decimals: decimals };
}

/** Decimal text of major units (`"42"`, `"10.99"`): digits, then optionally a point and digits. */
const DECIMAL_TEXT = /^(\d{1,15})(?:\.(\d{1,15}))?$/;

/**
 * Decimal text of major units (`"100"` TWD, `"10.99"` USD, as some providers state amounts) as the integer it counts and the
 * number of decimals it counts them in (10000 with 2 → 100.00), or undefined when it is not such text
 * or has more than 15 significant digits (beyond them a JavaScript number is no longer exact).
 */
export function readDecimalText(text: unknown): { value: number; decimals: number } | undefined {
  if (typeof text !== 'string') return undefined;
  const match = DECIMAL_TEXT.exec(text);
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  const digits = `${match[1]}${fraction}`.replace(/^0+(?=\d)/, '');
  if (digits.length > 15) return undefined;
  return { value: Number(digits), decimals: fraction.length };
}

/**
 * A shipment's expectation given in major units (`--amount 5000 --currency HUF`) as ISO minor units
 * (500000), exactly, or why not: a code ISO does not list, or more decimals than ISO gives it.
 */
export function majorToMinorUnits(
  text: string,
  currency: string,
): { ok: true; amount: number } | { ok: false; message: string } {
  const digits = isoMinorDigits(currency);
  if (digits === undefined) return { ok: false, message: `currency ${currency} is not an ISO 4217 code` };
  const read = readDecimalText(text);
  if (!read || read.decimals > digits) {
    const example = digits === 0 ? '42' : `42.${'0'.repeat(digits)}`;
    return {
      ok: false,
      message: `amount must be a number of ${currency} with at most ${digits} decimal(s) (ISO 4217), such as ${example}`,
    };
  }
  const amount = read.value * 10 ** (digits - read.decimals);
  if (!Number.isSafeInteger(amount)) return { ok: false, message: 'amount is too large' };
  return { ok: true, amount };
}

/**
 * `amount` counted in 10^-`decimals` as decimal text, by integer arithmetic (12500 with 2 is "125.00",
 * 500 with 0 is "500"). `decimals` defaults to the currency's ISO digits; a code ISO does not list,
 * or decimals outside 1 to 15, show the bare integer.
 */
export function formatUnits(amount: number, currency: string, decimals?: number): string {
  const places = decimals ?? isoMinorDigits(currency) ?? 0;
  const text = String(amount);
  if (!Number.isInteger(places) || places <= 0 || places > 15) return text;
  if (!Number.isSafeInteger(amount) || amount < 0) return text;
  const padded = text.padStart(places + 1, '0');
  return `${padded.slice(0, -places)}.${padded.slice(-places)}`;
}
