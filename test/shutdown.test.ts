/**
 * Every settle process stops within 10 s of SIGTERM or SIGINT whatever it waits on, and a worker that
 * cannot register ends with the cause instead of idling. Real processes (`node bin/settle.js …`) on the
 * suite's Temporal dev server and PostgreSQL; downstreams that hang are real local HTTP servers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { addShipments } from '../src/db/shipments';
import { freePort } from '../testkit/free-port';
import { newSecret, paymentEvent, postWebhook, startTestStack, uniqueId, waitFor } from '../testkit/harness';
import { startReceiver } from '../testkit/receiver';
import { useTestStack } from '../testkit/hooks';
import {
  finished,
  listenPortEnv,
  runSettle,
  spawnSettle,
  stackEnv,
  watchOutput,
  type CliRun,
} from './support/settle-cli';

/** What the issue asks of every process: stopped within 10 s of the signal. */
const STOP_BUDGET_MS = 10_000;
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

// No in-process worker: the processes under test are the only ones polling this task queue.
const stack = useTestStack({ worker: false });
let home: string;

before(() => {
  // One SETTLE_HOME for every spawned worker, so the workflow bundle is built once.
  home = mkdtempSync(join(tmpdir(), 'settle-home-'));
});
after(() => rmSync(home, { recursive: true, force: true }));

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return stackEnv(stack, { SETTLE_HOME: home, SETTLE_METRICS_PORT: '0', ...extra });
}

/**
 * Spawns a command and collects its combined output as it comes. `until` waits on a condition while
 * the command runs: it fails at once, with the command's last output, when the command exits first
 * (a command that died at start is not waited on for the whole hang bound).
 */
function spawnWithOutput(args: string[], environment: NodeJS.ProcessEnv) {
  const child = spawnSettle(args, environment);
  const run = finished(child);
  const output = watchOutput(child);
  const until = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs?: number) =>
    waitFor(
      what,
      async () => {
        const exited = child.exitCode !== null || child.signalCode !== null;
        const value = await probe();
        if (value || !exited) return value;
        throw new Error(
          `${child.spawnargs.slice(1).join(' ')} exited (code ${child.exitCode}, signal ${child.signalCode}) ` +
            `before ${what}; its last output:\n${output.text.slice(-3000)}`,
        );
      },
      timeoutMs,
    );
  return { child, run, output, until };
}

/** Every stop this file measured, printed at the end: the longest is the one the 10 s promise is about. */
const stops: {
  what: string;
  signal: NodeJS.Signals;
  ms: number;
  code: number | null;
  forced?: string;
}[] = [];
after(() => {
  const sorted = [...stops].sort((a, b) => b.ms - a.ms);
  const rows = sorted.map(
    (stop) =>
      `  ${String(stop.ms).padStart(6)} ms  ${stop.what} (${stop.signal}, code ${stop.code})${stop.forced ? `: ${stop.forced}` : ''}`,
  );
  process.stderr.write(`shutdown test: ${stops.length} stops, longest first\n${rows.join('\n')}\n`);
});

/** Sends `signal` and measures how long the process takes to exit. */
async function stopWith(
  child: ChildProcessWithoutNullStreams,
  run: Promise<CliRun>,
  signal: NodeJS.Signals,
): Promise<CliRun & { ms: number; signalled: NodeJS.Signals }> {
  const sent = Date.now();
  child.kill(signal);
  const result = await run;
  return { ...result, ms: Date.now() - sent, signalled: signal };
}

function assertStopped(result: CliRun & { ms: number; signalled: NodeJS.Signals }, what: string) {
  stops.push({
    what,
    signal: result.signalled,
    ms: result.ms,
    code: result.code,
    // What lib/shutdown.ts names when a stop outlasts its deadline.
    forced: /still waiting on .*/.exec(result.stderr)?.[0],
  });
  // Exited by itself (a code), not killed by the signal's default action, and in time.
  assert.notEqual(result.code, null, `${what} was killed by ${result.signal}\n${result.stderr}`);
  assert.ok(result.ms < STOP_BUDGET_MS, `${what} took ${result.ms} ms to stop\n${result.stderr}`);
  // Stopped by its own stops, not by lib/shutdown.ts's forced exit: a wait that outlasted its bound
  // (a drain waiting on an in-flight activity) is named there, and fails here.
  assert.doesNotMatch(result.stderr, /still waiting on/, `${what} was stopped by the deadline`);
}

