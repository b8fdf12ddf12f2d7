import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  ActivityFailure,
  ApplicationFailure,
  ScheduleNotFoundError,
  WorkflowFailedError,
  type Client,
} from '@temporalio/client';
import { openExceptions } from '../src/app/exceptions';
import {
  DEFAULT_RECOVERY_LOOKBACK_MS,
  recoverMissedEvents,
  summaryOfFault,
} from '../src/app/recovery-missed-events';
import { ensureRecoverySchedule, recoveryScheduleId } from '../src/temporal/recovery-schedule';
import { advanceRecoveryCursor } from '../src/db/recovery-cursor';
import { addShipments } from '../src/db/shipments';
import { freePort } from '../testkit/free-port';
import { recoverySweepFailuresTotal } from '../src/metrics/settle-metrics';
import { RecoveryFault } from '../src/providers/recovery-source';
import { STRIPE_ACTED_ON_TYPES } from '../src/providers/stripe/adapter';
import { createStripeRecoverySource } from '../src/providers/stripe/recovery-source';
import { connectClient } from '../src/client';
import type { RecoverySweepResult } from '../src/domain/workflow-contracts';
import { startTestStack, uniqueId, waitFor, type TestStack } from '../testkit/harness';
import { newStripeSecret, paymentIntent, postStripe, stripeEvent } from './support/providers';
import { finished, runSettle, spawnSettle, stackEnv } from './support/settle-cli';
import { startStripeApi, storeAsAdmitted, typesAsked, type StripeApi } from '../testkit/stripe-api';

let stack: TestStack;
let api: StripeApi;
const webhookSecret = newStripeSecret();
let clock = Math.floor(Date.now() / 1000) - 3_600;

before(async () => {
  api = await startStripeApi();
  stack = await startTestStack({
    config: { stripeApiKey: api.apiKey, stripeApiBase: api.url, stripeWebhookSecrets: [webhookSecret] },
  });
});
after(async () => {
  await stack.client.schedule
    .getHandle(recoveryScheduleId('stripe', stack.taskQueue))
    .delete()
    .catch(() => {});
  await stack.close();
  await api.close();
});

/** A captured payment for a new shipment, created one second after the previous one. */
async function capture(): Promise<{ event: Record<string, unknown>; id: string; shipmentId: string }> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  clock += 1;
  const event = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId), { created: clock });
  return { event, id: event.id as string, shipmentId };
}

/** A window reaching past the first sweep's lookback: with no cursor yet, such a run moves it. */
const beyondLookback = () => new Date(Date.now() - DEFAULT_RECOVERY_LOOKBACK_MS - 3_600_000);

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(sql, params);
  return rows[0]!.n;
}

async function cursorEventId(): Promise<string | null> {
  const { rows } = await stack.pool.query<{ event_id: string | null }>(
    `SELECT event_id FROM recovery_cursors WHERE provider = 'stripe'`,
  );
  return rows[0]?.event_id ?? null;
}

/** Captures applied: one capture ledger entry per event, whatever path it came by. */
async function capturesOf(ids: string[]): Promise<number> {
  return count(
    `SELECT count(*)::int AS n FROM ledger_entries WHERE kind = 'capture' AND event_id = ANY($1)`,
    [ids],
  );
}

/** Triggers the recovery Schedule once and waits for that run's result. */
async function sweepOnce(client: Client = stack.client): Promise<RecoverySweepResult> {
  const handle = client.schedule.getHandle(recoveryScheduleId('stripe', stack.taskQueue));
  const before = (await handle.describe()).info.recentActions.length;
  await handle.trigger();
  const action = await waitFor('the schedule to start a sweep', async () => {
    const actions = (await handle.describe()).info.recentActions;
    return actions.length > before ? actions.at(-1) : undefined;
  });
  const { workflowId, firstExecutionRunId } = action.action.workflow;
  return client.workflow.getHandle(workflowId, firstExecutionRunId).result() as Promise<RecoverySweepResult>;
}

