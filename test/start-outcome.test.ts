/**
 * A start whose answer never comes back: the gateway reaches Temporal through a real local TCP proxy
 * that forwards the start to the dev server but drops Temporal's answer, so the start is durable while
 * the gateway's deadline passes. The provider is told 503. settle never recorded that run as its own
 * (nor stored the event: the admission rolled back), so the provider's retry replaces it with a run
 * settle records, and is accepted; settle says why the first answer was a 503.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EventInspection } from '../src/app/inspect';
import { paymentWorkflowId } from '../src/domain/ids';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  TEMPORAL_ADDRESS,
  type TestStack,
} from '../testkit/harness';
import { startFaultProxy, type FaultProxy } from '../testkit/fault-proxy';

let proxy: FaultProxy;
let stack: TestStack;
before(async () => {
  proxy = await startFaultProxy(TEMPORAL_ADDRESS);
  stack = await startTestStack({ temporalAddress: proxy.address, worker: false });
});
after(async () => {
  await stack.close();
  await proxy.close();
});

async function unknownStartsCounted(): Promise<number> {
  const text = await (
    await fetch(`${stack.gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${stack.apiToken}` } })
  ).text();
  return Number(/^settle_start_outcome_unknown_total (\d+)/m.exec(text)?.[1] ?? 0);
}

test('a start durable in Temporal but unanswered is a 503, then a duplicate that inspect explains', async () => {
  // Warm: the connection through the proxy works.
  assert.equal((await postWebhook(stack, paymentEvent())).status, 202);
  const countedBefore = await unknownStartsCounted();

  const event = paymentEvent();
  proxy.state.dropAnswers = true;
  const first = await postWebhook(stack, event);
  proxy.state.dropAnswers = false;
  proxy.cutConnections();
  assert.equal(first.status, 503, JSON.stringify(first.body));
  assert.equal(first.body.error, 'temporal_unavailable');
  assert.ok(proxy.state.forwardedWhileDropping > 0, 'the start request reached Temporal');

  // Temporal did start it: the workflow exists although the gateway never heard back.
  const description = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).describe();
  assert.equal(description.workflowId, paymentWorkflowId(event.id));

  // That run is not settle's on record, and its event was never stored: the retry starts settle's own.
  const retry = await postWebhook(stack, event);
  assert.equal(retry.status, 202, JSON.stringify(retry.body));
  assert.equal(retry.body.status, 'accepted');
  assert.notEqual(retry.body.run_id, description.runId);
  const unanswered = await stack.client.workflow
    .getHandle(paymentWorkflowId(event.id), description.runId)
    .describe();
  assert.equal(unanswered.status.name, 'TERMINATED');
  const again = await postWebhook(stack, event);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.status, 'duplicate');

  const inspected = await fetch(`${stack.gatewayUrl}/events/${encodeURIComponent(event.id)}`, {
    headers: { authorization: `Bearer ${stack.apiToken}` },
  });
  assert.equal(inspected.status, 200);
  const inspection = (await inspected.json()) as EventInspection;
  assert.ok(inspection.start_outcome_unknown_at, JSON.stringify(inspection));
  assert.ok(Date.parse(inspection.start_outcome_unknown_at) <= Date.now());
  assert.equal(await unknownStartsCounted(), countedBefore + 1);
});
