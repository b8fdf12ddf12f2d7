import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { EventInspection } from '../src/app/inspect';
import { PROJECT_ROOT } from '../src/lib/paths';
import { paymentEvent, postWebhook, startTestStack, uniqueId, type TestStack } from '../testkit/harness';
import { listenPortEnv, runCommand, runSettle, spawnSettle, watchOutput } from './support/settle-cli';

/** Runs `settle …` in the project folder, as a person would type it there. */
const settle = (args: string[], env: NodeJS.ProcessEnv) => runSettle(args, env, 300_000, PROJECT_ROOT);

describe('settle commands against a running stack', () => {
  let stack: TestStack;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    stack = await startTestStack();
    env = {
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.config.temporalAddress,
      SETTLE_TASK_QUEUE: stack.taskQueue,
      SETTLE_HOME: mkdtempSync(join(tmpdir(), 'settle-cli-home-')),
    };
  });
  after(async () => {
    await stack.close();
  });

  test('shipments add, replay of an unmatched event, inspect --json, and a second replay that is a no-op', async () => {
    const shipmentId = uniqueId('SHP');
    const event = paymentEvent({ shipmentId, type: 'payment.settled' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    await stack.client.workflow.getHandle(`payment:${event.id}`).result();

    const parked = await settle(['inspect', event.id, '--json'], env);
    assert.equal(parked.code, 0, parked.stderr);
    const parkedView = JSON.parse(parked.stdout) as EventInspection;
    assert.equal(parkedView.outcome, 'unmatched');
    assert.equal(parkedView.shipment, null);
    assert.equal(parkedView.missing_shipment_id, shipmentId);
    const parkedText = await settle(['inspect', event.id], env);
    assert.match(
      parkedText.stdout,
      new RegExp(`shipment\\s+${shipmentId} does not exist \\(settle shipments add ${shipmentId}`),
    );

    const added = await settle(['shipments', 'add', shipmentId, '--json'], env);
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual(JSON.parse(added.stdout), { added: 1, existing: 0 });

    const first = await settle(['replay', event.id, '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    const [replayed] = (JSON.parse(first.stdout) as { results: Record<string, unknown>[] }).results;
    assert.deepEqual(
      (({ status, event_id, workflow_id, before, after, changed }) => ({
        status,
        event_id,
        workflow_id,
        before,
        after,
        changed,
      }))(replayed!),
      {
        status: 'replayed',
        event_id: event.id,
        workflow_id: `payment:${event.id}`,
        before: 'unmatched',
        after: 'applied',
        changed: true,
      },
    );
    // --wait: returns once no delivery is pending or the run has ended, so the run below is over.
    const second = await settle(['replay', event.id, '--wait'], env);
    assert.match(second.stdout, /no change, the claim already says applied/);

    const view = JSON.parse((await settle(['inspect', event.id, '--json'], env)).stdout) as EventInspection;
    assert.equal(view.outcome, 'applied');
    assert.equal(view.missing_shipment_id, null);
    assert.equal(view.shipment?.payment_status, 'settled');
    assert.equal(view.ledger.filter((entry) => entry.event_id === event.id).length, 1);
    assert.equal(view.workflow?.status, 'COMPLETED');
  });

  test('inspect and replay of an unknown event exit non-zero and change nothing', async () => {
    const missing = uniqueId('pay');
    const inspected = await settle(['inspect', missing, '--json'], env);
    assert.equal(inspected.code, 4);
    assert.equal((JSON.parse(inspected.stdout) as { error: string }).error, 'not_found');
    const replayed = await settle(['replay', missing], env);
    assert.equal(replayed.code, 4);
    assert.match(replayed.stderr, /nothing was replayed/);
  });

  test('shipments import reads CSV and JSONL, and refuses a bad file without writing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-shipments-'));
    const [a, b, c] = [uniqueId('SHP'), uniqueId('SHP'), uniqueId('SHP')];
    writeFileSync(join(dir, 'ok.csv'), `shipment_id,carrier\n${a},DHL\n"${b}",UPS\n`);
    // An event's shipment_id may be any 1 to 200 characters; so may a loaded one (a space included).
    writeFileSync(
      join(dir, 'ok.jsonl'),
      `{"shipment_id":"${c}"}\n{"shipment_id":"${a}"}\n{"shipment_id":"${c} / 2"}\n`,
    );
    const [beforeBad, tooLong] = [uniqueId('SHP'), `${uniqueId('SHP')}${'x'.repeat(200)}`];
    writeFileSync(join(dir, 'bad.csv'), `shipment_id\n${beforeBad}\n${tooLong}\n`);
    const csv = await settle(['shipments', 'import', join(dir, 'ok.csv'), '--json'], env);
    assert.deepEqual(JSON.parse(csv.stdout), { read: 2, added: 2, existing: 0 });
    const jsonl = await settle(['shipments', 'import', join(dir, 'ok.jsonl'), '--json'], env);
    assert.deepEqual(JSON.parse(jsonl.stdout), { read: 3, added: 2, existing: 1 });
    const bad = await settle(['shipments', 'import', join(dir, 'bad.csv')], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /bad\.csv:3/);
    const { rows } = await stack.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM shipments WHERE shipment_id = ANY($1::text[])',
      [[beforeBad, tooLong]],
    );
    assert.equal(rows[0]!.n, 0);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a bad configuration value stops a command with a message naming the variable', async () => {
    const bad = await settle(['inspect', 'pay_x'], {
      ...env,
      SETTLE_CLAIM_RETENTION: 'forever',
      PORT: 'eighty',
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /SETTLE_CLAIM_RETENTION/);
    assert.match(bad.stderr, /PORT/);
  });

  test('every command answers --help', async () => {
    for (const command of [
      'start',
      'worker',
      'gateway',
      'migrate',
      'inspect',
      'replay',
      'exceptions',
      'stats',
      'shipments',
      'example',
      'deployment',
    ]) {
      const help = await settle([command, '--help'], env);
      assert.equal(help.code, 0, `${command} --help: ${help.stderr}`);
      assert.match(help.stdout, new RegExp(`Usage: settle ${command}`));
    }
  });
});

