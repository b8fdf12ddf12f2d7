/**
 * Payment data encrypted before it reaches Temporal (SPEC, "Payment data in Temporal"), on the shared
 * dev server: the history as Temporal stores it holds neither an event's extra field nor its amount;
 * `settle codec-server` shows both to a caller with the token (the Temporal CLI's --codec-endpoint
 * included) and answers 401 to one without; a key rotation keeps the old runs readable (inspect,
 * replay, the codec server, a deterministic replay of their history); a worker restarted with keys
 * finishes a run started without them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { inspectEvent } from '../src/app/inspect';
import { replayEvent } from '../src/app/replay';
import { startCodecServer } from '../src/codec/server';
import type { PayloadKey } from '../src/config/payload-keys';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { freePort } from '../testkit/free-port';
import { logger } from '../src/lib/logger';
import { connectClient } from '../src/client';
import { settleDataConverter } from '../src/temporal/data-converter';
import { EncryptionCodec, KEY_ID_METADATA, StaticKeySource } from '../src/temporal/payload-codec';
import { workflowBundlePath } from '../src/worker-runtime/workflow-bundle';
import type { PaymentWorkflowResult } from '../src/workflows';
import {
  paymentEvent,
  postWebhook,
  startTestStack,
  uniqueId,
  waitFor,
  type TestStack,
} from '../testkit/harness';
import { finished, spawnSettle } from './support/settle-cli';
import { startReceiver, type Receiver } from '../testkit/receiver';

const cli = promisify(execFile);
const cliPath = process.env.SETTLE_TEMPORAL_CLI!;
const MARKER = 'jane.doe@example.com-7f3a1c';
const AMOUNT = 987654321;
const TOKEN = randomBytes(24).toString('hex');
const key = (id: string): PayloadKey => ({ id, key: randomBytes(32) });
/** As the JSON of `temporal workflow show` prints an amount it can read. */
const AMOUNT_SHOWN = new RegExp(`"amount":\\s*${AMOUNT}\\b`);

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

let carrier: Receiver;
let erp: Receiver;
before(async () => {
  carrier = await startReceiver();
  erp = await startReceiver();
  cleanups.push(
    () => carrier.close(),
    () => erp.close(),
  );
});

async function stackWith(payloadKeys: PayloadKey[] | undefined): Promise<TestStack> {
  const stack = await startTestStack({
    config: { carrierUrl: carrier.url, erpUrl: erp.url, ...(payloadKeys ? { payloadKeys } : {}) },
  });
  cleanups.push(() => stack.close());
  return stack;
}

/** A Standard Webhooks event with a field a sender added (kept by settle), sent and run to its end. */
async function sendMarked(stack: TestStack, client: Client = stack.client): Promise<string> {
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, amount: AMOUNT, type: 'payment.settled' });
  const marked = { ...event, data: { ...event.data, customer_email: MARKER } };
  assert.equal((await postWebhook(stack, marked)).status, 202);
  await client.workflow.getHandle(paymentWorkflowId(event.id)).result();
  return event.id;
}

/**
 * What `temporal workflow show -o json` prints, its payloads' data (base64 in that form) decoded as
 * text beside it: everything that can be read from the history as it is stored.
 */
async function show(stack: TestStack, eventId: string, flags: string[] = []): Promise<string> {
  const stdout = await showJson(stack, eventId, flags);
  const data: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [name, value] of Object.entries(node)) {
        if (name === 'data' && typeof value === 'string') data.push(Buffer.from(value, 'base64').toString());
        else walk(value);
      }
    }
  };
  walk(JSON.parse(stdout));
  return [stdout, ...data].join('\n');
}

async function showJson(stack: TestStack, eventId: string, flags: string[] = []): Promise<string> {
  const { stdout } = await cli(cliPath, [
    'workflow',
    'show',
    '--address',
    stack.config.temporalAddress,
    '--workflow-id',
    paymentWorkflowId(eventId),
    '--output',
    'json',
    ...flags,
  ]);
  return stdout;
}

type JsonPayload = { metadata: Record<string, string>; data: string };
const asJson = (payload: temporal.api.common.v1.IPayload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(payload.data ?? []).toString('base64'),
});

/** The run's input payload as Temporal stores it (the client's raw history: no codec applied). */
async function storedInput(client: Client, eventId: string, runId?: string) {
  const history = await client.workflow.getHandle(paymentWorkflowId(eventId), runId).fetchHistory();
  return history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
}

async function codecServer(keys: PayloadKey[]) {
  const server = await startCodecServer({
    codec: new EncryptionCodec(new StaticKeySource(keys)),
    token: TOKEN,
    namespace: 'default',
    corsOrigins: ['http://127.0.0.1:8233'],
    host: '127.0.0.1',
    port: 0,
    logger,
  });
  cleanups.push(() => server.close());
  return server;
}

