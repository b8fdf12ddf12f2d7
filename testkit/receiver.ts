import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DELIVERY_TARGETS, OUTBOX_TARGETS } from '../src/domain/outbox';
import { createSignatureVerifier } from '../src/lib/webhook-signature';

/**
 * Each delivery target's URL variable (DELIVERY_TARGETS' `variable`), pointed at `<receiver>/<target>`:
 * how every proof run and compose:check make one receiver every target (SETTLE_CARRIER_URL=…/carrier).
 */
export function targetUrlVariables(receiverUrl: string): Record<string, string> {
  return Object.fromEntries(
    OUTBOX_TARGETS.map((target) => [DELIVERY_TARGETS[target].variable, `${receiverUrl}/${target}`]),
  );
}

/**
 * The downstream API of every test, bench and chaos run (the carrier, the ERP, a reminder's webhook):
 * a real HTTP server on 127.0.0.1 that records every request and misbehaves as told. Like a well-kept
 * downstream it applies each Idempotency-Key's effect at most once, and it checks each request's
 * Standard Webhooks signature against `secrets` (recorded as `verified`, never refused: tests assert
 * it). (`npm start`'s stand-in, src/stack/dev-downstream.ts, is product code and stays apart: it
 * validates, refuses a bad signature and logs, and records and misbehaves in no way.)
 */

export type ReceivedRequest = {
  /** Arrival time, ms since the epoch. */
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON ({} when it is empty or not JSON). */
  readonly json: Record<string, unknown>;
  /** The request's Idempotency-Key (falls back to webhook-id). */
  key: string;
  /** Requests made with this key so far, this one included, from 1. */
  attempt: number;
  /** The TCP connection it came on, numbered from 1 in the order they were accepted. */
  connection: number;
  /** Requests on that connection so far, this one included, from 1: 2 and up is a kept connection. */
  onConnection: number;
  /** The signature verified with one of the receiver's `secrets` (false with none, or unsigned). */
  verified: boolean;
  /** Why it did not verify, when it did not. */
  signatureProblem?: string;
  /** When its answer was sent (ms since the epoch); unset while it is held or was dropped. */
  answeredAt?: number;
};

/**
 * What the receiver does with a request: answer `status` (with `headers`); apply the effect first
 * when `apply` is true (default: for a 2xx); `hang` holds the request open and never answers; `drop`
 * cuts its connection without answering; `delayMs` answers that much later (a slow downstream).
 */
export type Answer = {
  status: number;
  delayMs?: number;
  headers?: Record<string, string>;
  apply?: boolean;
  hang?: boolean;
  drop?: boolean;
};
/** `index` counts every request the receiver got, from 0. */
export type Behaviour = (request: ReceivedRequest, index: number) => Answer;

export type KeyRecord = {
  /** Requests made with this key. */
  requests: number;
  /** Effects applied for this key: 1 for a delivered effect, 0 for a refused one, never more. */
  applied: number;
  /** Repeats that arrived after the effect was applied and were answered without applying. */
  repeatsRefused: number;
  /** Distinct bodies (SHA-256) sent under this key: must be 1 (a retry repeats the same request). */
  bodies: Set<string>;
  /** Arrival of every request, ms since the epoch. */
  arrivals: number[];
  /** When the effect was applied. */
  appliedAt?: number;
  path: string;
};

export class RecordingReceiver {
  /** Every request, in arrival order. */
  readonly requests: ReceivedRequest[] = [];
  /** Every key, with what happened to it. */
  readonly keys = new Map<string, KeyRecord>();
  /** Keys whose effect was applied, in the order they were. */
  readonly effects: string[] = [];
  /** Effects that a receiver without idempotency keys would have applied twice. */
  wouldHaveDoubleApplied = 0;
  /** Base URL, without a trailing slash. */
  url = '';
  private readonly waiters = new Map<string, ((at: number) => void)[]>();
  private readonly held: ServerResponse[] = [];
  private readonly connections = new WeakMap<Socket, { id: number; requests: number }>();
  private connectionCount = 0;
  private server: Server | undefined;

