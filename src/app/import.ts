import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { admitPaymentEvent, type IngestOutcome } from './admit-payment-event';
import { admitProviderEvent } from './admit-provider-event';
import { describeIssues, readPaymentEvent } from '../domain/payment-event';
import { parseUntrustedJson } from '../domain/untrusted-json';
import { ErrorCode } from '../domain/errors';
import { DEFAULT_MAX_BACKLOG, ImportPace } from './import-pace';
import { PROVIDERS, type ProviderName } from '../providers/registry';
import { inMode, type ProviderMode } from '../providers/types';
import type { TargetLimitsConfig } from '../domain/target-limits';
import type { Services } from './services';

export type ImportCounts = {
  accepted: number;
  duplicate: number;
  ignored: number;
  rejected: number;
  unavailable: number;
};

type ImportProblem = { line: number; event_id: string | null; error: string; message: string };

export type ImportSummary = {
  file: string;
  /** Non-empty lines in the file. */
  lines: number;
  /** Lines handled before the run ended (all of them unless interrupted). */
  processed: number;
  counts: ImportCounts;
  /** Lines refused, with their line numbers: fix them and import again. */
  rejected: ImportProblem[];
  /** Lines PostgreSQL or Temporal could not take after retries: rerun the import to apply them. */
  unavailable: ImportProblem[];
  interrupted: boolean;
  elapsed_ms: number;
};

export type ImportOptions = {
  concurrency: number;
  /** Started runs not yet reconciled before the import waits for the workers (import-pace.ts); 0 never waits. */
  maxBacklog?: number;
  /**
   * The targets' limits as the workers read them (SETTLE_<TARGET>_RATE_LIMIT): runs start no faster
   * than the tightest limited target takes calls (import-pace.ts). Not with a maxBacklog of 0.
   */
  targetLimits?: TargetLimitsConfig;
  /** Stops reading new lines; lines in flight finish, so the summary stays exact. */
  signal?: AbortSignal;
  onProgress?: (processed: number, total: number, counts: ImportCounts) => void;
  /** Attempts for a line while a dependency is unavailable, each pause twice the one before. */
  attempts?: number;
  /**
   * The file is a provider's own export (Stripe events, Adyen NotificationRequestItems, one a line),
   * read through that provider's adapter; no signature is checked, as for any import.
   */
  provider?: ProviderName;
  /** SETTLE_PROVIDER_MODE: a provider event of the other mode is ignored, as at the webhook. */
  providerMode?: ProviderMode;
};

export { DEFAULT_MAX_BACKLOG };

/** Non-empty lines of a file, counted without holding it in memory. */
async function countLines(file: string): Promise<number> {
  let lines = 0;
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (line.trim()) lines += 1;
  }
  return lines;
}

/**
 * Feeds a provider's event report (one JSON event per line) through the same path as the webhook,
 * `admitPaymentEvent` with source `import`, a bounded number of lines at a time, no faster than the
 * workers drain the bulk task queue nor than the limited targets take calls. An event already known is a duplicate, so a rerun after an
 * interrupted import applies only what is missing.
 */
export async function importReport(
  deps: Services,
  file: string,
  options: ImportOptions,
): Promise<ImportSummary> {
  const started = Date.now();
  const summary: ImportSummary = {
    file,
    lines: await countLines(file),
    processed: 0,
    counts: { accepted: 0, duplicate: 0, ignored: 0, rejected: 0, unavailable: 0 },
    rejected: [],
    unavailable: [],
    interrupted: false,
    elapsed_ms: 0,
  };
  const inFlight = new Set<Promise<void>>();
  const maxBacklog = options.maxBacklog ?? DEFAULT_MAX_BACKLOG;
  const pace = maxBacklog > 0 ? new ImportPace(deps.pool, maxBacklog, options.targetLimits) : undefined;
  const record = (outcome: LineOutcome, line: number) => {
    if (outcome.status === 'accepted') pace?.started(outcome.eventId);
    else pace?.notStarted();
    summary.processed += 1;
    summary.counts[outcome.status] += 1;
    if (outcome.status === 'rejected' || outcome.status === 'unavailable') {
      summary[outcome.status].push({ line, ...outcome.problem });
    }
    options.onProgress?.(summary.processed, summary.lines, summary.counts);
  };

  const input = createReadStream(file);
  const reader = createInterface({ input, crlfDelay: Infinity });
  let lineNumber = 0;
  for await (const text of reader) {
    lineNumber += 1;
    if (!text.trim()) continue;
    await pace?.admitOne(options.signal);
    if (options.signal?.aborted) {
      summary.interrupted = true;
      break;
    }
    const line = lineNumber;
    const task = importLine(deps, text, options.attempts ?? 5, options).then((outcome) =>
      record(outcome, line),
    );
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
    if (inFlight.size >= options.concurrency) await Promise.race(inFlight);
  }
  reader.close();
  input.destroy();
  await Promise.all(inFlight);
  summary.rejected.sort((a, b) => a.line - b.line);
  summary.unavailable.sort((a, b) => a.line - b.line);
  summary.elapsed_ms = Date.now() - started;
  return summary;
}

