import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { signWebhook } from '../src/lib/webhook-signature';
import { freePort } from '../testkit/free-port';
import { shortHash } from '../src/lib/hash';
import { paymentEvent, uniqueId, waitFor } from '../testkit/harness';
import { useReceiver, useTestStack } from '../testkit/hooks';
import { finished, runSettle, spawnSettle, stackEnv, type CliRun } from './support/settle-cli';

const downstream = useReceiver();
// The worker under test is the `settle worker` process below, not an in-process one.
const stack = useTestStack(() => ({
  worker: false,
  config: { carrierUrl: downstream.url, erpUrl: downstream.url },
}));

describe('logs', () => {
  test('every line the gateway, the worker and the CLI write is JSON, with no raw event ID, secret or signature', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-logs-'));
    const logFile = join(dir, 'settle.log');
    const port = await freePort();
    const env = stackEnv(stack, { PORT: String(port), SETTLE_METRICS_PORT: '0', SETTLE_LOG_FILE: logFile });
    const gatewayUrl = `http://127.0.0.1:${port}`;
    const gateway = spawnSettle(['gateway'], env);
    const worker = spawnSettle(['worker'], env);
    const processes = [finished(gateway), finished(worker)];
    const secretsSeen = [stack.secret, stack.apiToken];
    const rawIds: string[] = [];

    const post = async (body: string, secret = stack.secret, headers: Record<string, string> = {}) => {
      const signed = signWebhook(secret, `msg_${uniqueId('m')}`, body);
      secretsSeen.push(signed['webhook-signature'], signed['webhook-signature'].slice(3));
      const response = await fetch(`${gatewayUrl}/webhooks/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signed, ...headers },
        body,
      });
      return response.status;
    };

    let runs: CliRun[];
    try {
      // A process start (tsx, the config, a Temporal connection) takes far longer on a loaded machine.
      await waitFor(
        'the gateway',
        async () => (await fetch(`${gatewayUrl}/healthz`).catch(() => undefined))?.ok,
      );
      const shipmentId = uniqueId('SHP');
      await addShipments(stack.pool, [shipmentId]);
      const applied = paymentEvent({ shipmentId, type: 'payment.captured' });
      const lateShipment = uniqueId('SHP');
      const unmatched = paymentEvent({ shipmentId: lateShipment });
      const imported = paymentEvent({ shipmentId, type: 'payment.settled' });
      rawIds.push(applied.id, unmatched.id, imported.id);

      assert.equal(await post(JSON.stringify(applied)), 202);
      assert.equal(await post(JSON.stringify(applied)), 200);
      assert.equal(await post(JSON.stringify({ ...applied, data: { ...applied.data, amount: 7 } })), 409);
      assert.equal(await post(JSON.stringify(unmatched)), 202);
      assert.equal(
        await post(
          JSON.stringify(paymentEvent()),
          `whsec_${Buffer.from('wrong-secret-xx').toString('base64')}`,
        ),
        401,
      );
      assert.equal(await post('{"id":"pay_broken","type":'), 400);
      rawIds.push('pay_broken');
      const inspected = await fetch(`${gatewayUrl}/events/${applied.id}`, {
        headers: { authorization: `Bearer ${stack.apiToken}` },
      });
      assert.equal(inspected.status, 200);
      for (const event of [applied, unmatched]) {
        await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
      }

      const report = join(dir, 'report.jsonl');
      writeFileSync(report, `${JSON.stringify(imported)}\n`);
      runs = [
        await runSettle(['import', report, '--json'], env),
        await runSettle(['shipments', 'add', lateShipment, '--json'], env),
        await runSettle(['replay', unmatched.id, '--json'], env),
        await runSettle(['exceptions', '--json'], env),
        await runSettle(['stats', '--json', '--metrics-url', `${gatewayUrl}/metrics`], env),
      ];
      for (const run of runs) assert.equal(run.code, 0, run.stderr);
      await stack.client.workflow.getHandle(paymentWorkflowId(imported.id)).result();
      await waitFor('the activity log line of the import', async () =>
        readFileSync(logFile, 'utf8').includes(shortHash(imported.id)),
      );
    } finally {
      gateway.kill('SIGTERM');
      worker.kill('SIGTERM');
    }
    const exits = await Promise.all(processes);

    const lines = readFileSync(logFile, 'utf8').split('\n').filter(Boolean);
    // Whatever else went to the processes' own output must be JSON lines too.
    for (const run of exits) lines.push(...run.stdout.split('\n').filter(Boolean));
    assert.ok(lines.length > 10, `only ${lines.length} log lines`);
    const records = lines.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        assert.fail(`not JSON: ${line}`);
      }
    });
    const everything = [...lines, ...exits.map((run) => run.stderr), ...runs.map((run) => run.stderr)].join(
      '\n',
    );
    for (const needle of [...rawIds, ...secretsSeen]) {
      assert.equal(everything.includes(needle), false, `a log line carries ${needle.slice(0, 12)}…`);
    }

    const requests = records.filter((r) => r.msg === 'request');
    assert.ok(requests.length >= 7, `${requests.length} request lines`);
    assert.ok(requests.some((r) => r.event === shortHash(rawIds[0]!) && r.status === 409));
    const activities = records.filter((r) => r.component === 'activity');
    assert.ok(
      activities.some(
        (r) =>
          r.activity === 'reconcilePayment' && r.event === shortHash(rawIds[0]!) && r.outcome === 'completed',
      ),
    );
    assert.ok(activities.some((r) => r.event === shortHash(rawIds[1]!) && r.result === 'applied'));
    assert.ok(
      activities.some((r) => r.activity === 'deliverOutboxRow' && r.event === shortHash(rawIds[0]!)),
      'no deliverOutboxRow line names its event',
    );
  });
});
