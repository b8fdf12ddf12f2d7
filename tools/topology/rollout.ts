/**
 * The topology run's `--rollout` phase: a rollout of workflow code with Worker Deployments on the
 * real server, under load (docs/deployment.md, "Upgrades"). Build topology-v1 (`settle worker`
 * processes with SETTLE_BUILD_ID) is made current and the unversioned workers stop; one payment is
 * held in a carrier retry (503, Retry-After); build topology-v2, whose payment workflow no v1 history
 * would replay (testkit/next-version-workflows.ts, a worker in this process), joins, is ramped,
 * rolled back, made current; new events run on v2 while the held run completes on v1 with no
 * workflow task failure; v1 is reported drained, then stopped; and chaos/invariants.ts holds for
 * every event sent meanwhile: one claim, one effect per key.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { checkInvariants } from '../../testkit/invariants';
import type { Provider } from '../../testkit/provider';
import { cappedLoad, makeEvent, newRunId, shipmentFor } from '../../testkit/load';
import { failureList, figuresText } from '../../testkit/checks';
import { sleep, type Child } from '../../testkit/processes';
import {
  describeDeployment,
  describeDeploymentVersion,
  setCurrentVersion,
  setRampingVersion,
  waitDrained,
} from '../../src/temporal/deployments';
import { loadConfig } from '../../src/config';
import { addShipments } from '../../src/db/shipments';
import { paymentWorkflowId } from '../../src/domain/ids';
import { bulkTaskQueue } from '../../src/temporal/task-queues';
import { createWorker } from '../../src/worker-runtime/create-worker';
import type { RecordingReceiver } from '../../testkit/receiver';
import {
  bundleWorkflows,
  historyFacts,
  NEXT_BUILD_WORKFLOWS,
  runVersion,
} from '../../testkit/workflow-builds';

/** What the phase needs of the topology run (topology/run.ts's Topology). */
export type RolloutTopology = {
  client: Client;
  pool: pg.Pool;
  receiver: RecordingReceiver;
  workers: Child[];
  env(identity: 'settle'): NodeJS.ProcessEnv;
  startWorker(identity?: 'settle', extraEnv?: Record<string, string>): Promise<Child>;
};

const DEPLOYMENT = 'settle';
const V1 = 'topology-v1';
const V2 = 'topology-v2';

