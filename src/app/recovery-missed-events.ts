import { findEvent } from '../db/events';
import { recordProviderException } from '../db/provider-exceptions';
import { advanceRecoveryCursor, readRecoveryCursor, recordRecoverySweep } from '../db/recovery-cursor';
import { payloadSha256, shortHash } from '../lib/hash';
import { recoveredEventsTotal } from '../metrics/settle-metrics';
import {
  RecoveryFault,
  type ListedEvent,
  type ListStart,
  type RecoveryCursor,
  type RecoverySource,
} from '../providers/recovery-source';
import { inMode, type AdaptedEvent, type ProviderMode } from '../providers/types';
import { admitProviderEvent } from './admit-provider-event';
import type { Services } from './services';

/** Where a first sweep (no cursor yet) begins: Stripe retries a failed delivery for three days. */
export const DEFAULT_RECOVERY_LOOKBACK_MS = 72 * 3_600_000;

/** The cursor is written after this many listed events (and when the sweep ends): a crash re-lists at most these. */
const CURSOR_EVERY = 100;

/** At most this many refusals are listed in a summary (all are counted). */
const MAX_REFUSALS_LISTED = 100;

export type RecoveryRefusal = {
  event_id: string | null;
  /** `unmatched`: names no shipment; `invalid`: fails validation; `conflict`: known with another payload. */
  reason: 'unmatched' | 'invalid' | 'conflict';
  message: string;
};

export type RecoverySummary = {
  provider: string;
  dry_run: boolean;
  /** Where the listing began: after the cursor's event, or at a time. */
  from: { after_created_at: string } | { since: string };
  /** Events of the types settle acts on that the provider listed. */
  listed: number;
  /** Already admitted (delivered, imported or recovered before): duplicates, no Temporal action. */
  already_had: number;
  /** Admitted now: each one workflow start (with --dry-run: would be). */
  admitted: number;
  /** Listed but nothing to do (a failed refund, a charge without its refund list). */
  ignored: number;
  refused: number;
  /** The first refusals, each with why; each is an exception in `settle exceptions` (not with --dry-run). */
  refusals: RecoveryRefusal[];
  /** The cursor after the run: every listed event up to it was admitted or recorded. */
  cursor: { event_id: string; created_at: string } | null;
  /** False when the run began later than the cursor (`--since` shorter than the gap), or a dry run. */
  cursor_moved: boolean;
  interrupted: boolean;
  /**
   * Provider faults waited out and listed again from the last event (429 after its Retry-After, 5xx
   * and timeouts with backoff): `used` of at most `limit` (0: none, as in the Schedule's sweep,
   * which Temporal's retry policy retries instead).
   */
  retries: { used: number; limit: number };
  elapsed_ms: number;
  events_per_second: number;
};

export type RecoverOptions = {
  /**
   * List from this time instead of from the cursor; the cursor moves only if this is not after it
   * (with no cursor yet: not after DEFAULT_RECOVERY_LOOKBACK_MS ago).
   */
  since?: Date;
  /** Decide nothing, write nothing: say what a run would do. */
  dryRun?: boolean;
  /** Stops between events; what was admitted stays admitted and the cursor is written. */
  signal?: AbortSignal;
  /** After each listed event, with that event's creation time. */
  onProgress?: (summary: RecoverySummary, at: Date) => void;
  /** SETTLE_PROVIDER_MODE: a listed event of the other mode is ignored, as at the webhook. */
  providerMode?: ProviderMode;
  /**
   * Wait out a rate limit (its Retry-After) or an unavailable provider (backoff) and list again
   * from the last event handed out, at most `attempts` times; a Retry-After longer than
   * `maxDelayMs` spends the bound at once. Unset: the first fault ends the run.
   */
  retry?: RecoveryRetry;
  now?: () => Date;
};

export type RecoveryRetry = {
  attempts: number;
  /** The first backoff (doubled each time); default 1 s. */
  initialDelayMs?: number;
  /** The longest wait, a Retry-After included; default 5 min. */
  maxDelayMs?: number;
  /** Called before each wait, with the fault and the delay. */
  onRetry?: (fault: RecoveryFault, delayMs: number, attempt: number) => void;
};

