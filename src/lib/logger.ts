import pino from 'pino';
import { loadSettings } from '../config';
import { WORKFLOW_ID_IN_TEXT } from '../domain/ids';
import { shortHash } from './hash';

// Read when this module loads, before the rest of the configuration: a bad SETTLE_LOG_LEVEL or
// SETTLE_LOG_FILE throws ConfigError naming it, which stops the process (bin/settle.js prints it).
const { logLevel, logFile } = loadSettings();

/**
 * Structured JSON logs on stdout, or appended to SETTLE_LOG_FILE when set (synchronously, so a
 * killed process leaves whole lines). Event IDs never appear raw: see redactIds. Secrets are never
 * passed in.
 */
export const logger = pino(
  {
    base: { service: 'settle' },
    level: logLevel,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  },
  logFile ? pino.destination({ dest: logFile, append: true, sync: true, mkdir: true }) : undefined,
);
export type Logger = pino.Logger;

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