describe('the recovery sweep on its Schedule', () => {
  before(async () => {
    await ensureRecoverySchedule(stack.client, stack.config, 'stripe');
  });

  test('after an outage every event the webhooks never brought is applied exactly once, the cursor at the newest', async () => {
    const delivered: string[] = [];
    const missed: string[] = [];
    const all: string[] = [];
    // Before the outage: delivered.
    for (let i = 0; i < 5; i += 1) {
      const { event, id } = await capture();
      api.add(event, { delivered: true });
      assert.equal((await postStripe(stack, event, { secret: webhookSecret })).status, 202);
      delivered.push(id);
      all.push(id);
    }
    // The outage: the gateway is not there (connection refused), Stripe keeps them undelivered.
    const down = `http://127.0.0.1:${await freePort()}`;
    let late: Record<string, unknown> | undefined;
    for (let i = 0; i < 8; i += 1) {
      const { event, id } = await capture();
      api.add(event, { delivered: false });
      await assert.rejects(postStripe({ gatewayUrl: down }, event, { secret: webhookSecret }));
      if (i === 3) late = event;
      else missed.push(id);
      all.push(id);
    }
    // After it: delivered again, and one outage event arrives late on Stripe's own retry.
    for (let i = 0; i < 3; i += 1) {
      const { event, id } = await capture();
      api.add(event, { delivered: true });
      assert.equal((await postStripe(stack, event, { secret: webhookSecret })).status, 202);
      delivered.push(id);
      all.push(id);
    }
    assert.equal((await postStripe(stack, late!, { secret: webhookSecret })).status, 202);
    api.markDelivered(late!.id as string);
    await waitFor('the delivered events applied', () => capturesOf(delivered), {
      until: (n) => n === delivered.length,
    });
    assert.equal(await capturesOf(missed), 0);

    const seen = api.requests.length;
    const result = await sweepOnce();
    assert.deepEqual(
      {
        listed: result.listed,
        admitted: result.admitted,
        alreadyHad: result.alreadyHad,
        refused: result.refused,
      },
      { listed: all.length, admitted: missed.length, alreadyHad: all.length - missed.length, refused: 0 },
    );
    // Only the types settle acts on, delivered or not: the claim decides, not delivery_success.
    const asked = api.requests.slice(seen);
    assert.ok(asked.length > 0);
    for (const request of asked) {
      assert.deepEqual(typesAsked(request.query).sort(), [...STRIPE_ACTED_ON_TYPES].sort());
      assert.equal(request.query.get('delivery_success'), null);
    }
    await waitFor('the missed events applied', () => capturesOf(missed), {
      until: (n) => n === missed.length,
    });
    // Exactly once each: one capture per event, one claim per event, only the missed ones recovered.
    assert.equal(await capturesOf(all), all.length);
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM claims WHERE event_id = ANY($1)`, [all]),
      all.length,
    );
    assert.equal(
      await count(`SELECT count(*)::int AS n FROM events WHERE source = 'recovery' AND event_id = ANY($1)`, [
        all,
      ]),
      missed.length,
    );
    assert.equal(await cursorEventId(), all.at(-1));

    // The next sweep lists from the cursor: nothing, and nothing changes.
    const again = await sweepOnce();
    assert.equal(again.listed, 0);
    assert.equal(again.admitted, 0);
    assert.equal(await capturesOf(all), all.length);
    assert.equal(await cursorEventId(), all.at(-1));
  });

  test('a 429 is retried after its Retry-After, then the sweep completes', async () => {
    const { event, id } = await capture();
    api.add(event);
    const seen = api.requests.length;
    api.failNext({ status: 429, retryAfter: '2' });
    const result = await sweepOnce();
    assert.equal(result.admitted, 1);
    const [refused, retried] = api.requests.slice(seen);
    assert.ok(refused && retried, 'a refused request and its retry');
    assert.ok(retried.at - refused.at >= 1_900, `retried after ${retried.at - refused.at} ms`);
    assert.equal(await cursorEventId(), id);
  });

  test('a revoked key fails the run once, naming the key, counted and recorded; no retry loop', async () => {
    const { event } = await capture();
    api.add(event);
    api.revokeKey();
    const failuresBefore = (await recoverySweepFailuresTotal.get()).values.find(
      (v) => v.labels.reason === 'unauthorized',
    )?.value;
    const seen = api.requests.length;
    try {
      const error = await sweepOnce().then(
        () => assert.fail('the sweep should fail'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof WorkflowFailedError);
      assert.ok(error.cause instanceof ActivityFailure);
      const cause = error.cause.cause;
      assert.ok(cause instanceof ApplicationFailure);
      assert.equal(cause.type, 'provider_auth_refused');
      assert.match(cause.message, /SETTLE_STRIPE_API_KEY/);
      assert.equal(api.requests.length - seen, 1, 'one request: a refused key is not retried');
      const failures = (await recoverySweepFailuresTotal.get()).values.find(
        (v) => v.labels.reason === 'unauthorized',
      )?.value;
      assert.equal((failures ?? 0) - (failuresBefore ?? 0), 1);
      const { rows } = await stack.pool.query<{ last_sweep_error: string }>(
        `SELECT last_sweep_error FROM recovery_cursors WHERE provider = 'stripe'`,
      );
      assert.match(rows[0]!.last_sweep_error, /401.*SETTLE_STRIPE_API_KEY/);
    } finally {
      api.restoreKey();
    }
    // With the key back, the next run catches up.
    assert.equal((await sweepOnce()).admitted, 1);
  });
});

test('the recovery Schedule exists only while a Stripe API key is set', async () => {
  const config = { ...stack.config, taskQueue: `settle-test-schedule-${uniqueId('q')}` };
  const handle = stack.client.schedule.getHandle(recoveryScheduleId('stripe', config.taskQueue));
  const off = await ensureRecoverySchedule(stack.client, { ...config, stripeApiKey: undefined }, 'stripe');
  assert.equal(off.state, 'off');
  await assert.rejects(handle.describe(), ScheduleNotFoundError);
  try {
    assert.equal((await ensureRecoverySchedule(stack.client, config, 'stripe')).state, 'created');
    const described = await handle.describe();
    assert.equal(described.spec.intervals?.[0]?.every, 15 * 60_000);
    assert.equal(described.policies.overlap, 'SKIP');
    assert.equal(
      described.action.type === 'startWorkflow' && described.action.workflowType,
      'recoverySweepWorkflow',
    );
    assert.equal((await ensureRecoverySchedule(stack.client, config, 'stripe')).state, 'unchanged');
    // A changed SETTLE_STRIPE_SWEEP_EVERY is taken up by the next start.
    const updated = await ensureRecoverySchedule(
      stack.client,
      {
        ...config,
        stripeSweepEveryMs: 30 * 60_000,
      },
      'stripe',
    );
    assert.equal(updated.state, 'updated');
    assert.equal((await handle.describe()).spec.intervals?.[0]?.every, 30 * 60_000);
    // The key removed: the Schedule goes, so no run fails for want of it.
    assert.equal(
      (await ensureRecoverySchedule(stack.client, { ...config, stripeApiKey: undefined }, 'stripe')).state,
      'off',
    );
    await assert.rejects(handle.describe(), ScheduleNotFoundError);
  } finally {
    await handle.delete().catch(() => {});
  }
});

describe('a sweep against a misbehaving API', () => {
  let local: StripeApi;
  const source = (overrides: { timeoutMs?: number; pageSize?: number } = {}) =>
    createStripeRecoverySource({ apiKey: local.apiKey, apiBase: local.url, pageSize: 2, ...overrides });
  const deps = () => ({ pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue });

  beforeEach(async () => {
    await local?.close();
    local = await startStripeApi();
    await stack.pool.query(`DELETE FROM recovery_cursors WHERE provider = 'stripe'`);
  });
  after(async () => {
    await local?.close();
  });

  async function listed(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const { event, id } = await capture();
      local.add(event);
      ids.push(id);
    }
    return ids;
  }

  for (const fault of [{ status: 500 as const }, { hang: true as const }]) {
    test(`${'hang' in fault ? 'a hung request' : 'a 500'} mid-listing stops the sweep at the last admitted event; the next run admits the rest, none twice`, async () => {
      const [base] = await listed(1);
      await recoverMissedEvents(deps(), source(), { since: beyondLookback() });
      assert.equal(await cursorEventId(), base);
      const ids = await listed(5);
      // From the cursor, two events a page: the first page is served, the second request fails.
      local.failAfter(1, fault);
      const error = await recoverMissedEvents(deps(), source({ timeoutMs: 1_000 })).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof RecoveryFault, String(error));
      assert.equal(error.kind, 'unavailable');
      assert.equal(summaryOfFault(error)!.admitted, 2);
      assert.equal(await cursorEventId(), ids[1]);
      assert.equal(
        await count(`SELECT count(*)::int AS n FROM events WHERE event_id = ANY($1)`, [ids.slice(2)]),
        0,
      );

      const rest = await recoverMissedEvents(deps(), source());
      assert.equal(rest.listed, 3);
      assert.equal(rest.admitted, 3);
      assert.equal(
        await count(`SELECT count(*)::int AS n FROM events WHERE event_id = ANY($1)`, [ids]),
        ids.length,
      );
      assert.equal(await cursorEventId(), ids.at(-1));
      await waitFor('each applied once', () => capturesOf(ids), { until: (n) => n === ids.length });
    });
  }

  test('an event that fails validation is an exception with its next step, and does not hold the cursor', async () => {
    const [firstId] = await listed(1);
    const shipmentId = uniqueId('SHP');
    clock += 1;
    const bad = stripeEvent(
      'payment_intent.succeeded',
      paymentIntent(shipmentId, { amount_received: 'lots', amount: 'lots' }),
      { created: clock },
    );
    local.add(bad);
    const [lastId] = await listed(1);
    const summary = await recoverMissedEvents(deps(), source(), { since: beyondLookback() });
    assert.equal(summary.admitted, 2);
    assert.equal(summary.refused, 1);
    assert.equal(summary.refusals[0]!.event_id, bad.id);
    assert.equal(summary.refusals[0]!.reason, 'invalid');
    assert.match(summary.refusals[0]!.message, /amount/);
    assert.equal(await cursorEventId(), lastId);
    assert.ok(firstId);
    const open = await openExceptions(
      { pool: stack.pool, client: stack.client },
      { unreconciledAfterMs: 3_600_000, stuckAfterMs: 300_000, limit: null },
    );
    const row = open.exceptions.find((e) => e.event_id === bad.id);
    assert.ok(row, 'the refused event is listed by settle exceptions');
    assert.match(row.detail, /amount/);
    assert.match(row.detail, /settle import --provider/);
  });

  test('Temporal unreachable: the cursor stays before the event it could not admit', async () => {
    const ids = await listed(3);
    // The first is already admitted (delivered by its webhook); the second needs a start.
    await recoverMissedEvents(deps(), source(), { since: beyondLookback() });
    await stack.pool.query(`DELETE FROM recovery_cursors WHERE provider = 'stripe'`);
    const more = await listed(2);
    const deadClient = await connectClient({
      ...stack.config,
      temporalAddress: `127.0.0.1:${await freePort()}`,
    });
    try {
      const error = await recoverMissedEvents({ ...deps(), client: deadClient }, source(), {
        since: beyondLookback(),
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof RecoveryFault);
      assert.equal(error.kind, 'unavailable');
      assert.match(error.message, /Temporal unreachable/);
      assert.equal(summaryOfFault(error)!.already_had, ids.length);
      assert.equal(await cursorEventId(), ids.at(-1));
      assert.equal(await count(`SELECT count(*)::int AS n FROM events WHERE event_id = ANY($1)`, [more]), 0);
    } finally {
      await deadClient.connection.close().catch(() => {});
    }
  });

  test('a dry run admits, records and moves nothing', async () => {
    const ids = await listed(3);
    clock += 1;
    const unmatched = stripeEvent('payment_intent.succeeded', paymentIntent(undefined), { created: clock });
    local.add(unmatched);
    const tables = ['events', 'claims', 'provider_exceptions', 'recovery_cursors', 'conflicts'];
    const snapshot = async () => Promise.all(tables.map((t) => count(`SELECT count(*)::int AS n FROM ${t}`)));
    const before = await snapshot();
    const summary = await recoverMissedEvents(deps(), source(), {
      since: beyondLookback(),
      dryRun: true,
    });
    assert.equal(summary.dry_run, true);
    assert.equal(summary.admitted, ids.length);
    assert.equal(summary.refused, 1);
    assert.equal(summary.cursor_moved, false);
    assert.deepEqual(await snapshot(), before);
  });

  test('a --since window that begins after the cursor admits what it lists but leaves the cursor', async () => {
    const [first] = await listed(1);
    await recoverMissedEvents(deps(), source(), { since: beyondLookback() });
    assert.equal(await cursorEventId(), first);
    clock += 120;
    const later = await listed(2);
    const summary = await recoverMissedEvents(deps(), source(), { since: new Date((clock - 30) * 1000) });
    assert.equal(summary.admitted, later.length);
    assert.equal(summary.cursor_moved, false);
    // The Schedule's next sweep still lists everything after the old cursor: the window's events are duplicates.
    assert.equal(await cursorEventId(), first);
    const next = await recoverMissedEvents(deps(), source());
    assert.deepEqual([next.listed, next.already_had, next.admitted], [later.length, later.length, 0]);
    assert.equal(await cursorEventId(), later.at(-1));
  });

  test('a cursor Stripe no longer lists restarts the listing at its time', async () => {
    const ids = await listed(3);
    await recoverMissedEvents(deps(), source(), { since: beyondLookback() });
    const more = await listed(2);
    local.remove(ids.at(-1)!);
    const summary = await recoverMissedEvents(deps(), source());
    assert.equal(summary.admitted, more.length);
    assert.equal(await cursorEventId(), more.at(-1));
  });
});

test('a sweep over listed events all but 10 of which were applied costs 10 workflow starts', async () => {
  // SETTLE_RECOVERY_LISTED=10000 is the goal's size (docs/performance.md); the suite runs a tenth.
  const listedCount = Number(process.env.SETTLE_RECOVERY_LISTED ?? 1_000);
  const local = await startStripeApi();
  await stack.pool.query(`DELETE FROM recovery_cursors WHERE provider = 'stripe'`);
  const applied: Record<string, unknown>[] = [];
  const missed: string[] = [];
  const prefix = uniqueId('rs');
  const base = Math.floor(Date.now() / 1000) - listedCount - 60;
  // The sweep's own case: from the cursor the previous sweep left.
  const anchor = stripeEvent('payment_intent.succeeded', paymentIntent(`${prefix}-SHP-anchor`), {
    created: base - 1,
  });
  local.add(anchor);
  await advanceRecoveryCursor(stack.pool, 'stripe', {
    eventId: anchor.id as string,
    createdAt: new Date((base - 1) * 1000),
  });
  for (let i = 0; i < listedCount; i += 1) {
    const shipmentId = `${prefix}-SHP-${i}`;
    const event = stripeEvent('payment_intent.succeeded', paymentIntent(shipmentId), { created: base + i });
    local.add(event);
    if (i % (listedCount / 10) === 7) {
      missed.push(event.id as string);
      await addShipments(stack.pool, [shipmentId]);
    } else {
      applied.push(event);
    }
  }
  await storeAsAdmitted(stack.pool, applied);
  const workflows = stack.client.workflow;
  const start = workflows.start.bind(workflows);
  let starts = 0;
  workflows.start = ((...args: Parameters<typeof start>) => {
    starts += 1;
    return start(...args);
  }) as typeof start;
  try {
    const summary = await recoverMissedEvents(
      { pool: stack.pool, client: stack.client, taskQueue: stack.taskQueue },
      createStripeRecoverySource({ apiKey: local.apiKey, apiBase: local.url }),
    );
    assert.equal(summary.listed, listedCount);
    assert.equal(summary.already_had, listedCount - 10);
    assert.equal(summary.admitted, 10);
    assert.equal(starts, 10);
    process.stdout.write(
      `# recovery sweep: ${summary.listed} listed, ${starts} starts, ${summary.events_per_second} events/s ` +
        `(${summary.elapsed_ms} ms)\n`,
    );
  } finally {
    workflows.start = start;
    await local.close();
  }
  await waitFor('the 10 missed applied', () => capturesOf(missed), { until: (n) => n === missed.length });
});