/** Whether something accepts TCP connections on the port (a stopped process's port refuses). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * `clients` senders posting webhooks back to back, each until `stop()` or until its post fails (the
 * gateway is gone). `gaveUp()` names why every sender stopped before `stop()`: a wait on `accepted()`
 * fails with it at once, rather than waiting its whole bound on senders that no longer send.
 */
function postUntilStopped(
  gateway: { gatewayUrl: string; secret: string },
  clients: number,
): { accepted(): number; gaveUp(): string | undefined; stop(): Promise<void> } {
  let load = true;
  let accepted = 0;
  let sending = clients;
  let lastError: unknown;
  const senders = Array.from({ length: clients }, async () => {
    try {
      while (load) {
        const posted = await postWebhook(gateway, paymentEvent()).catch((error: unknown) => {
          lastError = error;
          return undefined;
        });
        if (!posted) return;
        if (posted.status === 202) accepted += 1;
      }
    } finally {
      sending -= 1;
    }
  });
  return {
    accepted: () => accepted,
    gaveUp: () =>
      load && sending === 0
        ? `every sender stopped after ${accepted} accepted: ${String((lastError as Error | undefined)?.cause ?? lastError)}`
        : undefined,
    async stop() {
      load = false;
      await Promise.all(senders);
    },
  };
}

/** Whether any stored event's ID matches the LIKE pattern. */
async function eventsLike(pattern: string): Promise<boolean> {
  const { rows } = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE event_id LIKE $1`,
    [pattern],
  );
  return rows[0]!.n > 0;
}

/** Whether the event's claim is committed (a worker reconciled it). */
async function eventsClaimed(eventId: string): Promise<boolean> {
  const { rows } = await stack.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM claims WHERE event_id = $1`,
    [eventId],
  );
  return rows[0]!.n > 0;
}

async function storedEventWithoutWorker(): Promise<string> {
  const event = paymentEvent({ shipmentId: uniqueId('SHP') });
  const posted = await postWebhook(stack, event);
  assert.equal(posted.status, 202, JSON.stringify(posted.body));
  return event.id;
}

describe('a Temporal that cannot run settle', () => {
  test('a worker on a missing namespace exits non-zero within 10 s, naming the namespace', async () => {
    const namespace = `missing-${randomUUID().slice(0, 8)}`;
    // Downstream URLs set (nothing is delivered): only the namespace is missing.
    const { run, output, until } = spawnWithOutput(
      ['worker'],
      env({
        TEMPORAL_NAMESPACE: namespace,
        SETTLE_CARRIER_URL: 'http://127.0.0.1:9/carrier',
        SETTLE_ERP_URL: 'http://127.0.0.1:9/erp',
      }),
    );
    // Timed from the worker being up (its metrics endpoint), not from Node and tsx loading.
    await until('the worker to start', async () => output.text.includes('worker metrics listening'));
    const up = Date.now();
    const result = await run;
    assert.ok(Date.now() - up < STOP_BUDGET_MS, `exited ${Date.now() - up} ms after start`);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`Temporal namespace "${namespace}" does not exist`));
    assert.match(result.stderr, /TEMPORAL_NAMESPACE/);
  });

  test('the gateway is not ready while its namespace is missing, and says which', async () => {
    const namespace = `missing-${randomUUID().slice(0, 8)}`;
    const other = await startTestStack({ worker: false, config: { temporalNamespace: namespace } });
    try {
      // Polled as a probe does: a first probe may still be connecting.
      const body = await waitFor('/readyz to name the namespace', async () => {
        // Why Temporal refuses settle is told to a bearer of the API token (or on the operator port).
        const ready = await fetch(`${other.gatewayUrl}/readyz`, {
          headers: { authorization: `Bearer ${other.apiToken}` },
        });
        assert.equal(ready.status, 503);
        const answer = (await ready.json()) as Record<string, unknown>;
        return answer.temporal_error ? answer : undefined;
      });
      assert.equal(body.status, 'not_ready');
      assert.equal(body.postgres, true);
      assert.equal(body.temporal, false);
      assert.equal(body.temporal_error, 'namespace_not_found');
      assert.match(String(body.message), new RegExp(`namespace "${namespace}" does not exist`));
    } finally {
      await other.close();
    }
    // The default namespace exists: the same check says ready.
    const ready = await fetch(`${stack.gatewayUrl}/readyz`);
    assert.equal(ready.status, 200);
  });

  test('inspect names a missing namespace instead of calling Temporal unavailable', async () => {
    const eventId = await storedEventWithoutWorker();
    const namespace = `missing-${randomUUID().slice(0, 8)}`;
    const result = await runSettle(['inspect', eventId, '--json'], env({ TEMPORAL_NAMESPACE: namespace }));
    assert.equal(result.code, 0, result.stderr);
    const inspection = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(inspection.workflow_error, 'temporal_namespace_not_found');
    assert.match(String(inspection.workflow_error_message), new RegExp(`"${namespace}" does not exist`));
  });
});

