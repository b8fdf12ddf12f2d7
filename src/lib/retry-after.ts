/** A receiver may not park a delivery for longer than this, whatever its Retry-After says. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * The one place a `Retry-After` header becomes the next retry delay: delta-seconds (`2`) or an HTTP
 * date (`Wed, 21 Oct 2026 07:28:00 GMT`). Undefined when the header is absent, malformed or already
 * past, so the caller falls back to its own backoff; capped at MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(
  value: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  let ms: number;
  if (/^\d+$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  if (ms <= 0) return undefined;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}
