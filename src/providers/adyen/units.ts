import { fromProviderUnits, type CanonicalAmount } from '../../domain/money';

/**
 * Adyen's units (docs/providers.md, "Money units"; docs.adyen.com/development-resources/currency-codes):
 * ISO 4217's minor units but for the currencies its table marks "differs from standard".
 */
export const ADYEN_DECIMALS_OTHER_THAN_ISO: Readonly<Record<string, number>> = {
  CLP: 2, // ISO: 0
  CVE: 0, // ISO: 2
  IDR: 0, // ISO: 2
  ISK: 2, // ISO: 0
};

/** An Adyen `amount.value` of an ISO currency as ISO minor units (or as stated, if inexact). */
export function adyenToIso(value: number, currency: string): CanonicalAmount {
  const decimals = ADYEN_DECIMALS_OTHER_THAN_ISO[currency];
  return decimals === undefined ? { amount: value } : fromProviderUnits(value, decimals, currency);
}
