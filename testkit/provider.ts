import type { PaymentEvent } from '../src/domain/payment-event';
import { postEvent, type Reply } from './load';
import { HANG_BOUND_MS, sleep } from './processes';
import type { ProofStack } from './stack';

export type Acknowledged = { event: PaymentEvent; status: number; body: string; at: number };

/**
 * A payment provider as the suite plays it: it signs and sends events, retries a 5xx or a dropped
 * connection with backoff (as providers do) until it gets an answer below 500, and remembers every
 * event settle acknowledged with a 2xx. The invariant checker holds settle to that memory.
 */
export class Provider {
  readonly acknowledged = new Map<string, Acknowledged>();
  /** Every 5xx (or dropped connection) answered, across all sends. */
  serverErrors = 0;
  /** 2xx answers seen while the suite said a dependency was down: must stay 0. */
  acknowledgedWhileDown = 0;
  dependencyDown = false;

  /** Any stack with a gateway URL (read at each send: a topology alternates between its gateways). */
  constructor(private readonly stack: Pick<ProofStack, 'gatewayUrl' | 'secret'>) {}

  /** One delivery, no retry. */
  async sendOnce(event: PaymentEvent): Promise<Reply> {
    const reply = await postEvent(this.stack.gatewayUrl, this.stack.secret, event);
    if (reply.status === 0 || reply.status >= 500) this.serverErrors += 1;
    if (reply.status >= 200 && reply.status < 300) {
      if (this.dependencyDown) this.acknowledgedWhileDown += 1;
      if (!this.acknowledged.has(event.id)) {
        this.acknowledged.set(event.id, { event, status: reply.status, body: reply.body, at: Date.now() });
      }
    }
    return reply;
  }

  /** Delivers until answered below 500 or `deadlineMs` passes; resolves with the last answer. */
  async deliver(event: PaymentEvent, deadlineMs = HANG_BOUND_MS): Promise<Reply> {
    const deadline = Date.now() + deadlineMs;
    let pause = 250;
    for (;;) {
      const reply = await this.sendOnce(event);
      if ((reply.status !== 0 && reply.status < 500) || Date.now() > deadline) return reply;
      await sleep(pause);
      pause = Math.min(pause * 2, 2_000);
    }
  }
}
