/**
 * OpenTelemetry tracing, end to end on the real stack (docs/operations.md, "Tracing"): an OTLP/HTTP
 * receiver inside the test stands for the collector (http/json decoded as JSON, http/protobuf with the
 * OTLP definitions the exporter itself ships), the carrier and the ERP are recording receivers.
 *
 * The tests run in order in one process: first with tracing off (nothing of OpenTelemetry loads,
 * nothing is sent, no `traceparent` goes downstream), then on with each protocol.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { after, test } from 'node:test';
import type { PayloadKey } from '../src/config/payload-keys';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { shortHash } from '../src/lib/hash';
import { activeTracing, startTracing, stopTracing } from '../src/tracing/tracing';
import { paymentEvent, postWebhook, startTestStack, uniqueId, waitFor } from '../testkit/harness';
import { startReceiver, type Receiver } from '../testkit/receiver';

type ExportedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  /** The span contexts it links to (traceId and spanId, hex). */
  links: { traceId: string; spanId: string }[];
  resource: Record<string, unknown>;
};

/** How long the tests wait for exported spans: a bound on a hang (harness `waitFor`'s). */
const SPAN_WAIT_MS = 300_000;

/** A collector's OTLP/HTTP traces endpoint: records each export request, decoded, and answers 200. */
class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];
  /** Every request body as text (JSON, or the protobuf decoded to JSON), for the leak check. */
  readonly bodies: string[] = [];
  readonly contentTypes: string[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        let body = Buffer.concat(chunks);
        if (request.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        const type = String(request.headers['content-type'] ?? '');
        this.contentTypes.push(type);
        const decoded = type.includes('protobuf') ? decodeProtobuf(body) : JSON.parse(body.toString('utf8'));
        this.bodies.push(JSON.stringify(decoded));
        this.spans.push(...spansOf(decoded));
        response.writeHead(200, { 'content-type': type.includes('protobuf') ? type : 'application/json' });
        response.end(type.includes('protobuf') ? Buffer.alloc(0) : '{}');
      });
    });
    // The exporter keeps its connection alive between batches; a server that closes an idle one
    // after Node's default 5 s races the next export on it, and a reset export is dropped.
    server.keepAliveTimeout = SPAN_WAIT_MS;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value?: AnyValue };
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        attributes?: KeyValue[];
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
};

function valueOf(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((entry) => [entry.key, valueOf(entry.value)]));
}

/** OTLP/JSON carries IDs as hex; the protobuf decoded here as base64 bytes: both become hex. */
function hexId(id: string | undefined): string {
  if (!id) return '';
  return /^[0-9a-f]+$/.test(id) && (id.length === 32 || id.length === 16)
    ? id
    : Buffer.from(id, 'base64').toString('hex');
}

function spansOf(request: ExportRequest): ExportedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: hexId(span.traceId),
        spanId: hexId(span.spanId),
        parentSpanId: hexId(span.parentSpanId),
        name: span.name,
        attributes: attributesOf(span.attributes),
        links: (span.links ?? []).map((link) => ({
          traceId: hexId(link.traceId),
          spanId: hexId(link.spanId),
        })),
        resource,
      })),
    );
  });
}

/** The OTLP protobuf definitions the proto exporter encodes with (its transformer's generated root). */
function decodeProtobuf(body: Buffer): ExportRequest {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as {
    opentelemetry: {
      proto: {
        collector: {
          trace: {
            v1: {
              ExportTraceServiceRequest: {
                decode(body: Buffer): unknown;
                toObject(message: unknown, options: object): ExportRequest;
              };
            };
          };
        };
      };
    };
  };
  const type = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  return type.toObject(type.decode(body), { longs: String, bytes: String, defaults: false });
}

const OTEL_VARIABLES = [
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_BSP_EXPORT_TIMEOUT',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
];
function setOtelEnvironment(values: Record<string, string>): void {
  for (const name of OTEL_VARIABLES) delete process.env[name];
  Object.assign(process.env, values);
}

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  await stopTracing();
});

