import { randomBytes } from 'node:crypto';
import type { PaymentEvent, PaymentEventType } from '../domain/payment-event';
import { signWebhook } from '../lib/webhook-signature';
import type { SimulatedRequest } from '../providers/module';

export type SimulateOptions = {
  gatewayUrl: string;
  secret: string;
  /** Distinct events to send (three per payment: authorized, captured, settled). */
  count: number;
  /** Requests per second, duplicates and replays included. */
  rate: number;
  /** Stops sending after this long, whatever is left. */
  maxDurationMs: number;
  /** Shares (0..1): an event sent twice in a row; an event sent again at the end; a payment's events swapped. */
  duplicateShare: number;
  lateReplayShare: number;
  outOfOrderShare: number;
  /** Prefix of event, payment and shipment IDs; a new one per run by default. */
  runId?: string;
  /** Same seed, same traffic. */
  seed?: number;
  concurrency?: number;
  signal?: AbortSignal;
  /**
   * Send as a payment provider instead (its own event shape, signed as the provider signs), to its
   * route; each payment is authorized, captured, then refunded. From the provider's module.
   */
  provider?: { sign(event: PaymentEvent): SimulatedRequest };
};

export type SimulateSummary = {
  run_id: string;
  gateway_url: string;
  shipment_ids: string[];
  planned: {
    events: number;
    immediate_duplicates: number;
    late_replays: number;
    out_of_order_payments: number;
  };
  sent: number;
  /** Responses by the body's `status`/`error` (`accepted`, `duplicate`, `rejected:invalid_signature`…). */
  responses: Record<string, number>;
  network_errors: number;
  stopped_early: boolean;
  elapsed_ms: number;
};

type Send = { event: PaymentEvent; kind: 'first' | 'duplicate' | 'late' };

const SEQUENCE: PaymentEventType[] = ['payment.authorized', 'payment.captured', 'payment.settled'];
/** Providers report no `settled`: their third event is a refund. */
const PROVIDER_SEQUENCE: PaymentEventType[] = ['payment.authorized', 'payment.captured', 'payment.refunded'];

/** The shipments a simulation's events are for, so a caller can add them before sending. */
export function simulatedShipmentIds(runId: string, count: number): string[] {
  return Array.from({ length: Math.ceil(count / SEQUENCE.length) }, (_, i) => `SHP-${runId}-${i + 1}`);
}

export type TrafficPlan = {
  runId: string;
  shipmentIds: string[];
  events: PaymentEvent[];
  /** In sending order: every event once, some twice in a row, some again at the end. */
  sends: Send[];
  outOfOrder: number;
};

type PlanOptions = Pick<
  SimulateOptions,
  'count' | 'duplicateShare' | 'lateReplayShare' | 'outOfOrderShare' | 'runId' | 'seed' | 'provider'
>;

/** The traffic a simulation sends (or `settle simulate --out` writes), from its options and seed. */
export function planTraffic(options: PlanOptions): TrafficPlan {
  const runId = options.runId ?? `sim${randomBytes(3).toString('hex')}`;
  const random = mulberry32(options.seed ?? Date.now());
  const shipmentIds = simulatedShipmentIds(runId, options.count);

  let outOfOrder = 0;
  const events: PaymentEvent[] = [];
  shipmentIds.forEach((shipmentId, p) => {
    const sequence = options.provider ? PROVIDER_SEQUENCE : SEQUENCE;
    const payment = sequence.map<PaymentEvent>((type, step) => ({
      id: `evt_${runId}_${p + 1}_${step + 1}`,
      type,
      created_at: new Date(Date.UTC(2026, 7, 10, 2, 0, step)).toISOString(),
      data: {
        shipment_id: shipmentId,
        payment_id: `pi_${runId}_${p + 1}`,
        amount: 1000 + p,
        currency: 'EUR',
      },
    }));
    // Only a payment sent whole is reordered: the report's last payment, cut by `count`, keeps its
    // first events in order (a settled event never goes out without the capture it follows).
    const reorder = random() < options.outOfOrderShare;
    if (reorder && events.length + payment.length <= options.count) {
      outOfOrder += 1;
      [payment[1], payment[2]] = [payment[2]!, payment[1]!];
    }
    events.push(...payment);
  });
  events.length = options.count;

  const sends: Send[] = [];
  const late: Send[] = [];
  for (const event of events) {
    sends.push({ event, kind: 'first' });
    if (random() < options.duplicateShare) sends.push({ event, kind: 'duplicate' });
    if (random() < options.lateReplayShare) late.push({ event, kind: 'late' });
  }
  sends.push(...late);

  return { runId, shipmentIds, events, sends, outOfOrder };
}