export async function rolloutUnderLoad(
  topology: RolloutTopology,
  provider: Provider,
  options: { rate: number; events: number; log: (line: string) => void },
): Promise<{ failures: string[]; detail: string }> {
  const { failures, expect } = failureList();
  const config = loadConfig(topology.env('settle'));
  const queue = config.taskQueue;
  const polls = async (buildId: string) => {
    for (const started = Date.now(); Date.now() - started < 120_000; await sleep(500)) {
      const version = await describeDeploymentVersion(topology.client, DEPLOYMENT, buildId).catch(
        () => undefined,
      );
      const polled = new Set(version?.task_queues.map((q) => `${q.name} ${q.type}`));
      if (
        [queue, bulkTaskQueue(queue)].every((q) => polled.has(`${q} workflow`) && polled.has(`${q} activity`))
      )
        return;
    }
    throw new Error(`build ${buildId} did not poll both task queues within 120 s`);
  };

  // Versioning on: v1 with the released code, made current; the unversioned workers stop.
  const v1 = [await topology.startWorker('settle', { SETTLE_BUILD_ID: V1 })];
  v1.push(await topology.startWorker('settle', { SETTLE_BUILD_ID: V1 }));
  await polls(V1);
  await setCurrentVersion(topology.client, DEPLOYMENT, V1);
  for (const old of topology.workers.filter((w) => !v1.includes(w))) await old.stop(60_000);
  options.log(`build ${V1} current, unversioned workers stopped`);

  // Load through the whole rollout.
  const runId = newRunId('r');
  await addShipments(
    topology.pool,
    Array.from({ length: options.events + 1 }, (_, i) => shipmentFor(runId, i)),
  );
  const held = makeEvent(runId, options.events);
  const heldKey = `${held.id}:carrier:release_hold`;
  const behaviour = topology.receiver.behaviour;
  let holding = true;
  topology.receiver.behaviour = (request, index) =>
    holding && request.key === heldKey
      ? { status: 503, headers: { 'retry-after': '1' } }
      : behaviour(request, index);
  const load = cappedLoad({
    rate: options.rate,
    maxInFlight: 24,
    max: options.events,
    send: (i) => provider.deliver(makeEvent(runId, i), 180_000),
  });
  await provider.deliver(held, 180_000);
  for (let started = Date.now(); (topology.receiver.keys.get(heldKey)?.requests ?? 0) < 2; await sleep(200))
    if (Date.now() - started > 120_000) throw new Error('the held run never reached the carrier twice');
  const heldRun = topology.client.workflow.getHandle(paymentWorkflowId(held.id));
  expect((await runVersion(heldRun)).buildId === V1, `the held run is not on ${V1}`);

  // v2: a workflow change no v1 history replays, in this process.
  const code = await bundleWorkflows(NEXT_BUILD_WORKFLOWS);
  const { worker: v2Worker, connection } = await createWorker({
    config: { ...config, buildId: V2, deploymentName: DEPLOYMENT },
    pool: topology.pool,
    workflowCodePath: code,
  });
  const v2Running = v2Worker.run();
  try {
    await polls(V2);
    await setRampingVersion(topology.client, DEPLOYMENT, V2, 20);
    await sleep(3_000);
    await setRampingVersion(topology.client, DEPLOYMENT, null, 0); // a rollback mid-ramp
    const rolledBack = await describeDeployment(topology.client, DEPLOYMENT);
    expect(rolledBack.current_build_id === V1 && rolledBack.ramping === null, 'the rollback left a ramp');
    await setCurrentVersion(topology.client, DEPLOYMENT, V2);
    const currentAt = load.sent();
    options.log(`build ${V2} current at event ${currentAt}`);
    await sleep(10_000);
    holding = false;
    await heldRun.result();
    const heldFacts = await historyFacts(heldRun);
    expect((await runVersion(heldRun)).buildId === V1, 'the held run did not finish on v1');
    expect(
      heldFacts.workflowTaskFailures.length === 0,
      `held run: ${heldFacts.workflowTaskFailures.join('; ')}`,
    );
    const { sent, failures: lost } = await load.stop();
    failures.push(...lost);

    // Events sent after v2 became current ran on v2's code.
    const late = Array.from({ length: Math.min(10, sent - currentAt) }, (_, i) =>
      makeEvent(runId, sent - 1 - i),
    );
    for (const event of late) {
      const run = topology.client.workflow.getHandle(paymentWorkflowId(event.id));
      await run.result();
      expect((await runVersion(run)).buildId === V2, `${event.id}, sent after v2 was current, is not on v2`);
      expect((await historyFacts(run)).nextBuildCode, `${event.id} did not run v2's code`);
    }
    expect(late.length > 0, 'no event was sent after v2 became current');

    const report = await checkInvariants(topology, provider, { timeoutMs: 300_000 });
    failures.push(...report.failures);

    const drained = await waitDrained(topology.client, DEPLOYMENT, V1, {
      timeoutMs: 600_000,
      everyMs: 2_000,
    });
    expect(drained.status === 'drained', `build ${V1} is ${drained.status}, not drained`);
    for (const worker of v1) await worker.stop(60_000);
    return {
      failures,
      detail:
        `${sent + 1} events; v2 current at event ${currentAt}; the held run finished on v1; v1 drained, ` +
        `stopped; ${figuresText(report.figures)}`,
    };
  } finally {
    v2Worker.shutdown();
    await v2Running.catch(() => {});
    await connection.close();
  }
}