/** A stack with its own carrier and ERP and payload encryption on, and one event sent through it. */
async function sendEvent(traceparent: string) {
  const carrier = await startReceiver();
  const erp = await startReceiver();
  cleanups.push(
    () => carrier.close(),
    () => erp.close(),
  );
  const payloadKeys: PayloadKey[] = [{ id: 'k1', key: randomBytes(32) }];
  const stack = await startTestStack({ config: { carrierUrl: carrier.url, erpUrl: erp.url, payloadKeys } });
  cleanups.push(() => stack.close());
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  const event = paymentEvent({ shipmentId, type: 'payment.settled' });
  const answer = await postWebhook(stack, event, { headers: { traceparent } });
  assert.equal(answer.status, 202);
  const result = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).result();
  assert.equal(result.outcome, 'applied');
  await waitFor('the carrier and the ERP to be called', async () =>
    carrier.requests.length > 0 && erp.requests.length > 0 ? true : undefined,
  );
  const secrets = [
    stack.secret,
    stack.apiToken,
    ...stack.config.outboundSecret,
    payloadKeys[0]!.key.toString('base64'),
  ];
  return { stack, event, shipmentId, carrier, erp, secrets: secrets.filter(Boolean) };
}

function newTraceparent(): { traceparent: string; traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, traceId };
}

const traceIdOf = (receiver: Receiver) =>
  receiver.requests.map((request) => String(request.headers.traceparent ?? '').split('-')[1]);

const loadedOpenTelemetry = () =>
  Object.keys(require.cache).filter((path) =>
    /[\\/]@opentelemetry[\\/](sdk-trace-base|exporter-trace-otlp)/.test(path),
  );

test('with tracing off, no OpenTelemetry SDK or exporter loads, nothing is sent, no traceparent goes downstream', async () => {
  const collector = new OtlpReceiver();
  await collector.start();
  cleanups.push(() => collector.close());
  // Configured but switched off the standard way; and the variables that alone turn nothing on.
  setOtelEnvironment({
    OTEL_SDK_DISABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_SERVICE_NAME: 'settle-test',
    OTEL_TRACES_SAMPLER: 'always_on',
  });
  assert.equal(await startTracing('test'), undefined);
  delete process.env.OTEL_SDK_DISABLED;
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  assert.equal(
    await startTracing('test'),
    undefined,
    'OTEL_SERVICE_NAME and a sampler alone turned tracing on',
  );
  assert.equal(activeTracing(), undefined);

  const { traceparent } = newTraceparent();
  const { carrier, erp } = await sendEvent(traceparent);
  assert.deepEqual(
    [...carrier.requests, ...erp.requests].map((request) => request.headers.traceparent),
    [undefined, undefined],
  );
  assert.deepEqual(loadedOpenTelemetry(), []);
  assert.equal(collector.bodies.length, 0);
});

