/**
 * A rolling upgrade in the documented order answers no 5xx (docs/deployment.md, "Upgrades"): the
 * previous release's own code (test/support/previous-release.ts, checked out from its commit) migrates
 * a database and runs its gateway and worker; then this release's `settle migrate` (expand), its
 * gateway and worker beside the old ones, the old ones stopped, and `settle migrate --contract`.
 * Signed webhooks go to whichever gateway serves throughout, new events and repeats of accepted ones.
 * Every answer is 202 or 200, and every accepted event is applied once.
 *
 * Skipped, saying why, where the checkout has no history (a shallow clone).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { freePorts } from '../testkit/free-port';
import {
  createTestDatabase,
  newSecret,
  paymentEvent,
  postWebhook,
  TEMPORAL_ADDRESS,
  uniqueId,
  waitFor,
} from '../testkit/harness';
import { startReceiver, targetUrlVariables, type Receiver } from '../testkit/receiver';
import type { PaymentEvent } from '../src/domain/payment-event';
import {
  checkoutPreviousRelease,
  previousReleaseUnavailable,
  PREVIOUS_RELEASE,
} from './support/previous-release';
import { runSettle, spawnCommand, spawnSettle, watchOutput } from './support/settle-cli';

const unavailable = previousReleaseUnavailable();
if (unavailable) process.stderr.write(`rolling-upgrade: skipped: ${unavailable}\n`);

type Process = { url?: string; stop(): Promise<void> };

describe('a rolling upgrade from the previous release', { skip: unavailable }, () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let previous: Awaited<ReturnType<typeof checkoutPreviousRelease>>;
  let downstream: Receiver;
  let env: NodeJS.ProcessEnv;
  const secret = newSecret();
  const running: Process[] = [];

  before(async () => {
    [db, previous, downstream] = await Promise.all([
      createTestDatabase({ blank: true }),
      checkoutPreviousRelease(),
      startReceiver(),
    ]);
    env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: 'default',
      SETTLE_TASK_QUEUE: `settle-upgrade-${randomUUID()}`,
      SETTLE_WEBHOOK_SECRETS: secret,
      SETTLE_API_TOKEN: randomBytes(24).toString('hex'),
      SETTLE_OUTBOUND_SECRET: newSecret(),
      SETTLE_REMINDER_SECRET: newSecret(),
      SETTLE_ALLOW_PRIVATE_TARGETS: 'true',
      ...targetUrlVariables(downstream.url),
      SETTLE_METRICS_PORT: '0',
      // `worker running` is an info line.
      SETTLE_LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    for (const role of running) await role.stop().catch(() => undefined);
    await db?.drop();
    await downstream?.close();
    previous?.remove();
  });

  /** A role of one release: `old` runs the previous release's sources through tsx, `new` this build. */
  async function start(release: 'old' | 'new', role: 'gateway' | 'worker'): Promise<Process> {
    const [port] = await freePorts(1);
    const roleEnv = { ...env, PORT: String(port), SETTLE_HOME: mkdtempSync(join(tmpdir(), 'settle-home-')) };
    const child =
      release === 'old'
        ? spawnCommand(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', role], roleEnv, previous.dir)
        : spawnSettle([role], roleEnv);
    const output = watchOutput(child);
    const url = role === 'gateway' ? `http://127.0.0.1:${port}` : undefined;
    const handle: Process = {
      url,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await output.exited;
      },
    };
    running.push(handle);
    if (url)
      await output.waitForOutput(`the ${release} gateway`, () => output.text.includes('gateway listening'));
    else await output.waitForOutput(`the ${release} worker`, () => output.text.includes('worker running'));
    if (url)
      await waitFor(
        `the ${release} gateway's health`,
        async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok,
      );
    return handle;
  }

  test('every answer is 202 or 200 through expand, the roll-out and contract; every accepted event applies once', async () => {
    const migrated = await runOld(['migrate']);
    assert.equal(migrated.code, 0, migrated.output);

    const oldGateway = await start('old', 'gateway');
    let gateway = oldGateway;
    const oldWorker = await start('old', 'worker');

    // The provider's side: events one after another to whichever gateway serves, each phase labelled.
    const answers: {
      phase: string;
      status: number;
      body: Record<string, unknown>;
      repeat: boolean;
      eventId: string;
    }[] = [];
    const accepted: PaymentEvent[] = [];
    let phase = 'old release';
    let sending = true;
    let senderFailed: unknown;
    const sender = (async () => {
      for (let n = 0; sending && senderFailed === undefined; n += 1) {
        const repeat = n % 4 === 3 && accepted.length > 0;
        let event: PaymentEvent;
        if (repeat) event = accepted[n % accepted.length]!;
        else {
          const shipmentId = uniqueId('SHP');
          await addShipments(db.pool, [shipmentId]);
          event = paymentEvent({ shipmentId, type: 'payment.captured' });
        }
        const sentIn = phase;
        const answer = await postWebhook({ gatewayUrl: gateway.url!, secret }, event).catch(
          (error: unknown) => {
            senderFailed = error; // A gateway that refused the connection: fails the next wait at once.
            throw error;
          },
        );
        answers.push({ phase: sentIn, status: answer.status, body: answer.body, repeat, eventId: event.id });
        if (answer.status === 202) accepted.push(event);
      }
    })();
    sender.catch(() => undefined); // Reported by the next wait and by the await below.
    /** Waits until `count` more answers came in the current phase. */
    const more = (count: number) => {
      const now = phase;
      const seen = answers.filter((a) => a.phase === now).length;
      return waitFor(`${count} answers in phase "${now}"`, async () => {
        if (senderFailed !== undefined) throw senderFailed;
        return answers.filter((a) => a.phase === now).length >= seen + count;
      });
    };

    let expanded: { held_back: string[] } | undefined;
    try {
      await more(8);

      // 1. This release's `settle migrate`: expand only, while the old gateway and worker serve.
      phase = 'old release, schema expanded';
      const expand = await runSettle(['migrate', '--json'], env);
      assert.equal(expand.code, 0, expand.stderr);
      expanded = JSON.parse(expand.stdout) as { held_back: string[] };
      await more(12);
      // The old worker alone applies what the old gateway accepted on the expanded schema.
      const acceptedExpanded = answers
        .filter((a) => a.phase === phase && a.status === 202)
        .map((a) => a.eventId);
      await waitFor(
        `the old worker applying the ${acceptedExpanded.length} events accepted after expand`,
        () => appliedCount(acceptedExpanded),
        { until: (n) => n === acceptedExpanded.length },
      );

      // 2. The new gateway and worker beside the old ones; the old ones leave, gateway last.
      await start('new', 'worker');
      const newGateway = await start('new', 'gateway');
      phase = 'new release, schema expanded';
      gateway = newGateway;
      await oldWorker.stop();
      await oldGateway.stop();
      await more(8);

      // 3. No process of the previous release remains: the contract step, while the new ones serve.
      const status = await runSettle(['migrate', '--status', '--json'], env);
      assert.equal(status.code, 0, status.stderr);
      const pending = JSON.parse(status.stdout) as { contract: { name: string }[] };
      assert.deepEqual(
        pending.contract.map((c) => c.name),
        expanded.held_back,
      );
      phase = 'new release, contract running';
      const contract = await runSettle(['migrate', '--contract', '--json'], env);
      assert.equal(contract.code, 0, contract.stderr);
      assert.deepEqual((JSON.parse(contract.stdout) as { applied: string[] }).applied, expanded.held_back);
      phase = 'new release, contracted';
      await more(12);
    } finally {
      sending = false;
      await sender;
    }

    const failed = answers.filter((a) => a.status >= 500);
    assert.deepEqual(
      failed.map((a) => `${a.phase}: ${a.status} ${JSON.stringify(a.body)}`),
      [],
      'a 5xx during the upgrade',
    );
    // The migration the previous release cannot run beside waited for the contract step.
    assert.ok(expanded?.held_back.includes('017_claim_partitions.sql'), JSON.stringify(expanded));
    for (const answer of answers) {
      assert.equal(
        answer.status,
        answer.repeat ? 200 : 202,
        `${answer.phase}: ${JSON.stringify(answer.body)}`,
      );
      if (answer.repeat) assert.equal(answer.body.status, 'duplicate');
    }

    const ids = accepted.map((event) => event.id);
    await waitFor(`all ${ids.length} accepted events applied`, () => appliedCount(ids), {
      until: (n) => n === ids.length,
    });
    const ledger = await db.pool.query<{ event_id: string; n: number }>(
      `SELECT event_id, count(*)::int AS n FROM ledger_entries WHERE event_id = ANY ($1::text[]) GROUP BY event_id`,
      [ids],
    );
    assert.equal(ledger.rows.length, ids.length, 'a capture entry for every accepted event');
    assert.ok(
      ledger.rows.every((row) => row.n === 1),
      'one capture entry each',
    );
    const claims = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM claims WHERE event_id = ANY ($1::text[])`,
      [ids],
    );
    assert.equal(claims.rows[0]!.n, ids.length, 'one claim each');
    const partitioned = await db.pool.query<{ relkind: string }>(
      `SELECT relkind FROM pg_class WHERE oid IN ('claims'::regclass, 'events'::regclass)`,
    );
    assert.deepEqual(
      partitioned.rows.map((row) => row.relkind),
      ['p', 'p'],
    );
  });

  /** How many of these events have their claim applied. */
  async function appliedCount(ids: string[]): Promise<number> {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM claims WHERE event_id = ANY ($1::text[]) AND outcome = 'applied'`,
      [ids],
    );
    return rows[0]!.n;
  }

  /** A command of the previous release, through tsx from its own folder. */
  async function runOld(args: string[]): Promise<{ code: number | null; output: string }> {
    const child = spawnCommand(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      env,
      previous.dir,
    );
    const output = watchOutput(child);
    await output.exited;
    return { code: child.exitCode, output: `${PREVIOUS_RELEASE.commit}: ${output.text}` };
  }
});
