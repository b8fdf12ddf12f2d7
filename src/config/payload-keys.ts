import { SECRET_MIN_DISTINCT, varied } from './secret-strength';

/** One key of the payload codec (temporal/payload-codec.ts): its ID, written into every payload it encrypts. */
export type PayloadKey = { id: string; key: Buffer };

/** A key ID as it is written into payload metadata: short, printable, no separators. */
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const PAYLOAD_KEY_BYTES = 32;

/**
 * Parses `<key id>:<base64 of 32 bytes>[,...]`, the form of SETTLE_PAYLOAD_KEYS and of the file
 * SETTLE_PAYLOAD_KEYS_FILE names (commas or new lines between keys there). The first key encrypts,
 * all of them decrypt. Returns the keys or the first problem, which never quotes key material.
 */
export function parsePayloadKeys(text: string): { keys: PayloadKey[] } | { problem: string } {
  const items = text
    .split(/[,\n]/)
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) return { problem: 'names no key (<key id>:<base64 of 32 bytes>)' };
  const keys: PayloadKey[] = [];
  for (const [index, item] of items.entries()) {
    const separator = item.indexOf(':');
    const id = separator < 0 ? '' : item.slice(0, separator);
    const encoded = separator < 0 ? '' : item.slice(separator + 1);
    if (!KEY_ID.test(id)) {
      return {
        problem: `key ${index + 1} must be <key id>:<base64 of 32 bytes>, the ID of letters, digits, '.', '_' or '-'`,
      };
    }
    const key = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
    if (key.length !== PAYLOAD_KEY_BYTES) {
      return {
        problem: `key "${id}" must be the base64 of ${PAYLOAD_KEY_BYTES} random bytes (openssl rand -base64 32)`,
      };
    }
    // The same rule as every other secret's random part: 32 bytes of one repeated pattern (all zeros,
    // `abab…`) have the length of a key and none of its entropy.
    if (!varied(key)) {
      return {
        problem: `key "${id}" must be the base64 of ${PAYLOAD_KEY_BYTES} random bytes, at least ${SECRET_MIN_DISTINCT} of them different (openssl rand -base64 32)`,
      };
    }
    if (keys.some((known) => known.id === id)) return { problem: `key ID "${id}" appears twice` };
    keys.push({ id, key });
  }
  return { keys };
}