for (const protocol of ['http/json', 'http/protobuf'] as const) {
  test(`with ${protocol}, a webhook starts settle's own trace (its traceparent a link), carried through the workflow, activities and downstream calls`, async () => {
    await stopTracing();
    const collector = new OtlpReceiver();
    await collector.start();
    cleanups.push(() => collector.close());
    setOtelEnvironment({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'settle-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=tracing-test',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      // An export that times out is dropped, not retried: on a machine slow enough to stall this
      // process for the default 10 s, a batch of the spans waited for below was lost (a cold CI run at
      // load 13). The bound is on a hang, as the wait's is.
      OTEL_BSP_EXPORT_TIMEOUT: String(SPAN_WAIT_MS),
      OTEL_EXPORTER_OTLP_TIMEOUT: String(SPAN_WAIT_MS),
    });
    assert.ok(await startTracing('test'));

    const incoming = newTraceparent();
    const { stack, event, shipmentId, carrier, erp, secrets } = await sendEvent(incoming.traceparent);

    // The webhook's signature is not checked when its span starts: whoever sent it does not choose
    // settle's trace. The gateway's span is a root of a new trace, linked to the sender's context.
    const hash = shortHash(event.id);
    const gateway = await waitFor('the gateway span', async () =>
      collector.spans.find(
        (span) => span.name === 'POST /webhooks/payments' && span.attributes['settle.event.hash'] === hash,
      ),
    );
    const traceId = gateway.traceId;
    assert.notEqual(traceId, incoming.traceId, "a webhook's traceparent chose settle's trace");
    assert.equal(gateway.parentSpanId, '', 'the gateway span has a parent');
    assert.deepEqual(gateway.links, [
      { traceId: incoming.traceId, spanId: incoming.traceparent.split('-')[2]! },
    ]);
    assert.ok(!collector.spans.some((span) => span.traceId === incoming.traceId));

    // Every downstream request carries settle's trace on.
    assert.deepEqual(traceIdOf(carrier), [traceId]);
    assert.deepEqual(traceIdOf(erp), [traceId]);

    const expected = [
      'POST /webhooks/payments',
      'StartWorkflow:paymentWorkflow',
      'RunWorkflow:paymentWorkflow',
      'StartActivity:reconcileAndDeliver',
      'RunActivity:reconcileAndDeliver',
      'StartActivity:reconcilePayment',
      'RunActivity:reconcilePayment',
      'StartActivity:deliverOutboxRow',
      'RunActivity:deliverOutboxRow',
      'POST',
    ];
    const spans = await waitFor(
      'the spans of the gateway, the workflow, each activity and each downstream call',
      async () => collector.spans.filter((span) => span.traceId === traceId),
      {
        until: (found) =>
          expected.every((name) => found.some((span) => span.name === name)) &&
          found.filter((span) => span.name === 'POST').length === 2,
      },
    );
    const named = (name: string) => spans.filter((span) => span.name === name);
    assert.equal(named('RunActivity:deliverOutboxRow').length, 2);
    assert.ok(
      collector.contentTypes.every((type) => type.includes(protocol === 'http/json' ? 'json' : 'protobuf')),
    );

    // The workflow's spans continue the gateway's: the run under its start, the first pass's start
    // under the run, the activity under its start (the header the workflow hands on).
    const only = (name: string) => {
      const [span, ...more] = named(name);
      assert.ok(span && more.length === 0, `not exactly one ${name} span`);
      return span;
    };
    assert.equal(only('StartWorkflow:paymentWorkflow').parentSpanId, gateway.spanId);
    assert.equal(
      only('RunWorkflow:paymentWorkflow').parentSpanId,
      only('StartWorkflow:paymentWorkflow').spanId,
    );
    assert.equal(
      only('StartActivity:reconcileAndDeliver').parentSpanId,
      only('RunWorkflow:paymentWorkflow').spanId,
    );
    assert.equal(
      only('RunActivity:reconcileAndDeliver').parentSpanId,
      only('StartActivity:reconcileAndDeliver').spanId,
    );

    // The downstream requests' parents are the POST spans, children of the delivery activities.
    const posts = named('POST');
    const parents = [...carrier.requests, ...erp.requests].map(
      (request) => String(request.headers.traceparent).split('-')[2],
    );
    assert.deepEqual(new Set(parents), new Set(posts.map((span) => span.spanId)));
    const deliveries = new Set(named('RunActivity:deliverOutboxRow').map((span) => span.spanId));
    assert.ok(posts.every((span) => deliveries.has(span.parentSpanId)));

    // A caller presenting the bearer token continues its trace; without it (401), a new trace again.
    const ask = async (token: string | undefined) => {
      const { traceparent, traceId: theirs } = newTraceparent();
      const response = await fetch(`${stack.gatewayUrl}/events/${encodeURIComponent(event.id)}`, {
        headers: { traceparent, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      });
      await response.body?.cancel();
      const span = await waitFor('the /events span', async () =>
        collector.spans.find(
          (found) =>
            found.name === 'GET /events/:eventId' &&
            (found.traceId === theirs || found.links.some((link) => link.traceId === theirs)),
        ),
      );
      return { status: response.status, span, traceparent, theirs };
    };
    const authenticated = await ask(stack.apiToken);
    assert.equal(authenticated.status, 200);
    assert.equal(authenticated.span.traceId, authenticated.theirs);
    assert.equal(authenticated.span.parentSpanId, authenticated.traceparent.split('-')[2]);
    assert.deepEqual(authenticated.span.links, []);
    const anonymous = await ask(undefined);
    assert.equal(anonymous.status, 401);
    assert.notEqual(anonymous.span.traceId, anonymous.theirs);
    assert.equal(anonymous.span.parentSpanId, '');

    // The event by its short hash and the shipment, on the gateway, the workflow and every activity.
    for (const name of [
      'POST /webhooks/payments',
      'StartWorkflow:paymentWorkflow',
      'RunWorkflow:paymentWorkflow',
      'RunActivity:reconcileAndDeliver',
      'RunActivity:reconcilePayment',
      'RunActivity:deliverOutboxRow',
      'POST',
    ]) {
      for (const span of named(name)) {
        assert.equal(span.attributes['settle.event.hash'], hash, `${name} has no settle.event.hash`);
        assert.equal(span.attributes['settle.shipment.id'], shipmentId, `${name} has no settle.shipment.id`);
      }
    }
    assert.equal(named('POST /webhooks/payments')[0]!.attributes['http.response.status_code'], 202);
    assert.equal(spans[0]!.resource['service.name'], 'settle-test');
    assert.equal(spans[0]!.resource['deployment.environment'], 'tracing-test');

    // Nothing exported names the raw event ID or holds a secret.
    for (const body of collector.bodies) {
      assert.ok(!body.includes(event.id), 'an exported span holds the raw event ID');
      for (const secret of secrets) assert.ok(!body.includes(secret), 'an exported span holds a secret');
    }
  });
}