type Decision =
  { kind: 'admitted' | 'already_had' | 'ignored' } | { kind: 'refused'; refusal: RecoveryRefusal };

/**
 * Lists the provider's events from the durable cursor (or `since`), oldest first, and admits each
 * through the door a webhook takes (`admitProviderEvent`): the claim decides, so an event settle
 * already has is a duplicate that starts nothing. An event settle refuses is recorded as an exception
 * with its next step and passed. The cursor moves only past events admitted or recorded, in list
 * order: PostgreSQL or Temporal unavailable stops the run before that event (RecoveryFault
 * `unavailable`), and a provider fault stops it where it is; the next run resumes from the cursor.
 * Every run's outcome is written beside the cursor (`settle stats`).
 */
export async function recoverMissedEvents(
  deps: Services,
  source: RecoverySource,
  options: RecoverOptions = {},
): Promise<RecoverySummary> {
  const started = Date.now();
  const now = options.now ?? (() => new Date());
  const dryRun = options.dryRun ?? false;
  const stored = await readRecoveryCursor(deps.pool, source.provider);
  let start: ListStart;
  let mayMoveCursor = !dryRun;
  if (options.since) {
    start = { since: options.since };
    // A window that begins after the cursor (or, before any, after the first sweep's lookback) would
    // leave a gap behind it that the Schedule's sweeps never list.
    const reach = stored?.createdAt ?? new Date(now().getTime() - DEFAULT_RECOVERY_LOOKBACK_MS);
    if (options.since > reach) mayMoveCursor = false;
  } else if (stored) {
    start = { after: stored };
  } else {
    start = { since: new Date(now().getTime() - DEFAULT_RECOVERY_LOOKBACK_MS) };
  }
  const summary: RecoverySummary = {
    provider: source.provider,
    dry_run: dryRun,
    from:
      'after' in start
        ? { after_created_at: start.after.createdAt.toISOString() }
        : { since: start.since.toISOString() },
    listed: 0,
    already_had: 0,
    admitted: 0,
    ignored: 0,
    refused: 0,
    refusals: [],
    cursor: stored ? cursorJson(stored) : null,
    cursor_moved: false,
    interrupted: false,
    retries: { used: 0, limit: options.retry?.attempts ?? 0 },
    elapsed_ms: 0,
    events_per_second: 0,
  };

  let passed: RecoveryCursor | undefined;
  let unwritten = 0;
  const writeCursor = async () => {
    if (!passed || !mayMoveCursor || unwritten === 0) return;
    await advanceRecoveryCursor(deps.pool, source.provider, passed);
    summary.cursor = cursorJson(passed);
    summary.cursor_moved = true;
    unwritten = 0;
  };
  const finish = () => {
    summary.elapsed_ms = Date.now() - started;
    summary.events_per_second = Math.round(summary.listed / Math.max(summary.elapsed_ms / 1000, 0.001));
  };

  try {
    for await (const listed of listRetrying(source, start, options, summary)) {
      if (options.signal?.aborted) break;
      summary.listed += 1;
      // The webhook's door, mode included: a listed event of the other mode writes nothing.
      const adapted = inMode(
        source.adapter.adapt(listed.item),
        options.providerMode,
        source.adapter.exportMode(listed.item),
      );
      const decision = dryRun
        ? await preview(deps, adapted)
        : await admitListed(deps, source.provider, adapted, listed);
      if (decision.kind === 'refused') {
        summary.refused += 1;
        if (summary.refusals.length < MAX_REFUSALS_LISTED) summary.refusals.push(decision.refusal);
      } else {
        summary[decision.kind] += 1;
        if (decision.kind === 'admitted' && !dryRun) recoveredEventsTotal.inc({ provider: source.provider });
      }
      passed = listed.position;
      unwritten += 1;
      if (unwritten >= CURSOR_EVERY) await writeCursor();
      options.onProgress?.(summary, listed.position.createdAt);
    }
    summary.interrupted = options.signal?.aborted ?? false;
    await writeCursor();
  } catch (error) {
    // What was admitted before the fault stays passed; the fault itself is the run's outcome.
    await writeCursor().catch(() => {});
    finish();
    if (!dryRun) {
      await recordRecoverySweep(deps.pool, source.provider, {
        listed: summary.listed,
        recovered: summary.admitted,
        error: error instanceof Error ? error.message : String(error),
      }).catch(() => {});
    }
    if (error instanceof RecoveryFault) Object.assign(error, { summary });
    throw error;
  }
  finish();
  if (!dryRun) {
    await recordRecoverySweep(deps.pool, source.provider, {
      listed: summary.listed,
      recovered: summary.admitted,
      error: null,
    });
  }
  return summary;
}

