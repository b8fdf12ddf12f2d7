import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The payload fingerprint that tells a duplicate (same hash) from a reused ID (another hash). */
export function payloadSha256(payload: unknown): string {
  return sha256Hex(canonicalJson(payload));
}

/** What logs carry instead of a raw event ID: short, stable, not reversible. */
export function shortHash(id: string): string {
  return sha256Hex(id).slice(0, 12);
}
