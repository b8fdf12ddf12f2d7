import { WorkflowNotFoundError } from '@temporalio/client';
import { startPaymentWorkflow } from '../../../src/client';
import { runMarkKey } from '../../../src/app/run-marks';
import { paymentWorkflowId } from '../../../src/domain/ids';
import type { PaymentWorkflowResult } from '../../../src/workflows';
import { pollUntil } from '../../../testkit/programs';
import { failureList, countWhere, freshEvents, waitForDelivered, type Scenario } from './common';

export const concurrentDeliveries: Scenario = {
  id: '1',
  name: '20 concurrent deliveries of one event',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    const { events } = await freshEvents(stack, 1);
    const replies = await Promise.all(Array.from({ length: 20 }, () => provider.sendOnce(events[0]!)));
    const accepted = replies.filter((reply) => reply.status === 202).length;
    const duplicates = replies.filter(
      (reply) => reply.status === 200 && reply.body.includes('"duplicate"'),
    ).length;
    const serverErrors = replies.filter((reply) => reply.status >= 500 || reply.status === 0).length;
    check(accepted === 1, `expected one 202, got ${accepted}`);
    check(duplicates === 19, `expected 19 duplicates, got ${duplicates}`);
    check((await waitForDelivered(stack, events)) === 1, 'the event was not delivered');
    check((await countWhere(stack, 'ledger_entries', events)) === 1, 'expected one ledger entry');
    return { figures: { accepted, duplicates, serverErrors }, failures };
  },
};

export const redeliveryAfterTemporalForgot: Scenario = {
  id: '2',
  name: 'redelivery after Temporal deleted the closed run',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    const { events } = await freshEvents(stack, 1);
    const event = events[0]!;
    check((await provider.deliver(event)).status === 202, 'first delivery not accepted');
    const handle = stack.client.workflow.getHandle(paymentWorkflowId(event.id));
    await handle.result();
    const requestsBefore = [...stack.receiver.keys.values()].reduce((sum, r) => sum + r.requests, 0);

    await stack.client.workflowService.deleteWorkflowExecution({
      namespace: 'default',
      workflowExecution: { workflowId: paymentWorkflowId(event.id) },
    });
    // The dev server accepts the deletion but (as observed with CLI 1.9.1) does not carry it out for a
    // closed run; then Temporal is made to forget the way retention does, by losing its whole history.
    const forgotten = (waitMs: number) =>
      pollUntil(
        'Temporal to forget the run',
        () =>
          handle.describe().then(
            () => false,
            (error) => error instanceof WorkflowNotFoundError,
          ),
        Boolean,
        waitMs,
      ).catch(() => false);
    let forgottenBy = 'DeleteWorkflowExecution';
    if (!(await forgotten(5_000))) {
      forgottenBy = 'history wiped';
      await stack.wipeTemporal();
    }
    check(await forgotten(10_000), 'Temporal still knows the run');

    // The provider resends: the gateway's events table answers, whatever Temporal remembers.
    const again = await provider.sendOnce(event);
    check(again.status === 200 && again.body.includes('"duplicate"'), `redelivery answered ${again.status}`);
    // Worse: the workflow itself starts again (a lost row, an operator's replay): the claim decides.
    const restarted = await startPaymentWorkflow(stack.client, stack.taskQueue, event, {
      markKey: await runMarkKey(stack.pool),
      runs: stack.pool,
    });
    check(restarted.started, 'Temporal refused a start for an ID it had forgotten');
    const result: PaymentWorkflowResult = await handle.result();
    check(result.claimExisted, 'the second run did not find the claim');
    const requestsAfter = [...stack.receiver.keys.values()].reduce((sum, r) => sum + r.requests, 0);
    check(requestsAfter === requestsBefore, 'the second run called a downstream again');
    check((await countWhere(stack, 'ledger_entries', events)) === 1, 'a second ledger entry appeared');
    return {
      figures: {
        forgottenBy,
        redelivery: again.status,
        secondRunStarted: String(restarted.started),
        claimExisted: String(result.claimExisted),
        newDownstreamCalls: requestsAfter - requestsBefore,
      },
      failures,
    };
  },
};