/** The summary of the run a RecoveryFault ended, when it carries one. */
export function summaryOfFault(error: unknown): RecoverySummary | undefined {
  return (error as { summary?: RecoverySummary } | undefined)?.summary;
}

/**
 * The listing with `options.retry`: a rate limit or an unavailable provider is waited out and the
 * listing begins again just after the last event it handed out (or where it began), until the
 * bound is spent; then the fault ends the run, as every other fault does at once.
 */
async function* listRetrying(
  source: RecoverySource,
  start: ListStart,
  options: RecoverOptions,
  summary: RecoverySummary,
): AsyncGenerator<ListedEvent> {
  const retry = options.retry;
  let from = start;
  for (;;) {
    try {
      for await (const listed of listFrom(source, from, options.signal)) {
        from = { after: listed.position };
        yield listed;
      }
      return;
    } catch (error) {
      if (!retry || !(error instanceof RecoveryFault)) throw error;
      if (error.kind !== 'rate_limited' && error.kind !== 'unavailable') throw error;
      const maxDelay = retry.maxDelayMs ?? 300_000;
      const backoff = Math.min((retry.initialDelayMs ?? 1_000) * 2 ** summary.retries.used, maxDelay);
      const delay = error.retryAfterMs ?? backoff;
      if (summary.retries.used >= retry.attempts) {
        error.message = `${error.message} (gave up after ${summary.retries.used} of ${retry.attempts} retries)`;
        throw error;
      }
      if (delay > maxDelay) {
        error.message = `${error.message} (Retry-After ${Math.ceil(delay / 1000)} s is longer than the ${Math.round(maxDelay / 1000)} s settle recover waits)`;
        throw error;
      }
      summary.retries.used += 1;
      retry.onRetry?.(error, delay, summary.retries.used);
      if (!(await pause(delay, options.signal))) return;
    }
  }
}

/** Waits `ms`; false when `signal` aborted first. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The listing, oldest first, stopping at once when `signal` aborts (a hung request is left behind).
 * A cursor the provider no longer lists (older than its retention) restarts the listing at the
 * cursor's time, so nothing newer is skipped.
 */
async function* listFrom(
  source: RecoverySource,
  start: ListStart,
  signal: AbortSignal | undefined,
): AsyncGenerator<ListedEvent> {
  let yielded = false;
  try {
    for await (const listed of abortable(source.list(start, signal), signal)) {
      yielded = true;
      yield listed;
    }
  } catch (error) {
    if (!(error instanceof RecoveryFault && error.kind === 'cursor_gone' && 'after' in start && !yielded)) {
      throw error;
    }
    yield* abortable(source.list({ since: start.after.createdAt }, signal), signal);
  }
}

async function* abortable<T>(iterable: AsyncIterable<T>, signal: AbortSignal | undefined): AsyncGenerator<T> {
  const iterator = iterable[Symbol.asyncIterator]();
  if (!signal) {
    yield* { [Symbol.asyncIterator]: () => iterator };
    return;
  }
  const aborted = new Promise<IteratorResult<T>>((resolve) => {
    if (signal.aborted) resolve({ done: true, value: undefined });
    signal.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true });
  });
  for (;;) {
    const next = iterator.next();
    // The request in flight when the signal aborts is abandoned; its answer is never read.
    next.catch(() => {});
    const result = await Promise.race([next, aborted]);
    if (result.done) return;
    yield result.value;
  }
}

