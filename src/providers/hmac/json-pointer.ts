/**
 * RFC 6901 JSON pointers, as HMAC provider specs name where a field lives (`/data/object/payment/id`).
 * Only reading: `~1` is `/`, `~0` is `~`; an array is indexed by its decimal position.
 */

/** The reference tokens of a pointer (`/a/b~1c` → `a`, `b/c`); the empty pointer is the whole document. */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`JSON pointer ${JSON.stringify(pointer)} must start with /`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The value `pointer` names in `document`, or undefined when any step is missing. */
export function readPointer(document: unknown, pointer: string): unknown {
  let current = document;
  for (const token of pointerTokens(pointer)) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === 'object') {
      if (!Object.prototype.hasOwnProperty.call(current, token)) return undefined;
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}

/**
 * A pointer as the field path refusals name (`/data/object/payment/amount_money/amount` →
 * `data.object.payment.amount_money.amount`), the way the other adapters name the provider's fields.
 */
export function pointerPath(pointer: string): string {
  const tokens = pointerTokens(pointer);
  return tokens.length ? tokens.join('.') : '(body)';
}

/** Sets the value `pointer` names in `document`, creating the objects on the way (for simulators). */
export function writePointer(document: Record<string, unknown>, pointer: string, value: unknown): void {
  const tokens = pointerTokens(pointer);
  const last = tokens.pop();
  if (last === undefined) throw new Error('the empty pointer names the whole document');
  let current = document;
  for (const token of tokens) {
    const next = current[token];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) current[token] = {};
    current = current[token] as Record<string, unknown>;
  }
  current[last] = value;
}
