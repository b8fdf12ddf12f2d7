import { paymentWorkflowId } from '../../../src/domain/ids';
import type { PaymentWorkflowResult } from '../../../src/workflows';
import { openLoop } from '../../../testkit/load';
import { HANG_BOUND_MS, sleep, within } from '../../../testkit/processes';
import {
  failureList,
  countWhere,
  deliverHeld,
  ensureWorkers,
  freshEvents,
  recovered,
  waitForDelivered,
  type Scenario,
} from './common';

export const killAfterCommit: Scenario = {
  id: '3',
  name: 'SIGKILL the worker after COMMIT, before the activity completes',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await stack.stopWorkers();
    const { events, prefix } = await freshEvents(stack, 3);
    const victim = await stack.startWorker({ SETTLE_CHAOS_PAUSE_AFTER_COMMIT: prefix });
    await Promise.all(events.map((event) => provider.deliver(event)));
    const deadline = Date.now() + 30_000;
    const committed = () => victim.output().split('committed').length - 1;
    while (committed() < events.length && Date.now() < deadline) await sleep(100);
    const committedBeforeKill = committed();
    await victim.kill();
    const killedAt = Date.now();
    check(committedBeforeKill === events.length, `only ${committedBeforeKill} commits before the kill`);
    await recovered(stack, events, check);
    const results = await Promise.all(
      events.map((event) => stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result()),
    );
    check(
      results.every((result: PaymentWorkflowResult) => result.claimExisted && result.outcome === 'applied'),
      'a retried attempt did not find its committed claim',
    );
    return {
      figures: {
        committedBeforeKill,
        retriesFoundClaim: results.filter((result) => result.claimExisted).length,
        recoveryMs: Date.now() - killedAt,
      },
      failures,
    };
  },
};

export const killBeforeCommit: Scenario = {
  id: '4',
  name: 'SIGKILL the worker mid-transaction, before COMMIT',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await stack.stopWorkers();
    const victim = await stack.startWorker();
    const { events } = await freshEvents(stack, 3);
    const { waiting, release } = await deliverHeld(stack, provider, events);
    await victim.kill();
    const killedAt = Date.now();
    await release();
    await sleep(1_000);
    const claimsAfterKill = await countWhere(stack, 'claims', events);
    check(waiting === events.length, `only ${waiting} transactions were in flight at the kill`);
    check(claimsAfterKill === 0, `${claimsAfterKill} claims committed by a killed worker`);
    await recovered(stack, events, check);
    return {
      figures: { inFlightAtKill: waiting, claimsAfterKill, recoveryMs: Date.now() - killedAt },
      failures,
    };
  },
};

export const gracefulShutdown: Scenario = {
  id: '11',
  name: 'SIGTERM a worker mid-activity (graceful shutdown)',
  async run({ stack, provider }) {
    const { check, failures } = failureList();
    await stack.stopWorkers();
    const worker = await stack.startWorker();
    const { events } = await freshEvents(stack, 2);
    const { waiting, release } = await deliverHeld(stack, provider, events);
    const signalledAt = Date.now();
    worker.process.kill('SIGTERM');
    await sleep(1_000);
    await release();
    const exit = await within(worker.exited, HANG_BOUND_MS, 'timeout');
    const drainMs = Date.now() - signalledAt;
    const committedByDrainingWorker = await countWhere(stack, 'claims', events);
    check(waiting === events.length, `only ${waiting} activities were in flight at SIGTERM`);
    check(exit === 0, `the worker exited ${exit}`);
    check(worker.output().includes('worker drained'), 'the worker did not drain');
    check(committedByDrainingWorker === events.length, 'in-flight activities were not finished by the drain');
    await recovered(stack, events, check, { ledger: false });
    return { figures: { inFlightAtSigterm: waiting, exit, drainMs, committedByDrainingWorker }, failures };
  },
};

export const soak: Scenario = {
  id: '12',
  name: 'soak: sustained load, a worker SIGKILLed every 30 s',
  async run({ stack, provider, short }) {
    const { check, failures } = failureList();
    await ensureWorkers(stack, 2);
    const rate = short ? 5 : 8;
    const seconds = short ? 65 : 185;
    const { events } = await freshEvents(stack, rate * seconds + 10);
    let kills = 0;
    let stopped = false;
    const loadStarted = Date.now();
    // On the clock (every 30 s from the start), whatever a restart takes: each kill's replacement
    // starts beside the load rather than holding the next kill back, so a slow machine gets as many
    // kills as a fast one (the oldest running worker is the one killed).
    const replacements: Promise<unknown>[] = [];
    const killer = (async () => {
      while (!stopped) {
        const nextKillAt = loadStarted + (kills + 1) * 30_000;
        while ((Date.now() < nextKillAt || !stack.workers.length) && !stopped) await sleep(250);
        if (stopped) break;
        await stack.workers[0]!.kill();
        kills += 1;
        replacements.push(stack.startWorker());
      }
    })();
    let acknowledged = 0;
    const sent = await openLoop(
      rate,
      seconds * 1000,
      async (i) => {
        const reply = await provider.deliver(events[i]!);
        if (reply.status === 202) acknowledged += 1;
      },
      events.length,
    );
    stopped = true;
    await killer;
    await Promise.all(replacements);
    const loadEnded = Date.now();
    const used = events.slice(0, sent);
    const delivered = await waitForDelivered(stack, used);
    check(acknowledged === sent, `${sent - acknowledged} events were never acknowledged`);
    check(delivered === sent, `${delivered} of ${sent} delivered`);
    check(kills >= Math.floor((seconds - 1) / 30), `only ${kills} kills in ${seconds} s`);
    return {
      figures: { rate, seconds, sent, acknowledged, kills, delivered, drainMs: Date.now() - loadEnded },
      failures,
    };
  },
};
