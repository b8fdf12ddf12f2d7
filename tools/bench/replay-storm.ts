import type { PaymentEvent } from '../../src/domain/payment-event';
import { closedLoop, percentile, postEvent } from '../../testkit/load';
import type { ProofStack } from '../../testkit/stack';
import { runsOf, type RowRun } from './context';

/**
 * R: a replay storm: every event of finished runs delivered again (a new webhook message, the same
 * event), closed loop at `concurrency`. Each must answer `200 duplicate` and change nothing.
 */
export async function benchReplayStorm(
  stack: ProofStack,
  events: PaymentEvent[],
  concurrency: number,
): Promise<{
  eventsPerSecond: number;
  ackP50Ms: number;
  ackP99Ms: number;
  errors: number;
  newEffects: number;
}> {
  const effectsBefore = stack.receiver.keys.size;
  const acks: number[] = [];
  let errors = 0;
  const wallMs = await closedLoop(events.length, concurrency, async (i) => {
    const reply = await postEvent(stack.gatewayUrl, stack.secret, events[i]!);
    acks.push(reply.ms);
    if (reply.status !== 200 || !reply.body.includes('"duplicate"')) errors += 1;
  });
  return {
    eventsPerSecond: events.length / (wallMs / 1000),
    ackP50Ms: percentile(acks, 50),
    ackP99Ms: percentile(acks, 99),
    errors,
    newEffects: stack.receiver.keys.size - effectsBefore,
  };
}

/** R: every event P finished delivered again; a duplicate is answered from its claim before any start. */
export const runR: RowRun = async ({ stack, finished, measure }) => {
  if (!finished.length) return;
  await measure('R', `replay storm: all ${finished.length} finished events again, 50 in flight`, {
    run: () => benchReplayStorm(stack, finished, 50),
    events: finished.length,
    // Only a run started since costs.
    workflowIds: (_, __, startedAt) => ({ ...runsOf(finished), since: startedAt }),
  });
};
