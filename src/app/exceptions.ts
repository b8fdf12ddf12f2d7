import type { Client } from '@temporalio/client';
import { describeSettleRun } from '../client';
import {
  countExceptions,
  EXCEPTION_KINDS,
  eventsWithIdlePendingOutbox,
  insertResolutions,
  listExceptions,
  type ExceptionKind,
  type ExceptionRow,
  type ResolutionRecord,
} from '../db/exceptions';
import type { Queryable } from '../db/pool';
import type { Services } from './services';
import { paymentWorkflowId } from '../domain/ids';
import { DELIVERY_TARGETS, OUTBOX_TARGETS } from '../domain/outbox';

/** What an operator does about each kind; `settle exceptions` prints it, docs/operations.md explains it. */
export const NEXT_STEP: Record<ExceptionKind, string> = {
  unmatched: 'add the shipment (settle shipments add <id>), then settle replay <event id> (or --unmatched)',
  conflict:
    'the provider reused an ID with another payload; the original stands: ask the provider, then resolve',
  failed:
    'settle inspect <event id>; fix the cause, then settle replay <event id>, or settle it by hand and resolve',
  needs_review:
    'a compensation ran, or the payment does not match its shipment (the detail says which): settle inspect ' +
    '<event id>, settle the case by hand (refund or collect the difference), then settle exceptions resolve',
  delivery_stuck:
    'the target keeps failing: fix it (its last error says why) and the delivery goes through by itself',
  not_configured: `set ${OUTBOX_TARGETS.map((target) => DELIVERY_TARGETS[target].variable).join(' and ')} on every worker, then settle replay <event id>`,
  delivery_abandoned: 'its run was cancelled or terminated: settle replay <event id> sends what is pending',
  target_unavailable:
    'the target is down or failing (its last error says how): fix it or its URL; settle delivers the ' +
    'backlog by itself within the limits once a probe succeeds, and this closes (docs/operations.md, ' +
    '"A delivery target is open")',
  unadmitted_run:
    "this run was not started by settle (nothing was applied): investigate who can reach Temporal's " +
    'frontend and close that access; terminate the run if it still runs, then settle exceptions resolve <event id>',
};

export { DEFAULT_UNRECONCILED_AFTER_MS } from '../db/exceptions';

/** Outbox rows idle this long are checked against their run; a younger one may just be between steps. */
const ABANDONED_IDLE_MS = 10_000;
/** How many events' runs one listing asks Temporal about, and how many at once. */
const ABANDONED_CHECK_LIMIT = 200;
const ABANDONED_CHECK_BATCH = 20;
const DESCRIBE_DEADLINE_MS = 5_000;

export type ExceptionOptions = {
  kinds?: readonly ExceptionKind[];
  eventIds?: readonly string[];
  unreconciledAfterMs: number;
  stuckAfterMs: number;
  includeResolved?: boolean;
  limit: number | null;
};

/** An exception with what to do about it, the event's own IDs filled in. */
type OpenException = ExceptionRow & { next_step: string };

export type ExceptionList = {
  exceptions: OpenException[];
  /** False when Temporal could not be asked about every run: abandoned deliveries may be missing. */
  runs_checked: boolean;
};

/**
 * The open exceptions (with `includeResolved`, the closed ones too): the one list behind `settle
 * exceptions`, `settle stats` and the settle_open_exceptions gauge. A delivery left pending by a run
 * that has ended (cancelled, terminated, or no longer known to Temporal) is found by asking Temporal
 * about the runs of events whose outbox rows sit idle, oldest first and bounded; when Temporal does not
 * answer, the rest of the list still comes from PostgreSQL and `runs_checked` says so.
 */
export async function openExceptions(
  deps: Pick<Services, 'pool'> & { client?: Client },
  options: ExceptionOptions,
): Promise<ExceptionList> {
  const { outboxIds, complete } = deps.client
    ? await abandonedOutboxIds(deps.pool, deps.client)
    : { outboxIds: [], complete: false };
  const rows = await listExceptions(deps.pool, { ...options, abandonedOutboxIds: outboxIds });
  const exceptions = rows.map((row) => ({
    ...row,
    next_step: NEXT_STEP[row.kind]
      .replaceAll('<event id>', row.event_id)
      .replace('<id>', row.shipment_id ?? '<id>'),
  }));
  return { exceptions, runs_checked: complete };
}

