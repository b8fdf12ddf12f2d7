import { addShipments } from '../../src/db/shipments';
import type { PaymentEvent } from '../../src/domain/payment-event';
import {
  closedLoop,
  erpKey,
  makeEvent,
  newRunId,
  openLoop,
  percentile,
  postEvent,
  shipmentFor,
} from '../../testkit/load';
import { within } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';
import { runsOf, type RowRun } from './context';

/** Longest an event may take from its webhook to its ERP delivery before the run counts it lost. */
const EVENT_DEADLINE_MS = 120_000;

export type PathFigures = {
  eventsPerSecond: number;
  ackP50Ms: number;
  ackP99Ms: number;
  commitP50Ms: number;
  commitP99Ms: number;
  deliveredP50Ms: number;
  deliveredP99Ms: number;
  /** Requests not answered 202, and events not delivered within the deadline. */
  errors: number;
};

/** Events for fresh shipments (still held at the carrier), so each one releases and posts a ledger entry. */
export async function preparePathEvents(stack: ProofStack, count: number): Promise<PaymentEvent[]> {
  const runId = newRunId('p');
  await addShipments(
    stack.pool,
    Array.from({ length: count }, (_, i) => shipmentFor(runId, i)),
  );
  return Array.from({ length: count }, (_, i) => makeEvent(runId, i));
}

type Sample = { sentAt: number; ackMs?: number; deliveredAt?: number };

/** One event through the whole path: signed POST, 202, then its ERP entry applied at the receiver. */
async function sendAndFollow(stack: ProofStack, event: PaymentEvent, sample: Sample): Promise<boolean> {
  sample.sentAt = Date.now();
  const reply = await postEvent(stack.gatewayUrl, stack.secret, event);
  sample.ackMs = reply.ms;
  if (reply.status !== 202) return false;
  const deliveredAt = await within(
    stack.receiver.waitForApplied(erpKey(event.id)),
    EVENT_DEADLINE_MS,
    undefined,
  );
  sample.deliveredAt = deliveredAt;
  return deliveredAt !== undefined;
}

/** When each event's claim was made (ms since the epoch), by event ID; an event without one is absent. */
export async function claimedAt(
  stack: ProofStack,
  events: PaymentEvent[],
  claims: ClaimsTable = 'claims',
): Promise<Map<string, number>> {
  const { rows } = await stack.pool.query<{ event_id: string; at: number }>(
    `SELECT event_id, (extract(epoch FROM claimed_at) * 1000)::float8 AS at FROM ${claims} WHERE event_id = ANY($1::text[])`,
    [events.map((event) => event.id)],
  );
  return new Map(rows.map((row) => [row.event_id, row.at]));
}

async function figuresFor(
  stack: ProofStack,
  events: PaymentEvent[],
  samples: Sample[],
  errors: number,
  wallMs: number,
  claims: ClaimsTable = 'claims',
): Promise<PathFigures> {
  const claimed = await claimedAt(stack, events, claims);
  const commit = events.flatMap((event, i) => {
    const at = claimed.get(event.id);
    return at === undefined ? [] : [at - samples[i]!.sentAt];
  });
  const acks = samples.flatMap((sample) => (sample.ackMs === undefined ? [] : [sample.ackMs]));
  const delivered = samples.flatMap((sample) =>
    sample.deliveredAt === undefined ? [] : [sample.deliveredAt - sample.sentAt],
  );
  return {
    eventsPerSecond: events.length / (wallMs / 1000),
    ackP50Ms: percentile(acks, 50),
    ackP99Ms: percentile(acks, 99),
    commitP50Ms: percentile(commit, 50),
    commitP99Ms: percentile(commit, 99),
    deliveredP50Ms: percentile(delivered, 50),
    deliveredP99Ms: percentile(delivered, 99),
    errors,
  };
}

/** Where a path's claims (event_id, claimed_at) are: settle's, or T3W's plain consumer's. */
export type ClaimsTable = 'claims' | 'bench_plain_claims';

/**
 * P: closed loop over the whole path. Each of `concurrency` senders posts an event and waits until its
 * last downstream effect (the ERP entry) is applied before sending the next, so the work in flight in
 * the system is bounded and events per second is end-to-end throughput, not a growing backlog.
 */
export async function benchFullPath(
  stack: ProofStack,
  events: PaymentEvent[],
  concurrency: number,
  claims: ClaimsTable = 'claims',
): Promise<PathFigures> {
  const samples: Sample[] = events.map(() => ({ sentAt: 0 }));
  let errors = 0;
  const wallMs = await closedLoop(events.length, concurrency, async (i) => {
    if (!(await sendAndFollow(stack, events[i]!, samples[i]!))) errors += 1;
  });
  return figuresFor(stack, events, samples, errors, wallMs, claims);
}

export type LoadFigures = PathFigures & {
  offeredPerSecond: number;
  /** Events sent in the window. */
  sent: number;
  /** From the last request sent to the last event's ERP entry applied. */
  drainMs: number;
};

/** How many events an open loop at `ratePerSecond` for `durationMs` may send (a few to spare). */
export const loadEvents = (ratePerSecond: number, durationMs: number) =>
  Math.ceil(ratePerSecond * (durationMs / 1000)) + 10;

/**
 * L: an open arrival rate for `durationMs`: ack latency under load and how long the backlog drains.
 * `prepared` (from preparePathEvents, `loadEvents(...)` of them) keeps their set-up out of a sample.
 */
export async function benchFixedLoad(
  stack: ProofStack,
  ratePerSecond: number,
  durationMs: number,
  prepared?: PaymentEvent[],
): Promise<LoadFigures> {
  const events = prepared ?? (await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs)));
  const samples: Sample[] = events.map(() => ({ sentAt: 0 }));
  let errors = 0;
  let lastSentAt = 0;
  const started = Date.now();
  const sent = await openLoop(
    ratePerSecond,
    durationMs,
    async (i) => {
      const follow = sendAndFollow(stack, events[i]!, samples[i]!);
      lastSentAt = Math.max(lastSentAt, samples[i]!.sentAt);
      if (!(await follow)) errors += 1;
    },
    events.length,
  );
  const used = events.slice(0, sent);
  const lastDelivered = Math.max(...samples.slice(0, sent).map((sample) => sample.deliveredAt ?? 0));
  const figures = await figuresFor(stack, used, samples.slice(0, sent), errors, Date.now() - started);
  return {
    ...figures,
    offeredPerSecond: ratePerSecond,
    sent,
    drainMs: Math.max(0, lastDelivered - lastSentAt),
  };
}

/** P@10 measured, P@50 returned to be measured in turn with the rows its goals compare it with. */
export const runP: RowRun = async ({ stack, size, row, measureInTurn, finished }) => {
  const pathRow = (concurrency: number) =>
    row(
      `P@${concurrency}`,
      `webhook → gateway → workflow → reconcile → carrier + ERP delivery, ${concurrency} in flight`,
      {
        prepare: () => preparePathEvents(stack, size.pathEvents),
        run: async (events) => {
          const figures = await benchFullPath(stack, events, concurrency);
          finished.push(...events);
          return figures;
        },
        events: size.pathEvents,
        workflowIds: runsOf,
      },
    );
  await benchFullPath(stack, await preparePathEvents(stack, size.warmup), 10);
  await measureInTurn([pathRow(10)]);
  // Warmed at the concurrency its turn measures, as the rows it is compared with are (T3W, T3L).
  await benchFullPath(stack, await preparePathEvents(stack, size.warmup), 50);
  return [pathRow(50)];
};