describe('settle recover', () => {
  test('--help names the options', async () => {
    const run = await runSettle(['recover', '--help'], {});
    assert.equal(run.code, 0);
    for (const option of ['--provider', '--since', '--dry-run', '--json', '--max-retries'])
      assert.match(run.stdout, new RegExp(option));
  });

  test('settle stats has a line for the sweep: its last run, what it recovered, the cursor', async () => {
    const run = await runSettle(['stats', '--json'], stackEnv(stack));
    assert.equal(run.code, 0, run.stderr);
    const { recovery } = JSON.parse(run.stdout) as {
      recovery: {
        provider: string;
        recovered_total: number;
        cursor_at: string | null;
        last_sweep_at: string;
      }[];
    };
    const stripe = recovery.find((r) => r.provider === 'stripe');
    assert.ok(stripe && stripe.recovered_total > 0 && stripe.cursor_at && stripe.last_sweep_at, run.stdout);
    const text = await runSettle(['stats'], stackEnv(stack));
    assert.match(text.stdout, /recovered \(stripe\) +\d+ never delivered/);
  });

  test('--dry-run --json prints the summary and changes nothing', async () => {
    const local = await startStripeApi();
    try {
      const { event } = await capture();
      local.add(event);
      const run = await runSettle(
        ['recover', '--provider', 'stripe', '--since', '2h', '--dry-run', '--json'],
        stackEnv(stack, { SETTLE_STRIPE_API_KEY: local.apiKey, SETTLE_STRIPE_API_BASE: local.url }),
      );
      assert.equal(run.code, 0, run.stderr);
      const summary = JSON.parse(run.stdout) as { listed: number; admitted: number; dry_run: boolean };
      assert.deepEqual(
        { listed: summary.listed, admitted: summary.admitted, dry_run: summary.dry_run },
        { listed: 1, admitted: 1, dry_run: true },
      );
      assert.equal(await count(`SELECT count(*)::int AS n FROM events WHERE event_id = $1`, [event.id]), 0);
    } finally {
      await local.close();
    }
  });

  test('stops within 10 s of SIGINT while the API hangs', async () => {
    const local = await startStripeApi();
    try {
      local.failNext({ hang: true });
      const child = spawnSettle(
        ['recover', '--provider', 'stripe', '--since', '1h'],
        stackEnv(stack, { SETTLE_STRIPE_API_KEY: local.apiKey, SETTLE_STRIPE_API_BASE: local.url }),
      );
      const done = finished(child);
      await waitFor('the CLI to ask the API', async () => local.requests.length > 0);
      const signalled = Date.now();
      child.kill('SIGINT');
      const run = await done;
      assert.ok(Date.now() - signalled < 10_000, `stopped after ${Date.now() - signalled} ms`);
      assert.equal(run.code, 130, run.stderr);
    } finally {
      await local.close();
    }
  });
});