/**
 * How many open exceptions of each kind (every kind, 0 when none): the same list as openExceptions,
 * counted by PostgreSQL rather than loaded (`settle stats`, the settle_open_exceptions gauge).
 */
export async function countOpenExceptions(
  deps: Pick<Services, 'pool'> & { client?: Client },
  options: Pick<ExceptionOptions, 'unreconciledAfterMs' | 'stuckAfterMs'>,
): Promise<Record<ExceptionKind, number>> {
  const { outboxIds } = deps.client
    ? await abandonedOutboxIds(deps.pool, deps.client)
    : { outboxIds: [] as number[] };
  return countExceptions(deps.pool, { ...options, abandonedOutboxIds: outboxIds });
}

/** Open exceptions by kind, every kind present (0 when none). */
export function countByKind(rows: readonly ExceptionRow[]): Record<ExceptionKind, number> {
  const counts = Object.fromEntries(EXCEPTION_KINDS.map((kind) => [kind, 0])) as Record<
    ExceptionKind,
    number
  >;
  for (const row of rows) counts[row.kind] += 1;
  return counts;
}

async function abandonedOutboxIds(
  pool: Queryable,
  client: Client,
): Promise<{ outboxIds: number[]; complete: boolean }> {
  const candidates = await eventsWithIdlePendingOutbox(pool, {
    idleForMs: ABANDONED_IDLE_MS,
    limit: ABANDONED_CHECK_LIMIT,
  });
  const outboxIds: number[] = [];
  let complete = true;
  for (let i = 0; i < candidates.length; i += ABANDONED_CHECK_BATCH) {
    const batch = candidates.slice(i, i + ABANDONED_CHECK_BATCH);
    const states = await Promise.all(batch.map((candidate) => runState(client, pool, candidate.eventId)));
    batch.forEach((candidate, index) => {
      if (states[index] === 'ended') outboxIds.push(...candidate.outboxIds);
      if (states[index] === 'unknown') complete = false;
    });
    if (!complete) break;
  }
  return { outboxIds, complete };
}

/**
 * Whether settle's own run of the event still runs (and so will deliver its pending rows): a run
 * someone else started under the ID delivers nothing of settle's, and its memo is never decoded.
 */
async function runState(
  client: Client,
  runs: Queryable,
  eventId: string,
): Promise<'running' | 'ended' | 'unknown'> {
  try {
    const run = await describeSettleRun(client, runs, paymentWorkflowId(eventId), DESCRIBE_DEADLINE_MS);
    return run?.status === 'RUNNING' ? 'running' : 'ended';
  } catch {
    return 'unknown';
  }
}

export type ResolveResult = {
  /** Each exception closed now (event and kind), with the audit record. */
  resolved: ResolutionRecord[];
  /** Event IDs that had no open exception: nothing was recorded for them. */
  nothing_open: string[];
};

/**
 * Closes every open exception of the given events, recording who, when and why. An event with nothing
 * open is named, never an error for the others; resolving twice records nothing the second time.
 */
export async function resolveExceptions(
  deps: Pick<Services, 'pool'> & { client?: Client },
  eventIds: readonly string[],
  audit: { resolvedBy: string; note: string },
  options: Pick<ExceptionOptions, 'unreconciledAfterMs' | 'stuckAfterMs'>,
): Promise<ResolveResult> {
  const { exceptions } = await openExceptions(deps, { ...options, eventIds, limit: null });
  const keys = new Map(exceptions.map((row) => [`${row.event_id}\u0000${row.kind}`, row]));
  const resolved = await insertResolutions(
    deps.pool,
    [...keys.values()].map((row) => ({ eventId: row.event_id, kind: row.kind })),
    audit,
  );
  const open = new Set(exceptions.map((row) => row.event_id));
  return { resolved, nothing_open: [...new Set(eventIds)].filter((id) => !open.has(id)) };
}
