import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { PaymentEvent, PaymentEventType } from '../src/domain/payment-event';
import { signWebhook } from '../src/lib/webhook-signature';

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export type Reply = {
  status: number;
  body: string;
  ms: number;
  /** Why there was no answer (status 0): the network error's code. */
  error?: string;
  /** Sent again once on a new connection: the kept-alive one was closed as the request left. */
  resent?: { error: string; idleMs: number };
};

/** When each kept-alive connection last finished a request, to say how long a closed one sat idle. */
const lastUsed = new WeakMap<object, number>();

/**
 * One HTTP request on a kept-alive loopback connection; a network error is status 0 with its code.
 * A request that finds its reused idle connection already closed by the server (a reset before any
 * byte of an answer: the server's keep-alive timeout crossing the reuse) is sent once more on a new
 * connection, as Node's documentation advises and every provider's client does; `resent` says so.
 */
export async function httpRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Reply> {
  const first = await sendOnce(url, options);
  if (first.staleIdleMs === undefined) return first.reply;
  return {
    ...(await sendOnce(url, options)).reply,
    resent: { error: first.reply.error ?? '', idleMs: first.staleIdleMs },
  };
}

function sendOnce(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<{ reply: Reply; staleIdleMs?: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    let answered = false;
    let idleMs = 0;
    let connection: object | undefined;
    const req = request(url, { method: options.method ?? 'POST', headers: options.headers, agent }, (res) => {
      answered = true;
      res.once('end', () => connection && lastUsed.set(connection, Date.now()));
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          reply: {
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          },
        }),
      );
      res.on('error', (error: NodeJS.ErrnoException) => failed(error));
    });
    const failed = (error: NodeJS.ErrnoException) =>
      resolve({
        reply: { status: 0, body: '', ms: performance.now() - started, error: error.code ?? error.message },
        ...(!answered && req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')
          ? { staleIdleMs: idleMs }
          : {}),
      });
    req.on('socket', (socket) => {
      connection = socket;
      idleMs = Date.now() - (lastUsed.get(socket) ?? Date.now());
    });
    req.on('error', failed);
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

/** POSTs an event to the payment webhook, signed like a provider does (a new message ID each time). */
export function postEvent(gatewayUrl: string, secret: string, event: unknown): Promise<Reply> {
  const raw = JSON.stringify(event);
  const signed = signWebhook(secret, `msg_${randomBytes(8).toString('hex')}`, raw);
  return httpRequest(`${gatewayUrl}/webhooks/payments`, {
    headers: { 'content-type': 'application/json', ...signed },
    body: raw,
  });
}

/** A payment event for its own shipment; `captured` produces a carrier release and an ERP entry. */
export function makeEvent(
  runId: string,
  i: number,
  type: PaymentEventType = 'payment.captured',
  shipmentId = shipmentFor(runId, i),
): PaymentEvent {
  return {
    id: `evt_${runId}_${i}`,
    type,
    created_at: '2026-08-10T02:14:00Z',
    data: { shipment_id: shipmentId, payment_id: `pi_${runId}_${i}`, amount: 1000 + i, currency: 'EUR' },
  };
}

export const shipmentFor = (runId: string, i: number) => `SHP-${runId}-${i}`;

/** The key of an event's last downstream effect (the ERP ledger entry): its arrival ends the path. */
export const erpKey = (eventId: string) => `${eventId}:erp:post_ledger_entry`;

export const newRunId = (prefix: string) => `${prefix}${randomBytes(3).toString('hex')}`;

/** Runs `task(i)` for i in [0, total) with `concurrency` in flight; returns the wall time in ms. */
export async function closedLoop(
  total: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const i = next;
        next += 1;
        await task(i);
      }
    }),
  );
  return performance.now() - started;
}

/**
 * Open arrivals: starts `task(i)` every 1000/rate ms for `durationMs` (at most `maxCount` times) whatever is still in flight
 * (a provider does not wait for settle), then waits for them all. Returns how many were started.
 */
export async function openLoop(
  ratePerSecond: number,
  durationMs: number,
  task: (i: number) => Promise<void>,
  maxCount = Infinity,
): Promise<number> {
  const interval = 1000 / ratePerSecond;
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  let i = 0;
  while (performance.now() - started < durationMs && i < maxCount) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    inFlight.push(task(i));
    i += 1;
  }
  await Promise.all(inFlight);
  return i;
}

/**
 * Open arrivals at `rate` per second until `stop()` (or `max` sends), except that no more than
 * `maxInFlight` wait for an answer at once and a late send is not made up for: on a slow (shared)
 * machine the load eases instead of piling up faster than settle can finish it. `send(i)` is the
 * provider's delivery (retrying a 5xx); a 2xx counts as acknowledged.
 */
export function cappedLoad(options: {
  rate: number;
  maxInFlight: number;
  send: (i: number) => Promise<Reply>;
  max?: number;
}) {
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  let sent = 0;
  let acknowledged = 0;
  let pending = 0;
  let stopped = false;
  const done = (async () => {
    const inFlight: Promise<void>[] = [];
    let next = performance.now();
    while (!stopped && sent < (options.max ?? Infinity)) {
      while (pending >= options.maxInFlight && !stopped) await pause(50);
      const wait = next - performance.now();
      if (wait > 1) await pause(wait);
      next = Math.max(next + 1000 / options.rate, performance.now());
      if (stopped) break;
      pending += 1;
      inFlight.push(
        options.send(sent++).then((reply) => {
          pending -= 1;
          if (reply.status >= 200 && reply.status < 300) acknowledged += 1;
        }),
      );
    }
    await Promise.all(inFlight);
  })();
  return {
    sent: () => sent,
    /** Stops sending, waits for every answer; a send never acknowledged is a failure. */
    async stop() {
      stopped = true;
      await done;
      const failures =
        acknowledged === sent ? [] : [`${sent - acknowledged} of ${sent} events were never acknowledged`];
      return { sent, acknowledged, failures };
    },
  };
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}
