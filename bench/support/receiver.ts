import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the receiver does with a request: answer `status` (with `headers`), after applying the effect
 * when `apply` is true (default: for a 2xx). A key already applied is never applied again: the
 * receiver refuses a repeat by its Idempotency-Key, as a well-behaved downstream API does.
 */
export type Answer = { status: number; headers?: Record<string, string>; apply?: boolean };
/** `attempt` counts the requests made with this key so far, from 1. */
export type Behaviour = (request: { path: string; key: string; attempt: number }) => Answer;

export type KeyRecord = {
  /** Requests made with this key. */
  requests: number;
  /** Effects applied for this key: 1 for a delivered effect, 0 for a refused one, never more. */
  applied: number;
  /** Repeats that arrived after the effect was applied and were answered without applying. */
  repeatsRefused: number;
  /** Distinct bodies sent under this key: must be 1 (a retry repeats the same request). */
  bodies: Set<string>;
  /** Arrival of every request, ms since the epoch. */
  arrivals: number[];
  /** When the effect was applied. */
  appliedAt?: number;
  path: string;
};

/**
 * The downstream carrier and ERP on 127.0.0.1: records every request by Idempotency-Key and applies
 * each key's effect at most once. `waitForApplied(key)` resolves when a key's effect is applied.
 */
export class RecordingReceiver {
  readonly keys = new Map<string, KeyRecord>();
  /** Effects that a receiver without idempotency keys would have applied twice. */
  wouldHaveDoubleApplied = 0;
  private readonly waiters = new Map<string, (at: number) => void>();
  private server: Server | undefined;
  url = '';

  constructor(public behaviour: Behaviour = () => ({ status: 200 })) {}

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const now = Date.now();
        const key = String(request.headers['idempotency-key'] ?? '');
        const path = request.url ?? '/';
        let record = this.keys.get(key);
        if (!record) {
          record = { requests: 0, applied: 0, repeatsRefused: 0, bodies: new Set(), arrivals: [], path };
          this.keys.set(key, record);
        }
        record.requests += 1;
        record.arrivals.push(now);
        record.bodies.add(createHash('sha256').update(Buffer.concat(chunks)).digest('hex'));
        const answer = this.behaviour({ path, key, attempt: record.requests });
        const apply = answer.apply ?? (answer.status >= 200 && answer.status < 300);
        if (apply) {
          if (record.applied === 0) {
            record.applied = 1;
            record.appliedAt = now;
            this.waiters.get(key)?.(now);
            this.waiters.delete(key);
          } else {
            record.repeatsRefused += 1;
            this.wouldHaveDoubleApplied += 1;
          }
        }
        response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
        response.end(JSON.stringify({ status: answer.status }));
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves with the time the key's effect was applied (at once if it already was). */
  waitForApplied(key: string): Promise<number> {
    const record = this.keys.get(key);
    if (record?.appliedAt !== undefined) return Promise.resolve(record.appliedAt);
    return new Promise((resolve) => this.waiters.set(key, resolve));
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}