describe("settle recover takes the webhook's door: mode, rate limits, its configuration", () => {
  const liveKey = () => `sk_live_${randomBytes(16).toString('hex')}`;

  test('a run of 429s is waited out (Retry-After) and the run completes; the summary names the retries', async () => {
    const local = await startStripeApi();
    try {
      const { event, id } = await capture();
      local.add(event);
      local.failNext(
        { status: 429, retryAfter: '1' },
        { status: 429, retryAfter: '1' },
        { status: 429, retryAfter: '1' },
      );
      const started = Date.now();
      const run = await runSettle(
        ['recover', '--provider', 'stripe', '--since', '2h', '--json'],
        stackEnv(stack, { SETTLE_STRIPE_API_KEY: local.apiKey, SETTLE_STRIPE_API_BASE: local.url }),
      );
      assert.equal(run.code, 0, run.stderr);
      const summary = JSON.parse(run.stdout) as {
        admitted: number;
        retries: { used: number; limit: number };
      };
      assert.equal(summary.admitted, 1);
      assert.deepEqual(summary.retries, { used: 3, limit: 10 });
      // Each Retry-After was waited out, not retried at once.
      assert.ok(Date.now() - started >= 3_000, `took ${Date.now() - started} ms`);
      const asks = local.requests.filter((r) => r.path === '/v1/events').map((r) => r.at);
      for (let i = 1; i <= 3; i += 1) assert.ok(asks[i]! - asks[i - 1]! >= 900, `retry ${i} waited`);
      await waitFor('the recovered capture applied', () => capturesOf([id]), { until: (n) => n === 1 });
    } finally {
      await local.close();
    }
  });

  test('once the retries are spent, the run stops with 75 and says so', async () => {
    const local = await startStripeApi();
    try {
      const { event } = await capture();
      local.add(event);
      local.failNext({ status: 503 }, { status: 503 }, { status: 503 });
      const run = await runSettle(
        ['recover', '--provider', 'stripe', '--since', '2h', '--json', '--max-retries', '1'],
        stackEnv(stack, { SETTLE_STRIPE_API_KEY: local.apiKey, SETTLE_STRIPE_API_BASE: local.url }),
      );
      assert.equal(run.code, 75, run.stderr);
      const summary = JSON.parse(run.stdout) as { retries: { used: number; limit: number }; error: string };
      assert.deepEqual(summary.retries, { used: 1, limit: 1 });
      assert.match(summary.error, /gave up after 1 of 1 retries/);
    } finally {
      await local.close();
    }
  });

  test('SETTLE_PROVIDER_MODE=live: a listed test-mode event is not admitted', async () => {
    const local = await startStripeApi({ apiKey: liveKey() });
    try {
      const { event, id } = await capture();
      assert.equal(event.livemode, false);
      local.add(event);
      const run = await runSettle(
        ['recover', '--provider', 'stripe', '--since', '2h', '--json'],
        stackEnv(stack, {
          SETTLE_STRIPE_API_KEY: local.apiKey,
          SETTLE_STRIPE_API_BASE: local.url,
          SETTLE_PROVIDER_MODE: 'live',
        }),
      );
      assert.equal(run.code, 0, run.stderr);
      const summary = JSON.parse(run.stdout) as { listed: number; admitted: number; ignored: number };
      assert.deepEqual(
        { listed: summary.listed, admitted: summary.admitted, ignored: summary.ignored },
        { listed: 1, admitted: 0, ignored: 1 },
      );
      assert.equal(await count(`SELECT count(*)::int AS n FROM events WHERE event_id = $1`, [id]), 0);
    } finally {
      await local.close();
    }
  });

  test('a key of the other mode is refused at start, naming both variables', async () => {
    for (const [key, mode] of [
      [`sk_test_${randomBytes(16).toString('hex')}`, 'live'],
      [liveKey(), 'test'],
    ] as const) {
      const run = await runSettle(
        ['recover', '--provider', 'stripe', '--since', '1h'],
        stackEnv(stack, { SETTLE_STRIPE_API_KEY: key, SETTLE_PROVIDER_MODE: mode }),
      );
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /SETTLE_STRIPE_API_KEY/);
      assert.match(run.stderr, new RegExp(`SETTLE_PROVIDER_MODE is ${mode}`));
      assert.doesNotMatch(run.stderr, new RegExp(key), 'the key is never printed');
    }
  });

  test('an http API base that is not loopback is refused at start, naming the variable', async () => {
    for (const [variable, value] of [
      ['SETTLE_STRIPE_API_BASE', 'http://api.stripe.com'],
      ['SETTLE_STRIPE_API_BASE', 'http://10.0.0.8:8080'],
      ['SETTLE_PAYPAL_API_BASE', 'http://api-m.paypal.com'],
    ] as const) {
      const run = await runSettle(
        ['recover', '--provider', 'stripe', '--since', '1h'],
        stackEnv(stack, { [variable]: value }),
      );
      assert.notEqual(run.code, 0, `${variable}=${value}`);
      assert.match(run.stderr, new RegExp(`${variable}.*https://`), run.stderr);
    }
  });
});
