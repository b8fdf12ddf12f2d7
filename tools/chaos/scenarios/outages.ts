import { sleep } from '../../../testkit/processes';
import {
  failureList,
  countWhere,
  deliverAtRate,
  deliverHeld,
  ensureWorkers,
  freshEvents,
  recovered,
  waitForPostgres,
  type Scenario,
} from './common';

export const postgresCrash: Scenario = {
  id: '5',
  name: 'PostgreSQL stopped immediately mid-transaction, then restarted',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const { events: held } = await freshEvents(stack, 3);
    const { events: load } = await freshEvents(stack, 30);
    const { waiting: inFlight, release } = await deliverHeld(stack, provider, held);
    const errorsBefore = provider.serverErrors;
    const sending = deliverAtRate(provider, load, 10, 3_000);
    await sleep(1_000);
    await stack.crashPostgres();
    const crashedAt = Date.now();
    await release();
    await sleep(3_000);
    await stack.startPostgres();
    const outageMs = Date.now() - crashedAt;
    await waitForPostgres(stack);
    const sent = await sending;
    const all = [...held, ...load.slice(0, sent)];
    check(inFlight === held.length, `only ${inFlight} transactions were in flight at the crash`);
    await recovered(stack, all, check);
    return {
      figures: {
        inFlightAtCrash: inFlight,
        events: all.length,
        answered503: provider.serverErrors - errorsBefore,
        outageMs,
        recoveryMs: Date.now() - crashedAt,
      },
      failures,
    };
  },
};

export const temporalCrash: Scenario = {
  id: '6',
  name: 'Temporal dev server SIGKILLed with work in flight, restarted on the same database file',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const { events } = await freshEvents(stack, 40);
    const errorsBefore = provider.serverErrors;
    const sending = deliverAtRate(provider, events, 10, 4_000);
    await sleep(1_500);
    await stack.temporal.kill();
    const killedAt = Date.now();
    await sleep(2_000);
    await stack.startTemporal();
    const restartMs = Date.now() - killedAt;
    const sent = await sending;
    const used = events.slice(0, sent);
    await recovered(stack, used, check, { ledger: false });
    return {
      figures: {
        events: used.length,
        answered503: provider.serverErrors - errorsBefore,
        downMs: restartMs,
        recoveryMs: Date.now() - killedAt,
      },
      failures,
    };
  },
};

export const temporalDownDuringIngest: Scenario = {
  id: '7',
  name: 'Temporal down during ingest: no 2xx without a durable start',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const { events } = await freshEvents(stack, 5);
    await stack.temporal.kill();
    provider.dependencyDown = true;
    const replies = await Promise.all(events.map((event) => provider.sendOnce(event)));
    provider.dependencyDown = false;
    const rowsWhileDown = await countWhere(stack, 'events', events);
    const retryAfter = replies.filter((reply) => reply.status === 503).length;
    await stack.startTemporal();
    const after = await Promise.all(events.map((event) => provider.deliver(event)));
    await recovered(stack, events, check, { ledger: false });
    check(
      provider.acknowledgedWhileDown === 0,
      `${provider.acknowledgedWhileDown} 2xx while Temporal was down`,
    );
    check(retryAfter === events.length, `${retryAfter} of ${events.length} answered 503`);
    check(rowsWhileDown === 0, `${rowsWhileDown} events rows written while Temporal was down`);
    check(
      after.every((reply) => reply.status === 202),
      'a retry after recovery was not accepted',
    );
    return {
      figures: {
        answered503WhileDown: retryAfter,
        acknowledgedWhileDown: provider.acknowledgedWhileDown,
        rowsWhileDown,
        acceptedAfter: after.filter((reply) => reply.status === 202).length,
      },
      failures,
    };
  },
};