describe('npm start on one machine', () => {
  let home: string;
  let child: ChildProcessWithoutNullStreams | undefined;
  let output = '';
  let env: NodeJS.ProcessEnv;

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'settle-home-'));
    env = {
      SETTLE_HOME: home,
      // Every port settle start listens on, the codec server's and any added later included.
      ...(await listenPortEnv()),
      SETTLE_CARRIER_URL: '',
      SETTLE_ERP_URL: '',
      DATABASE_URL: '',
      TEMPORAL_ADDRESS: '',
    };
  });
  after(() => {
    child?.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  test('starts everything, prints a working example command, and stops cleanly on Ctrl-C', async () => {
    child = spawnSettle(['start'], env, PROJECT_ROOT);
    const watched = watchOutput(child);
    await watched.waitForOutput('settle start printed its summary', (text) =>
      text.includes('Ctrl-C stops everything'),
    );
    output = watched.text;
    assert.match(output, new RegExp(`gateway\\s+http://127\\.0\\.0\\.1:${env.PORT}`));
    assert.match(output, new RegExp(`UI http://127\\.0\\.0\\.1:${env.SETTLE_DEV_TEMPORAL_UI_PORT}`));
    assert.match(output, /data in .*postgres/);

    // The printed command, run as printed (npx settle …) in the project folder.
    const printed = /^\s+(npx settle example)$/m.exec(output)?.[1];
    assert.equal(printed, 'npx settle example');
    const example = await runCommand(
      'npx',
      ['settle', 'example', '--json'],
      { SETTLE_HOME: home, DATABASE_URL: '', TEMPORAL_ADDRESS: '' },
      { cwd: PROJECT_ROOT },
    );
    assert.equal(example.code, 0, example.stderr);
    const result = JSON.parse(example.stdout) as { http_status: number; inspection: EventInspection };
    assert.equal(result.http_status, 202);
    assert.equal(result.inspection.outcome, 'applied');
    assert.ok(result.inspection.workflow?.run_id);
    // No carrier or ERP configured: npm start's stand-in received them, once each.
    assert.match(output, /downstream\s+stand-in carrier and ERP at http:\/\/127\.0\.0\.1:/);
    assert.deepEqual(
      result.inspection.deliveries.map((d) => [d.target, d.status, d.attempts]),
      [
        ['carrier', 'delivered', 1],
        ['erp', 'delivered', 1],
      ],
    );

    const ready = await fetch(`http://127.0.0.1:${env.PORT}/readyz`);
    assert.equal(ready.status, 200);

    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child!.once('exit', resolve));
    assert.equal(code, 0, watched.text.slice(-2000));
    await assert.rejects(fetch(`http://127.0.0.1:${env.PORT}/healthz`));
  });
});