type LineOutcome =
  | { status: 'accepted'; eventId: string }
  | { status: 'duplicate' | 'ignored' }
  | { status: 'rejected' | 'unavailable'; problem: Omit<ImportProblem, 'line'> };

async function importLine(
  deps: Services,
  text: string,
  attempts: number,
  { provider, providerMode }: Pick<ImportOptions, 'provider' | 'providerMode'>,
): Promise<LineOutcome> {
  const refuse = (eventId: string | null, message: string): LineOutcome => ({
    status: 'rejected',
    problem: { event_id: eventId, error: ErrorCode.InvalidEvent, message },
  });
  const unavailable = (eventId: string, dependency: 'temporal' | 'postgres'): LineOutcome => ({
    status: 'unavailable',
    problem: {
      event_id: eventId,
      error: dependency === 'temporal' ? ErrorCode.TemporalUnavailable : ErrorCode.DatabaseUnavailable,
      message: `${dependency === 'postgres' ? 'postgres unreachable or busy' : 'temporal unreachable'}; nothing was written for this line`,
    },
  });
  let eventId: string;
  let admit: () => Promise<IngestOutcome>;
  if (provider) {
    // The same edge rule as every route (unstorable text, nesting depth) before the provider's adapter.
    const parsed = parseUntrustedJson(text);
    if (!parsed.ok) return refuse(null, describeIssues([parsed.issue]));
    const adapter = PROVIDERS[provider].exportAdapter();
    const adapted = inMode(
      adapter.adapt(adapter.exportItems(parsed.value)[0]),
      providerMode,
      adapter.exportMode(parsed.value),
    );
    if (adapted.kind === 'invalid') return refuse(adapted.eventId, `${adapted.path}: ${adapted.message}`);
    if (adapted.kind === 'ignored') return { status: 'ignored' };
    eventId = adapted.eventId;
    if (adapted.kind === 'unmatched') {
      const recorded = await admitProviderEvent(deps, provider, adapted, 'import');
      if (recorded.status === 'unavailable') return unavailable(eventId, recorded.dependency);
      return {
        status: 'rejected',
        problem: {
          event_id: eventId,
          error: 'unmatched',
          message: `${adapted.reason}; recorded as an exception (settle exceptions)`,
        },
      };
    }
    const event = adapted.event;
    admit = () => admitPaymentEvent(deps, event, 'import');
  } else {
    // The same reading as the webhook: the edge rule, the envelope, then the schema of a handled type.
    const read = readPaymentEvent(text);
    if (!read.ok) return refuse(read.eventId, describeIssues(read.issues));
    eventId = read.event.id;
    // The stored and hashed payload is the line as written, unknown fields included.
    admit = () => admitPaymentEvent(deps, read.event, 'import');
  }

  let outcome: IngestOutcome | undefined;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    outcome = await admit();
    if (outcome.status !== 'unavailable') break;
    if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (attempt - 1)));
  }
  switch (outcome!.status) {
    case 'accepted':
      return { status: 'accepted', eventId };
    case 'duplicate':
    case 'ignored':
      return { status: outcome!.status };
    case 'invalid':
      return refuse(eventId, describeIssues(outcome!.issues));
    case 'conflict':
      return {
        status: 'rejected',
        problem: {
          event_id: eventId,
          error: ErrorCode.IdempotencyKeyReused,
          message: 'this event ID is known with a different payload; the original effect stands',
        },
      };
    case 'unavailable':
      return unavailable(eventId, outcome!.dependency);
  }
}
