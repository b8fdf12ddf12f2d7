/**
 * Every secret's random part has at least this many different characters: a repeated or counted
 * pattern (`aaaa…`, `0123…0123`) has the length of a secret and none of its entropy. (Its own module
 * so that payload-keys.ts, which schema.ts imports, applies the same rule.)
 */
export const SECRET_MIN_DISTINCT = 8;

/** True when `text` (a string's characters, or a key's bytes) has at least SECRET_MIN_DISTINCT different ones. */
export function varied(text: string | Uint8Array): boolean {
  return new Set<string | number>(text).size >= SECRET_MIN_DISTINCT;
}