const NEXT_STEP_INVALID =
  'listed by the recovery sweep but refused: check the event at the provider, record the payment by hand ' +
  'or import a corrected export (settle import --provider), then settle exceptions resolve';

/** One listed event through the webhook's door; an exception recorded counts as passed. */
async function admitListed(
  deps: Services,
  provider: RecoverySource['provider'],
  adapted: AdaptedEvent,
  listed: ListedEvent,
): Promise<Decision> {
  if (adapted.kind === 'invalid') {
    const eventId = adapted.eventId ?? `${provider}_invalid_${shortHash(payloadSha256(listed.item))}`;
    await recordProviderException(deps.pool, {
      eventId,
      provider,
      providerType: typeOf(listed.item),
      reason: `${adapted.path}: ${adapted.message}`,
      payload: listed.item,
      nextStep: NEXT_STEP_INVALID,
    }).catch((error: unknown) => {
      throw unavailable('postgres', error);
    });
    return refused(adapted.eventId, 'invalid', `${adapted.path}: ${adapted.message}`);
  }
  const outcome = await admitProviderEvent(deps, provider, adapted, 'recovery');
  switch (outcome.status) {
    case 'accepted':
      return { kind: 'admitted' };
    case 'duplicate':
      return { kind: 'already_had' };
    case 'ignored':
      return { kind: 'ignored' };
    case 'unmatched':
      return refused(
        outcome.eventId,
        'unmatched',
        adapted.kind === 'unmatched' ? adapted.reason : 'names no shipment',
      );
    case 'conflict':
      return refused(
        outcome.eventId,
        'conflict',
        'known with another payload: the original effect stands (recorded as a conflict)',
      );
    case 'invalid': {
      const message = outcome.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
      await recordProviderException(deps.pool, {
        eventId: outcome.eventId ?? `${provider}_invalid_${shortHash(payloadSha256(listed.item))}`,
        provider,
        providerType: typeOf(listed.item),
        reason: message,
        payload: listed.item,
        nextStep: NEXT_STEP_INVALID,
      }).catch((error: unknown) => {
        throw unavailable('postgres', error);
      });
      return refused(outcome.eventId, 'invalid', message);
    }
    case 'unavailable':
      throw unavailable(outcome.dependency);
  }
}

/** What admitListed would decide, reading only. */
async function preview(deps: Services, adapted: AdaptedEvent): Promise<Decision> {
  switch (adapted.kind) {
    case 'invalid':
      return refused(adapted.eventId, 'invalid', `${adapted.path}: ${adapted.message}`);
    case 'ignored':
      return { kind: 'ignored' };
    case 'unmatched':
      return refused(adapted.eventId, 'unmatched', adapted.reason);
    case 'payment': {
      let known;
      try {
        known = await findEvent(deps.pool, adapted.eventId);
      } catch (error) {
        throw unavailable('postgres', error);
      }
      if (!known) return { kind: 'admitted' };
      return known.payloadSha256 === payloadSha256(adapted.event)
        ? { kind: 'already_had' }
        : refused(adapted.eventId, 'conflict', 'known with another payload: the original effect stands');
    }
  }
}

function refused(eventId: string | null, reason: RecoveryRefusal['reason'], message: string): Decision {
  return { kind: 'refused', refusal: { event_id: eventId, reason, message } };
}

function unavailable(dependency: 'postgres' | 'temporal', cause?: unknown): RecoveryFault {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new RecoveryFault(
    'unavailable',
    `${dependency === 'postgres' ? 'PostgreSQL' : 'Temporal'} unreachable; the cursor stays before this event${detail}`,
  );
}

function typeOf(item: unknown): string {
  const type = (item as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type ? type.slice(0, 200) : '(unknown)';
}

function cursorJson(cursor: RecoveryCursor): { event_id: string; created_at: string } {
  return { event_id: cursor.eventId, created_at: cursor.createdAt.toISOString() };
}
