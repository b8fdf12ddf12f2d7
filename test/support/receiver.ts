import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceivedRequest = {
  /** Arrival time, ms since the epoch. */
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: Record<string, unknown>;
  /** The request's Idempotency-Key (falls back to webhook-id). */
  key: string;
};

/**
 * What the receiver does with the n-th request (0-based): answer `status`; `apply` the effect first
 * (default: when the answer is 2xx); `hang` holds the request open and never answers.
 */
export type Answer = { status: number; headers?: Record<string, string>; apply?: boolean; hang?: boolean };
export type Behaviour = (request: ReceivedRequest, index: number) => Answer;

export type Receiver = {
  url: string;
  /** Every request, in arrival order. */
  requests: ReceivedRequest[];
  /** Keys whose effect was applied: a repeat of a key is deduplicated, as a well-behaved API does. */
  effects: string[];
  close(): Promise<void>;
};

/** A downstream API on 127.0.0.1 that records every request and misbehaves as told. */
export async function startReceiver(behaviour: Behaviour = () => ({ status: 200 })): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const effects: string[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const received: ReceivedRequest = {
        at: Date.now(),
        headers: request.headers,
        body,
        json: body ? (JSON.parse(body) as Record<string, unknown>) : {},
        key: String(request.headers['idempotency-key'] ?? request.headers['webhook-id'] ?? ''),
      };
      const index = requests.push(received) - 1;
      const answer = behaviour(received, index);
      const apply = answer.apply ?? (answer.status >= 200 && answer.status < 300);
      if (apply && !effects.includes(received.key)) effects.push(received.key);
      if (answer.hang) {
        held.push(response);
        return;
      }
      response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      response.end(JSON.stringify({ status: answer.status }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    effects,
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
