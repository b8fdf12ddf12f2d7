import { defineProvider } from '../module';
import { ADYEN_ACCEPTED, createAdyenAdapter } from './adapter';
import { adyenCombinationIssues, adyenVariables } from './config';
import { adyenOpenApi } from './openapi';
import { adyenRequestFor } from './simulator';

/** Adyen: notification batches, an HMAC per item (Adyen's library) behind basic auth; no events API. */
export const adyen = defineProvider({
  name: 'adyen',
  label: 'Adyen',
  variables: adyenVariables,
  combinationIssues: adyenCombinationIssues,
  takesWebhooks: (config) => config.adyenHmacKeys.length > 0,
  webhookVariables: 'SETTLE_ADYEN_HMAC_KEYS',
  route: {
    kind: 'batch',
    accepted: ADYEN_ACCEPTED,
    itemPath: (index, path) => `notificationItems.${index}.NotificationRequestItem.${path}`,
  },
  webhookAdapter: (config) =>
    createAdyenAdapter({ hmacKeys: config.adyenHmacKeys, basicAuth: config.adyenBasicAuth }),
  exportAdapter: () => createAdyenAdapter({ hmacKeys: [] }),
  openapi: adyenOpenApi,
  simulator: {
    signer(config) {
      const hmacKey = config.adyenHmacKeys[0];
      if (!hmacKey) return { ok: false, message: '--provider adyen needs SETTLE_ADYEN_HMAC_KEYS.' };
      return {
        ok: true,
        sign: (event) => adyenRequestFor({ hmacKey, basicAuth: config.adyenBasicAuth }, event),
      };
    },
  },
  accountRule: (config) => ({
    kind: 'listed',
    accounts: config.adyenMerchantAccounts,
    noun: 'Adyen merchant account',
    variable: 'SETTLE_ADYEN_MERCHANT_ACCOUNTS',
  }),
  deploy: {
    variables: [
      { name: 'SETTLE_ADYEN_HMAC_KEYS', secret: true, required: true },
      { name: 'SETTLE_ADYEN_BASIC_AUTH', secret: true },
      { name: 'SETTLE_ADYEN_ALLOW_NO_BASIC_AUTH', secret: false },
      { name: 'SETTLE_ADYEN_MERCHANT_ACCOUNTS', secret: false },
    ],
    files: [],
    egress: [],
  },
});