/**
 * A provider's event report in the format `settle import` reads: one event per line, as JSON, in the
 * order the provider sent them, duplicates and late replays included.
 */
export function reportLines(plan: TrafficPlan): string {
  return plan.sends.map((send) => `${JSON.stringify(send.event)}\n`).join('');
}

/**
 * A provider simulator: signed Standard Webhooks traffic at a steady rate against any gateway, with
 * immediate duplicates (a retry after a lost acknowledgement), late replays (a manual resend long
 * after) and out-of-order events (settled before captured). Bounded by count and duration.
 */
export async function simulateTraffic(options: SimulateOptions): Promise<SimulateSummary> {
  const { runId, shipmentIds, events, sends, outOfOrder } = planTraffic(options);
  const late = sends.filter((send) => send.kind === 'late');
  const summary: SimulateSummary = {
    run_id: runId,
    gateway_url: options.gatewayUrl,
    shipment_ids: shipmentIds,
    planned: {
      events: events.length,
      immediate_duplicates: sends.filter((s) => s.kind === 'duplicate').length,
      late_replays: late.length,
      out_of_order_payments: outOfOrder,
    },
    sent: 0,
    responses: {},
    network_errors: 0,
    stopped_early: false,
    elapsed_ms: 0,
  };

  const started = Date.now();
  const inFlight = new Set<Promise<void>>();
  let previous: Promise<void> = Promise.resolve();
  for (const [index, send] of sends.entries()) {
    const due = started + (index * 1000) / options.rate;
    if (due - started > options.maxDurationMs || options.signal?.aborted) {
      summary.stopped_early = true;
      break;
    }
    await sleep(due - Date.now());
    // An immediate duplicate goes out once the first delivery was answered, as a provider retry does.
    const after = send.kind === 'duplicate' ? previous : Promise.resolve();
    const task = after
      .then(() => deliver(options, send.event))
      .then((key) => {
        summary.sent += 1;
        if (key === 'network_error') summary.network_errors += 1;
        else summary.responses[key] = (summary.responses[key] ?? 0) + 1;
      });
    previous = task;
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
    if (inFlight.size >= (options.concurrency ?? 32)) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  summary.elapsed_ms = Date.now() - started;
  return summary;
}

async function deliver(options: SimulateOptions, event: PaymentEvent): Promise<string> {
  const request = options.provider
    ? options.provider.sign(event)
    : standardWebhooksRequest(options.secret, event);
  try {
    const response = await fetch(`${options.gatewayUrl}${request.path}`, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (text === '[accepted]') return '[accepted]';
    const reply = (() => {
      try {
        return JSON.parse(text) as { status?: string; error?: string };
      } catch {
        return {};
      }
    })();
    return reply.error
      ? `${reply.status ?? response.status}:${reply.error}`
      : (reply.status ?? String(response.status));
  } catch {
    return 'network_error';
  }
}

function standardWebhooksRequest(secret: string, event: PaymentEvent) {
  const body = JSON.stringify(event);
  return {
    path: '/webhooks/payments',
    body,
    headers: {
      'content-type': 'application/json',
      ...signWebhook(secret, `msg_${randomBytes(8).toString('hex')}`, body),
    },
  };
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/** A small seeded PRNG: the same seed gives the same traffic. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
