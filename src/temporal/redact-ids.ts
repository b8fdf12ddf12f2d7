import { WORKFLOW_ID_IN_TEXT } from '../domain/ids';
import { shortHash } from '../lib/hash';

// Temporal's texts (its log entries and their metadata, failure messages, span names) carry workflow
// IDs, and a workflow ID carries the raw event or delivery ID: what settle logs or exports of them
// goes through these first.

/** Replaces the event or delivery ID inside workflow IDs (`payment:<id>`) with its short hash. */
export function redactIds(text: string): string {
  return text.replace(WORKFLOW_ID_IN_TEXT, (_m, kind: string, id: string) => `${kind}:#${shortHash(id)}`);
}

/** Opaque fields that encode a workflow ID (task tokens are base64 of it) are dropped whole. */
const DROPPED_KEYS = new Set(['taskToken']);

/** Redacts every string value of a log record's metadata (Temporal's logger attaches workflow IDs). */
export function redactMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!meta) return meta;
  return Object.fromEntries(
    Object.entries(meta)
      .filter(([key]) => !DROPPED_KEYS.has(key))
      .map(([key, value]) => [
        key,
        typeof value === 'string'
          ? redactIds(value)
          : value && typeof value === 'object' && !Array.isArray(value)
            ? redactMeta(value as Record<string, unknown>)
            : value,
      ]),
  );
}
