import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export type SignatureHeaders = Record<string, string | string[] | undefined>;

/**
 * Verifies Standard Webhooks signatures against every configured secret, so a secret can be rotated
 * without downtime: during the overlap the provider's signature matches the old or the new one.
 * The library enforces the 5-minute timestamp tolerance in both directions.
 */
export function createSignatureVerifier(secrets: string[]) {
  const webhooks = secrets.map((secret) => new Webhook(secret));
  return function verify(
    rawBody: string,
    headers: SignatureHeaders,
  ): { ok: true } | { ok: false; reason: string } {
    const flat: Record<string, string> = {};
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const value = headers[name];
      if (typeof value === 'string') flat[name] = value;
    }
    if (!/^\d{1,12}$/.test(flat['webhook-timestamp'] ?? ''))
      return { ok: false, reason: 'missing or malformed headers' };
    let reason = 'no secrets configured';
    for (const webhook of webhooks) {
      try {
        webhook.verify(rawBody, flat, { jsonParse: false });
        return { ok: true };
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        reason = error.message;
        if (error.message !== 'No matching signature found') break;
      }
    }
    return { ok: false, reason };
  };
}

/** Signs a body the way a provider does (used by settle's own sender and the tests). */
export function signWebhook(secret: string, msgId: string, body: string, at: Date = new Date()) {
  const webhook = new Webhook(secret);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': webhook.sign(msgId, at, body),
  };
}
