import { readFileSync } from 'node:fs';
import { ConfigError } from '../../domain/config-error';
import { defineProvider } from '../module';
import { createPaypalAdapter, type PaypalAdapterOptions } from './adapter';
import { paypalCombinationIssues, paypalVariables, paypalWebhookIds } from './config';
import { paypalOpenApi } from './openapi';
import { createPaypalRecoverySource } from './recovery-source';
import { createPaypalRest } from './rest';
import { paypalRequestFor } from './simulator';

/**
 * One confirmation request's limit at PayPal's API, well inside a provider's patience for an answer:
 * past it the delivery is a 503 and PayPal retries it.
 */
const PAYPAL_CONFIRM_TIMEOUT_MS = 5_000;

/** A PEM read at start: a path that cannot be read, or holds no certificate, stops the process naming `variable`. */
function readPem(variable: string, path: string, marker: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError([{ variable, message: `cannot be read: ${code} (${path})` }]);
  }
  if (!text.includes(marker)) throw new ConfigError([{ variable, message: `holds no ${what} (${path})` }]);
  return text;
}

/**
 * PayPal: its certificate signature (fetched from PayPal, or SETTLE_PAYPAL_CERT_PATH), each
 * transmission taken once, each event confirmed with its REST API when the sweep's credentials are
 * set; its webhook-events API for the recovery sweep.
 */
export const paypal = defineProvider({
  name: 'paypal',
  label: 'PayPal',
  variables: paypalVariables,
  combinationIssues: paypalCombinationIssues,
  takesWebhooks: (config) => paypalWebhookIds(config).length > 0,
  webhookVariables: 'SETTLE_PAYPAL_WEBHOOK_ID',
  route: { kind: 'event' },
  webhookAdapter(config, { logger, testing }) {
    const webhookIds = paypalWebhookIds(config);
    const api =
      config.paypalClientId && config.paypalClientSecret
        ? createPaypalRest({
            clientId: config.paypalClientId,
            clientSecret: config.paypalClientSecret,
            apiBase: config.paypalApiBase,
            timeoutMs: PAYPAL_CONFIRM_TIMEOUT_MS,
          })
        : undefined;
    if (webhookIds.length > 0 && !api) {
      logger?.warn(
        { provider: 'paypal' },
        'PayPal webhooks are taken on their signature alone, which covers only a CRC32 of the body: each ' +
          'transmission ID is taken once, but a body forged to the same CRC32 under a transmission settle has ' +
          'not seen yet would take effect. Set SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET to confirm ' +
          "every event with PayPal's API (docs/providers.md)",
      );
    }
    return createPaypalAdapter({
      webhookIds,
      api,
      // Read once at start: a path that cannot be read stops the gateway, naming the variable.
      certificatePem: config.paypalCertPath
        ? readPem(
            'SETTLE_PAYPAL_CERT_PATH',
            config.paypalCertPath,
            '-----BEGIN CERTIFICATE-----',
            'PEM certificate',
          )
        : undefined,
      ...(testing as Pick<PaypalAdapterOptions, 'certOrigin' | 'trustedCas'> | undefined),
    });
  },
  exportAdapter: () => createPaypalAdapter({}),
  openapi: paypalOpenApi,
  recovery: {
    credentials: 'SETTLE_PAYPAL_CLIENT_ID and SETTLE_PAYPAL_CLIENT_SECRET (or _FILE)',
    everyVariable: 'SETTLE_PAYPAL_SWEEP_EVERY',
    on: (config) => !!config.paypalClientId && !!config.paypalClientSecret,
    everyMs: (config) => config.paypalSweepEveryMs,
    source: (config) =>
      createPaypalRecoverySource({
        clientId: config.paypalClientId!,
        clientSecret: config.paypalClientSecret!,
        apiBase: config.paypalApiBase,
      }),
  },
  simulator: {
    signer(config, { signingKeyFile }) {
      const webhookId = paypalWebhookIds(config)[0];
      if (!webhookId) return { ok: false, message: '--provider paypal needs SETTLE_PAYPAL_WEBHOOK_ID.' };
      if (!signingKeyFile) {
        return {
          ok: false,
          message:
            '--provider paypal needs --signing-key <key.pem>: the private key of the certificate the gateway ' +
            "verifies with (SETTLE_PAYPAL_CERT_PATH). Only PayPal holds the key of PayPal's own certificate.",
        };
      }
      const privateKeyPem = readPem('--signing-key', signingKeyFile, 'PRIVATE KEY-----', 'PEM private key');
      return { ok: true, sign: (event) => paypalRequestFor({ webhookId, privateKeyPem }, event) };
    },
  },
  accountRule: (config) => ({
    kind: 'listed',
    accounts: config.paypalMerchantIds,
    noun: 'PayPal merchant',
    variable: 'SETTLE_PAYPAL_MERCHANT_IDS',
  }),
  deploy: {
    variables: [
      { name: 'SETTLE_PAYPAL_WEBHOOK_ID', secret: false, required: true },
      { name: 'SETTLE_PAYPAL_WEBHOOK_IDS', secret: false },
      { name: 'SETTLE_PAYPAL_CERT_PATH', secret: false },
      { name: 'SETTLE_PAYPAL_CLIENT_ID', secret: false },
      { name: 'SETTLE_PAYPAL_CLIENT_SECRET', secret: true, roles: ['gateway', 'worker'] },
      { name: 'SETTLE_PAYPAL_API_BASE', secret: false },
      { name: 'SETTLE_PAYPAL_SWEEP_EVERY', secret: false },
      { name: 'SETTLE_PAYPAL_MERCHANT_IDS', secret: false },
    ],
    files: [
      {
        variable: 'SETTLE_PAYPAL_CERT_PATH',
        what: "PayPal's webhook-signing certificate (PEM), verified offline instead of fetched",
      },
    ],
    egress: [
      {
        host: 'api-m.paypal.com',
        port: 443,
        when: 'SETTLE_PAYPAL_CLIENT_ID and _SECRET are set (confirmation and the recovery sweep)',
      },
      {
        host: 'api.paypal.com',
        port: 443,
        when: 'SETTLE_PAYPAL_CERT_PATH is unset (the signing certificate is fetched from PAYPAL-CERT-URL)',
      },
    ],
  },
});
