import pino from 'pino';
import { loadSettings } from '../config';

// Read when this module loads, before the rest of the configuration: a bad SETTLE_LOG_LEVEL or
// SETTLE_LOG_FILE throws ConfigError naming it, which stops the process (bin/settle.js prints it).
const { logLevel, logFile } = loadSettings();

/**
 * Structured JSON logs on stdout, or appended to SETTLE_LOG_FILE when set (synchronously, so a
 * killed process leaves whole lines). Event IDs never appear raw: see
 * temporal/redact-ids.ts for the texts Temporal hands over. Secrets are never
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