describe('every process stops within 10 s of SIGTERM and of SIGINT while busy', () => {
  for (const signal of SIGNALS) {
    test(`worker with an activity in flight: ${signal}`, async () => {
      const shipmentId = uniqueId('SHP');
      await addShipments(stack.pool, [shipmentId]);
      // A downstream of its own: nothing held open by an earlier test stands in the way.
      const hanging = await startReceiver(() => ({ status: 200, hang: true }));
      after(() => hanging.close());
      const { child, run, output, until } = spawnWithOutput(
        ['worker'],
        env({
          SETTLE_CARRIER_URL: hanging.url,
          SETTLE_ERP_URL: hanging.url,
          SETTLE_ALLOW_PRIVATE_TARGETS: 'true',
        }),
      );
      await until('the worker to run', async () => output.text.includes('worker running'));
      const before = hanging.requests.length;
      const posted = await postWebhook(stack, paymentEvent({ shipmentId }));
      assert.equal(posted.status, 202);
      await until(
        'a delivery held open by the downstream',
        async () => hanging.requests.length > before,
        300_000,
      );
      const result = await stopWith(child, run, signal);
      assertStopped(result, 'the worker');
    });

    test(`gateway under requests: ${signal}`, async () => {
      const port = await freePort();
      const { child, run, output, until } = spawnWithOutput(['gateway'], env({ PORT: String(port) }));
      await until('the gateway to listen', async () => output.text.includes('gateway listening'));
      const gateway = { gatewayUrl: `http://127.0.0.1:${port}`, secret: stack.secret };
      const load = postUntilStopped(gateway, 8);
      await until('requests to be answered', async () =>
        output.text.includes('"route":"/webhooks/payments"'),
      );
      const result = await stopWith(child, run, signal);
      await load.stop();
      assertStopped(result, 'the gateway');
      assert.equal(result.code, 0, result.stderr);
    });

    test(`serve (gateway and worker in one process) under requests: ${signal}`, async () => {
      const port = await freePort();
      const downstream = await startReceiver(() => ({ status: 200 }));
      after(() => downstream.close());
      const { child, run, output, until } = spawnWithOutput(
        ['serve'],
        env({
          PORT: String(port),
          SETTLE_CARRIER_URL: downstream.url,
          SETTLE_ERP_URL: downstream.url,
          SETTLE_ALLOW_PRIVATE_TARGETS: 'true',
        }),
      );
      await until('serve to listen', async () => output.text.includes('gateway listening'));
      const gateway = { gatewayUrl: `http://127.0.0.1:${port}`, secret: stack.secret };
      // Its own worker applies what its gateway accepted (this suite runs no other worker).
      const shipmentId = uniqueId('SHP');
      await addShipments(stack.pool, [shipmentId]);
      const first = paymentEvent({ shipmentId });
      assert.equal((await postWebhook(gateway, first)).status, 202);
      await until('the first event to be claimed', () => eventsClaimed(first.id));
      const load = postUntilStopped(gateway, 4);
      await until('requests to be answered', async () =>
        output.text.includes('"route":"/webhooks/payments"'),
      );
      const result = await stopWith(child, run, signal);
      await load.stop();
      assertStopped(result, 'serve');
      assert.equal(result.code, 0, result.stderr);
    });

    test(`replay waiting on a workflow no worker runs: ${signal}`, async () => {
      const eventId = await storedEventWithoutWorker();
      // The replay's PostgreSQL sessions carry this name (libpq's PGAPPNAME, honoured by pg).
      const applicationName = uniqueId('replay');
      const { child, run, until } = spawnWithOutput(['replay', eventId], env({ PGAPPNAME: applicationName }));
      // The replay has read the event; from there it waits on a run that no worker will ever finish.
      await until(
        'the replay to read the event',
        async () => {
          const { rows } = await stack.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`,
            [applicationName],
          );
          return rows[0]!.n > 0;
        },
        300_000,
      );
      const result = await stopWith(child, run, signal);
      assertStopped(result, 'replay');
      assert.notEqual(result.code, 0);
    });

    test(`import with most of its report still to go: ${signal}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'settle-import-'));
      const file = join(dir, 'report.jsonl');
      const prefix = uniqueId('imp');
      // No worker runs in this suite: the import stops at its backlog of 10 runs, with 40 lines to go,
      // whatever the machine's speed (the 5,000 lines this took before left 100 runs queued for the
      // next tests' workers and proved nothing more).
      const lines = Array.from({ length: 50 }, (_, i) =>
        JSON.stringify(paymentEvent({ id: `${prefix}_${i}` })),
      );
      writeFileSync(file, `${lines.join('\n')}\n`);
      const { child, run, until } = spawnWithOutput(['import', file, '--json', '--max-backlog', '10'], env());
      await until('lines to be imported', () => eventsLike(`${prefix}_%`));
      const result = await stopWith(child, run, signal);
      assertStopped(result, 'import');
      rmSync(dir, { recursive: true, force: true });
    });

    test(`simulate at a rate: ${signal}`, async () => {
      const runId = `sim${randomUUID().slice(0, 8)}`;
      const { child, run, until } = spawnWithOutput(
        // A rate well below what the gateway takes on a loaded machine: in flight, not a backlog.
        ['simulate', '--gateway', stack.gatewayUrl, '--count', '100000', '--rate', '5', '--run-id', runId],
        env(),
      );
      await until('simulated events to arrive', () => eventsLike(`evt_${runId}_%`));
      const result = await stopWith(child, run, signal);
      assertStopped(result, 'simulate');
      assert.match(result.stdout, /stopped early/, result.stderr);
    });
  }

  for (const signal of SIGNALS) {
    test(`settle start under requests: ${signal} stops the gateway, the worker and the dev servers`, async () => {
      const startHome = mkdtempSync(join(tmpdir(), 'settle-home-'));
      // A free port for every listener settle start opens (the codec server's too: its fixed default
      // was taken by another settle start on the machine, and the start died before its banner).
      const portEnv = await listenPortEnv();
      const ports = Object.fromEntries(
        Object.entries(portEnv).map(([name, port]) => [name, Number(port)]),
      ) as Record<string, number>;
      const secret = newSecret();
      const { child, run, output, until } = spawnWithOutput(['start'], {
        SETTLE_HOME: startHome,
        ...portEnv,
        SETTLE_WEBHOOK_SECRETS: secret,
        DATABASE_URL: '',
        TEMPORAL_ADDRESS: '',
        SETTLE_CARRIER_URL: '',
        SETTLE_ERP_URL: '',
      });
      let load: ReturnType<typeof postUntilStopped> | undefined;
      try {
        await until(
          'settle start to run',
          async () => output.text.includes('Ctrl-C stops everything'),
          300_000,
        );
        const gateway = { gatewayUrl: `http://127.0.0.1:${ports.PORT}`, secret };
        // The worker has runs in flight when the signal comes.
        const posting = (load = postUntilStopped(gateway, 4));
        await until('events to be accepted', async () => {
          const gaveUp = posting.gaveUp();
          if (gaveUp) throw new Error(gaveUp);
          return posting.accepted() >= 10;
        });
        const result = await stopWith(child, run, signal);
        assertStopped(result, 'settle start');
        for (const [name, port] of Object.entries(ports)) {
          assert.equal(await listening(port), false, `the ${name} (port ${port}) still listens`);
        }
      } finally {
        await load?.stop();
        // SIGTERM, not SIGKILL: a stack still starting stops its dev servers too.
        if (child.exitCode === null) child.kill('SIGTERM');
        await run.catch(() => undefined);
        rmSync(startHome, { recursive: true, force: true });
      }
    });
  }
});