async function decodeCall(url: string, payloads: JsonPayload[], headers: Record<string, string>) {
  const response = await fetch(`${url}/decode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
    body: JSON.stringify({ payloads }),
  });
  return { status: response.status, text: await response.text(), headers: response.headers };
}
const decodedText = (text: string) =>
  (JSON.parse(text) as { payloads: JsonPayload[] }).payloads
    .map((p) => Buffer.from(p.data, 'base64').toString())
    .join('\n');

describe('payloads as Temporal stores them', () => {
  const current = key('k-2026-12');
  let stack: TestStack;
  let eventId: string;
  before(async () => {
    stack = await stackWith([current]);
    eventId = await sendMarked(stack);
  });

  test('without keys (the control): the stored history shows the extra field and the amount', async () => {
    const plain = await stackWith(undefined);
    const stored = await show(plain, await sendMarked(plain));
    assert.ok(stored.includes(MARKER));
    assert.match(stored, AMOUNT_SHOWN);
  });

  test('with keys: the stored history holds neither, its payloads name the key', async () => {
    const stored = await show(stack, eventId);
    assert.ok(!stored.includes(MARKER), 'the extra field is stored in plain text');
    assert.doesNotMatch(stored, AMOUNT_SHOWN);
    assert.ok(stored.includes(Buffer.from('binary/encrypted').toString('base64')));
    const input = await storedInput(stack.client, eventId);
    assert.equal(Buffer.from(input.metadata![KEY_ID_METADATA]!).toString(), current.id);
  });

  test('the codec server decodes for the token only: 401 without it, the CLI reads through it', async () => {
    const server = await codecServer([current]);
    const input = asJson(await storedInput(stack.client, eventId));
    const wrong = { authorization: `Bearer ${randomBytes(24).toString('hex')}` };
    for (const headers of [{}, wrong] as Record<string, string>[]) {
      const refused = await decodeCall(server.url, [input], headers);
      assert.equal(refused.status, 401);
      assert.ok(!refused.text.includes(input.data));
    }
    const answered = await decodeCall(server.url, [input], { authorization: `Bearer ${TOKEN}` });
    assert.equal(answered.status, 200);
    assert.ok(decodedText(answered.text).includes(MARKER));
    assert.ok(decodedText(answered.text).includes(`"amount":${AMOUNT}`));
    // The UI's form: the token as the segment before /decode, from the configured origin only.
    const fromUi = await decodeCall(`${server.url}/${TOKEN}`, [input], { origin: 'http://127.0.0.1:8233' });
    assert.equal(fromUi.status, 200);
    assert.equal(fromUi.headers.get('access-control-allow-origin'), 'http://127.0.0.1:8233');
    assert.ok(decodedText(fromUi.text).includes(MARKER));
    const otherOrigin = await decodeCall(`${server.url}/${TOKEN}`, [input], { origin: 'http://evil.test' });
    assert.equal(otherOrigin.status, 403);
    const preflight = await fetch(`${server.url}/${TOKEN}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://127.0.0.1:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /x-namespace/);
    const viaCli = await show(stack, eventId, [
      '--codec-endpoint',
      server.url,
      '--codec-auth',
      `Bearer ${TOKEN}`,
    ]);
    assert.ok(viaCli.includes(MARKER));
    assert.match(viaCli, AMOUNT_SHOWN);
  });

  test('settle codec-server: /healthz, 401 without the token, stops on SIGTERM within 10 s', async () => {
    const port = await freePort();
    const child = spawnSettle(['codec-server'], {
      SETTLE_PAYLOAD_KEYS: `${current.id}:${current.key.toString('base64')}`,
      SETTLE_CODEC_TOKEN: TOKEN,
      SETTLE_CODEC_PORT: String(port),
      SETTLE_LOG_LEVEL: 'info',
    });
    const exit = finished(child);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('settle codec-server to answer /healthz', async () => {
      const health = await fetch(`${url}/healthz`).catch(() => undefined);
      return health?.ok;
    });
    const input = asJson(await storedInput(stack.client, eventId));
    assert.equal((await decodeCall(url, [input], {})).status, 401);
    const answered = await decodeCall(url, [input], { authorization: `Bearer ${TOKEN}` });
    assert.ok(decodedText(answered.text).includes(MARKER));
    const stoppedAt = Date.now();
    child.kill('SIGTERM');
    const run = await exit;
    assert.ok(Date.now() - stoppedAt < 10_000);
    assert.ok(!run.stdout.includes(TOKEN) && !run.stderr.includes(TOKEN), 'the token reached the logs');
  });
});

