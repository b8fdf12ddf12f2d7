import { z } from 'zod';
import { accountList, booleanFlag, secretList, varied, variable } from '../../domain/env-variables';
import type { ConfigIssue } from '../../domain/config-error';

/** Adyen HMAC keys: exactly this many hex digits (the 32-byte key the Customer Area generates). */
export const ADYEN_HMAC_KEY_HEX_DIGITS = 64;
/** Adyen's basic-auth password: at least this long. */
export const BASIC_AUTH_PASSWORD_MIN_CHARACTERS = 16;

/** Adyen's variables: its part of settle's configuration (src/config/schema.ts spreads it in). */
export const adyenVariables = {
  /** Adyen HMAC keys (hex), comma-separated; more than one while rotating. */
  adyenHmacKeys: variable(
    'SETTLE_ADYEN_HMAC_KEYS',
    secretList(
      `each key must be the ${ADYEN_HMAC_KEY_HEX_DIGITS} hex digits of an HMAC key from the Adyen Customer Area`,
      (item) =>
        new RegExp(`^[0-9A-Fa-f]{${ADYEN_HMAC_KEY_HEX_DIGITS}}$`).test(item) && varied(item.toUpperCase()),
    ),
    { secret: true },
  ),
  /**
   * Basic auth Adyen must present on /webhooks/adyen, as user:password. Required with
   * SETTLE_ADYEN_HMAC_KEYS (load.ts) unless SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH is true.
   */
  adyenBasicAuth: variable(
    'SETTLE_ADYEN_BASIC_AUTH',
    z
      .string()
      .refine(
        (value) =>
          new RegExp(`^[^:]+:.{${BASIC_AUTH_PASSWORD_MIN_CHARACTERS},}$`).test(value) &&
          varied(value.slice(value.indexOf(':') + 1)),
        `must be user:password, the password at least ${BASIC_AUTH_PASSWORD_MIN_CHARACTERS} random characters`,
      )
      .optional(),
    { secret: true },
  ),
  /**
   * Adyen merchant accounts whose payments settle applies, comma-separated (each item's
   * merchantAccountCode, which its HMAC signs). Unset: any merchant account the HMAC keys sign for.
   */
  adyenMerchantAccounts: variable(
    'SETTLE_ADYEN_MERCHANT_ACCOUNTS',
    accountList('each account must be an Adyen merchant account code, letters, digits, _ . and -', (item) =>
      /^[A-Za-z0-9_.-]{1,80}$/.test(item),
    ),
  ),
  /** true: take Adyen notifications on their HMAC alone, with no basic auth (an operator's choice). */
  adyenAllowNoBasicAuth: variable('SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH', booleanFlag, { default: 'false' }),
};

/** Adyen's variables as the configuration parses them. */
export type AdyenConfig = {
  [K in keyof typeof adyenVariables]: z.output<(typeof adyenVariables)[K]['schema']>;
};

/**
 * The HMAC covers only some fields of an item, and none of the batch: basic auth keeps everyone but
 * Adyen from sending at all, so going without it is an operator's explicit choice.
 */
export function adyenCombinationIssues(config: Partial<AdyenConfig>): ConfigIssue[] {
  if ((config.adyenHmacKeys ?? []).length === 0 || config.adyenBasicAuth || config.adyenAllowNoBasicAuth)
    return [];
  return [
    {
      variable: 'SETTLE_ADYEN_BASIC_AUTH',
      message:
        'is not set, but SETTLE_ADYEN_HMAC_KEYS is: set it to the user:password of the Adyen webhook ' +
        '(docs/providers.md), or SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH=true to take notifications on their HMAC alone',
    },
  ];
}
