/**
 * The one rule for text at the edge, used by every route and by `settle import` before anything
 * touches the database: PostgreSQL cannot store a NUL character (text and jsonb refuse it) nor an
 * unpaired UTF-16 surrogate (not Unicode at all), so either one, in any string or object key at any
 * depth, in a header or in a path parameter, is a 400 naming the field. JSON nested deeper than
 * MAX_JSON_DEPTH is refused the same way, before it is hashed, validated or stored.
 */

/** Arrays and objects inside one another, the outermost counted as 1; the same for webhooks, reminders and import. */
export const MAX_JSON_DEPTH = 64;

/** One field problem, as the API reports it: `data.amount: must be at least 0`. */
export type FieldIssue = { path: string; message: string };

// A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
// eslint-disable-next-line no-control-regex -- finding the NUL character is the point
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_GLOBAL = new RegExp(UNSTORABLE.source, 'g');

/** Why PostgreSQL could not store this text, or undefined when it can. */
export function unstorableText(text: string): string | undefined {
  const found = UNSTORABLE.exec(text);
  if (!found) return undefined;
  return found[0] === '\u0000'
    ? 'contains a NUL character (\\u0000), which PostgreSQL cannot store'
    : 'contains an unpaired UTF-16 surrogate, which PostgreSQL cannot store';
}

/**
 * A JSON text jsonb can store, for a payload kept as it came (an unmatched provider event): NULs and
 * unpaired surrogates in strings become U+FFFD.
 */
export function storableJson(value: unknown): string {
  return JSON.stringify(value, (_key, child: unknown) =>
    typeof child === 'string' ? child.replace(UNSTORABLE_GLOBAL, '\uFFFD') : child,
  );
}

/** A key shown in a field path with its unstorable characters written as `\uXXXX` escapes. */
function printable(key: string): string {
  return key.replace(
    UNSTORABLE_GLOBAL,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function joinPath(parent: string, segment: string): string {
  return parent ? `${parent}.${segment}` : segment;
}

/**
 * The first place in a parsed JSON value that settle refuses: nesting past `maxDepth`, or a string
 * or key PostgreSQL cannot store. Walks with an explicit stack, so no input can overflow the call stack.
 */
export function findUnstorableJson(value: unknown, maxDepth = MAX_JSON_DEPTH): FieldIssue | undefined {
  const pending: { value: unknown; path: string; depth: number }[] = [{ value, path: '', depth: 0 }];
  while (pending.length) {
    const item = pending.pop()!;
    const path = item.path || '(body)';
    if (typeof item.value === 'string') {
      const problem = unstorableText(item.value);
      if (problem) return { path, message: problem };
      continue;
    }
    if (item.value === null || typeof item.value !== 'object') continue;
    const depth = item.depth + 1;
    if (depth > maxDepth) {
      return { path, message: `is nested deeper than ${maxDepth} levels of arrays and objects` };
    }
    if (Array.isArray(item.value)) {
      for (let index = item.value.length - 1; index >= 0; index -= 1) {
        pending.push({ value: item.value[index], path: joinPath(item.path, String(index)), depth });
      }
      continue;
    }
    const keys = Object.keys(item.value);
    for (let index = keys.length - 1; index >= 0; index -= 1) {
      const key = keys[index]!;
      const keyPath = joinPath(item.path, printable(key));
      const problem = unstorableText(key);
      if (problem) return { path: keyPath, message: `key ${problem}` };
      pending.push({ value: (item.value as Record<string, unknown>)[key], path: keyPath, depth });
    }
  }
  return undefined;
}

export type ParsedJson = { ok: true; value: unknown } | { ok: false; issue: FieldIssue };

/** JSON.parse (itself iterative in V8) followed by the edge rule: the way every untrusted body is read. */
export function parseUntrustedJson(text: string, maxDepth = MAX_JSON_DEPTH): ParsedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, issue: { path: '(body)', message: 'is not valid JSON' } };
  }
  const issue = findUnstorableJson(value, maxDepth);
  return issue ? { ok: false, issue } : { ok: true, value };
}