describe('a key rotation', () => {
  test('runs written under the old key stay readable by inspect, replay and the codec server', async () => {
    const old = key('k-old');
    const fresh = key('k-new');
    const stack = await stackWith([old]);
    const eventId = await sendMarked(stack);
    const firstRun = (await stack.client.workflow.getHandle(paymentWorkflowId(eventId)).describe()).runId;

    // The new key goes first, the old one stays after it: worker restarted, a new client.
    await stack.stopWorker();
    stack.config.payloadKeys = [fresh, old];
    await stack.startWorker();
    const rotated = await connectClient({ ...stack.config, payloadKeys: [fresh, old] });
    cleanups.push(() => rotated.connection.close());

    const view = await inspectEvent(stack.pool, rotated, eventId);
    assert.equal(view?.workflow?.status, 'COMPLETED');
    const withoutOld = await connectClient({ ...stack.config, payloadKeys: [fresh] });
    cleanups.push(() => withoutOld.connection.close());
    await assert.rejects(
      withoutOld.workflow.getHandle(paymentWorkflowId(eventId), firstRun).result(),
      /"k-old"/,
    );

    const replayed = await replayEvent(
      { pool: stack.pool, client: rotated, taskQueue: stack.taskQueue },
      eventId,
    );
    assert.equal(replayed.status, 'replayed', JSON.stringify(replayed));
    const newRun = (await rotated.workflow.getHandle(paymentWorkflowId(eventId)).describe()).runId;
    assert.notEqual(newRun, firstRun);
    const keyOf = async (runId: string) =>
      Buffer.from((await storedInput(rotated, eventId, runId)).metadata![KEY_ID_METADATA]!).toString();
    assert.deepEqual([await keyOf(firstRun), await keyOf(newRun)], ['k-old', 'k-new']);

    const server = await codecServer([fresh, old]);
    const answered = await decodeCall(server.url, [asJson(await storedInput(rotated, eventId, firstRun))], {
      authorization: `Bearer ${TOKEN}`,
    });
    assert.ok(decodedText(answered.text).includes(MARKER));

    const history = await rotated.workflow.getHandle(paymentWorkflowId(eventId), firstRun).fetchHistory();
    await Worker.runReplayHistory(
      {
        workflowBundle: { codePath: await workflowBundlePath({ encodedFailures: true }) },
        dataConverter: settleDataConverter({ payloadKeys: [fresh, old] }),
      },
      history,
      `${paymentWorkflowId(eventId)}-old-key`,
    );
  });
});

describe('turning encryption on under running workflows', () => {
  test('a run started without keys finishes on a worker restarted with them, and replays', async () => {
    const stack = await stackWith(undefined);
    // The carrier refuses until the worker has been restarted, so the run is mid-way through then.
    let open = false;
    carrier.behaviour = () => ({ status: open ? 200 : 503 });
    cleanups.push(async () => (carrier.behaviour = () => ({ status: 200 })));
    const shipmentId = uniqueId('SHP');
    await addShipments(stack.pool, [shipmentId]);
    const event = paymentEvent({ shipmentId, amount: AMOUNT, type: 'payment.settled' });
    assert.equal((await postWebhook(stack, event)).status, 202);
    const refusedBefore = carrier.requests.length;
    for (let i = 0; carrier.requests.length === refusedBefore; i += 1) {
      assert.ok(i < 600, 'the carrier was never called');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const keys = [key('k-on')];
    await stack.stopWorker();
    stack.config.payloadKeys = keys;
    await stack.startWorker();
    open = true;
    const client = await connectClient({ ...stack.config, payloadKeys: keys });
    cleanups.push(() => client.connection.close());
    const result: PaymentWorkflowResult = await client.workflow
      .getHandle(paymentWorkflowId(event.id))
      .result();
    assert.equal(result.outcome, 'applied');

    const history = await client.workflow.getHandle(paymentWorkflowId(event.id)).fetchHistory();
    const encodings = (history.events ?? []).flatMap((e) =>
      [
        ...(e.workflowExecutionStartedEventAttributes?.input?.payloads ?? []),
        ...(e.activityTaskScheduledEventAttributes?.input?.payloads ?? []),
        ...(e.workflowExecutionCompletedEventAttributes?.result?.payloads ?? []),
      ].map((p) => Buffer.from(p.metadata!.encoding!).toString()),
    );
    assert.equal(encodings[0], 'json/plain', 'the input was written before the keys');
    assert.equal(encodings.at(-1), 'binary/encrypted', 'the result was written after');
    await Worker.runReplayHistory(
      {
        workflowBundle: { codePath: await workflowBundlePath({ encodedFailures: true }) },
        dataConverter: settleDataConverter({ payloadKeys: keys }),
      },
      history,
      `${paymentWorkflowId(event.id)}-turned-on`,
    );
  });
});