  /**
   * The behaviour may be replaced while the receiver runs (chaos switches it per scenario); so may the
   * secrets it verifies signatures with (the target's, as its operator would configure them).
   */
  constructor(
    public behaviour: Behaviour = () => ({ status: 200 }),
    public secrets: string[] = [],
  ) {}

  /**
   * Listens on 127.0.0.1 at a free port unless told otherwise (the compose check's receiver
   * container listens on every interface at a fixed port: tools/compose/compose-check-receiver.ts).
   */
  async start(listen: { host: string; port: number } = { host: '127.0.0.1', port: 0 }): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const at = Date.now();
        const body = Buffer.concat(chunks).toString('utf8');
        const key = String(request.headers['idempotency-key'] ?? request.headers['webhook-id'] ?? '');
        const path = request.url ?? '/';
        let record = this.keys.get(key);
        if (!record) {
          record = { requests: 0, applied: 0, repeatsRefused: 0, bodies: new Set(), arrivals: [], path };
          this.keys.set(key, record);
        }
        record.requests += 1;
        record.arrivals.push(at);
        record.bodies.add(createHash('sha256').update(body).digest('hex'));
        const connection = this.connections.get(request.socket)!;
        connection.requests += 1;
        const signature = createSignatureVerifier(this.secrets)(body, request.headers);
        const received: ReceivedRequest = {
          at,
          path,
          headers: request.headers,
          body,
          get json() {
            return parseObject(body);
          },
          key,
          attempt: record.requests,
          connection: connection.id,
          onConnection: connection.requests,
          verified: signature.ok,
          ...(signature.ok ? {} : { signatureProblem: signature.reason }),
        };
        const index = this.requests.push(received) - 1;
        const answer = this.behaviour(received, index);
        if (answer.apply ?? (answer.status >= 200 && answer.status < 300)) this.apply(key, record, at);
        if (answer.hang) {
          this.held.push(response);
          return;
        }
        if (answer.drop) {
          request.socket.destroy();
          return;
        }
        const send = () => {
          received.answeredAt = Date.now();
          response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
          response.end(JSON.stringify({ status: answer.status }));
        };
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    server.keepAliveTimeout = 30_000;
    server.on('connection', (socket: Socket) =>
      this.connections.set(socket, { id: ++this.connectionCount, requests: 0 }),
    );
    await new Promise<void>((resolve) => server.listen(listen.port, listen.host, resolve));
    this.server = server;
    this.url = `http://${listen.host}:${(server.address() as AddressInfo).port}`;
  }

  /** Resolves with the time the key's effect was applied (at once if it already was). */
  waitForApplied(key: string): Promise<number> {
    const appliedAt = this.keys.get(key)?.appliedAt;
    if (appliedAt !== undefined) return Promise.resolve(appliedAt);
    return new Promise((resolve) => this.waiters.set(key, [...(this.waiters.get(key) ?? []), resolve]));
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const response of this.held.splice(0)) response.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private apply(key: string, record: KeyRecord, at: number): void {
    if (record.applied > 0) {
      record.repeatsRefused += 1;
      this.wouldHaveDoubleApplied += 1;
      return;
    }
    record.applied = 1;
    record.appliedAt = at;
    this.effects.push(key);
    for (const resolve of this.waiters.get(key) ?? []) resolve(at);
    this.waiters.delete(key);
  }
}

/** A receiver, started; `secrets` verify signatures (settable later: `receiver.secrets = …`). */
export async function startReceiver(behaviour?: Behaviour, secrets?: string[]): Promise<RecordingReceiver> {
  const receiver = new RecordingReceiver(behaviour, secrets);
  await receiver.start();
  return receiver;
}

export type Receiver = RecordingReceiver;

function parseObject(body: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body);
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
