/**
 * A real trace collector for the topology run: Jaeger v1.76.0 (`github.com/jaegertracing/jaeger/cmd/
 * jaeger`, the OpenTelemetry Collector-based Jaeger v2 binary), with in-memory storage, its OTLP/HTTP
 * receiver and its query API on free loopback ports. Built once from the Go module proxy into
 * `.tools/jaeger-<version>/bin/jaeger`, like the Temporal server (binaries.ts). Its go.mod carries
 * replace directives, so `go install module@version` refuses it: it is built from a scratch module
 * that adds it as a tool (`go get -tool`), then `go build`.
 *
 * CI (`npm test`) uses the OTLP receiver inside test/tracing.test.ts instead: a cold Jaeger build is
 * many minutes on 2 cores (docs/operations.md, "Tracing").
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { httpRequest } from './load';
import type { Child } from './processes';
import type { PaymentEvent } from '../src/domain/payment-event';
import { signWebhook } from '../src/lib/webhook-signature';
import { shortHash } from '../src/lib/hash';
import { PROJECT_ROOT } from '../src/lib/paths';
import { buildInto } from './binaries';
import { listening, pollUntil, PortPicker, startProgram } from './programs';

export const JAEGER_VERSION = '1.76.0';
/** The same release's v2 number: the official image's tag (`jaegertracing/jaeger:2.13.0`). */
export const JAEGER_IMAGE_VERSION = '2.13.0';
const JAEGER_PACKAGE = 'github.com/jaegertracing/jaeger/cmd/jaeger';

/** The Jaeger binary, built first if this machine has none (minutes, once). */
export async function ensureJaeger(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<string> {
  const dir = join(PROJECT_ROOT, '.tools', `jaeger-${JAEGER_VERSION}`);
  // Returns at once when the folder is complete (another run, or this machine, built it).
  await buildInto(dir, log, async (go) => {
    await goRun(go, ['mod', 'init', 'settle-jaeger-build'], log);
    await goRun(go, ['get', '-tool', `${JAEGER_PACKAGE}@v${JAEGER_VERSION}`], log);
    await goRun(go, ['build', '-v', '-o', join(go.work, 'bin', 'jaeger'), JAEGER_PACKAGE], log);
  });
  return join(dir, 'bin', 'jaeger');
}

/** One `go` command; a progress line every 60 s (lines printed: modules fetched, packages compiled). */
function goRun(go: { cwd: string; env: NodeJS.ProcessEnv }, args: string[], log: (line: string) => void) {
  log(`topology: go ${args.join(' ')}`);
  const started = Date.now();
  return new Promise<void>((resolve, reject) => {
    const child = spawn('go', args, { cwd: go.cwd, env: go.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    let lines = 0;
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      lines += text.split('\n').filter((line) => line.trim()).length;
      tail = (tail + text).slice(-4000);
    });
    const timer = setInterval(
      () => log(`topology:   ${Math.round((Date.now() - started) / 1000)} s: ${lines} lines from go so far`),
      60_000,
    );
    child.once('error', (error) => {
      clearInterval(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearInterval(timer);
      if (code === 0) resolve();
      else reject(new Error(`go ${args.join(' ')} failed (exit ${code}):\n${tail.trim()}`));
    });
  });
}

/** One span of a trace as Jaeger's query API (`/api/traces/<id>`) returns it. */
export type JaegerSpan = {
  traceID: string;
  spanID: string;
  operationName: string;
  /** CHILD_OF: the parent; FOLLOWS_FROM: a span link (how Jaeger shows OTLP links). */
  references: { refType: string; traceID?: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  /** The span's process: its service name. */
  serviceName: string;
};

export type Jaeger = {
  child: Child;
  /** Where settle exports: OTEL_EXPORTER_OTLP_ENDPOINT. */
  otlpEndpoint: string;
  /** Jaeger's UI and query API. */
  uiUrl: string;
  /** The spans Jaeger holds of one trace (none yet: an empty list). */
  trace(traceId: string): Promise<JaegerSpan[]>;
};

/** Starts Jaeger with its own configuration (in-memory storage, loopback only) and waits for it. */
export async function startJaeger(options: {
  binary: string;
  dir: string;
  ports: PortPicker;
  logFile: string;
  onSpawn?: (child: Child) => void;
  /**
   * A built Jaeger UI (jaeger-ui's `packages/jaeger-ui/build`) to serve: the Go module holds only a
   * placeholder page in its place (the UI is a separate npm build), so without it the query API serves
   * traces but there is no UI to look at.
   */
  uiAssets?: string;
}): Promise<Jaeger> {
  const [otlp, query, queryGrpc, health] = [
    await options.ports.any(),
    await options.ports.any(),
    await options.ports.any(),
    await options.ports.any(),
  ];
  const config = join(options.dir, 'jaeger.yaml');
  writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore${options.uiAssets ? `\n    ui:\n      assets_path: ${JSON.stringify(options.uiAssets)}` : ''}
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${queryGrpc}
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${health}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlp}
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`,
  );
  const child = await startProgram({
    name: 'jaeger',
    command: options.binary,
    args: ['--config', config],
    env: process.env,
    logFile: options.logFile,
    onSpawn: options.onSpawn,
    ready: async () => (await listening(otlp)) && (await listening(query)),
    timeoutMs: 60_000,
  });
  const uiUrl = `http://127.0.0.1:${query}`;
  return {
    child,
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    uiUrl,
    trace: (traceId) => jaegerTrace(uiUrl, traceId),
  };
}

/** The spans a Jaeger at `baseUrl` (its query API) holds of one trace; none yet: an empty list. */
export async function jaegerTrace(baseUrl: string, traceId: string): Promise<JaegerSpan[]> {
  const response = await fetch(`${baseUrl}/api/traces/${traceId}`).catch(() => undefined);
  if (!response?.ok) return [];
  const body = (await response.json()) as {
    data?: {
      spans: (Omit<JaegerSpan, 'serviceName'> & { processID?: string })[];
      processes: Record<string, { serviceName: string }>;
    }[];
  };
  return (body.data ?? []).flatMap((trace) =>
    trace.spans.map((span) => ({
      ...span,
      serviceName: trace.processes[span.processID ?? '']?.serviceName ?? '',
    })),
  );
}

/**
 * The spans one event's trace holds at least, each name from its role's service and how many (a
 * retried step adds more), and each span's parent, as docs/operations.md ("Tracing") draws them.
 */
export const TRACE_SPANS: [name: string, service: string, count: number][] = [
  ['POST /webhooks/payments', 'settle-gateway', 1],
  ['StartWorkflow:paymentWorkflow', 'settle-gateway', 1],
  ['RunWorkflow:paymentWorkflow', 'settle-worker', 1],
  ['StartActivity:reconcileAndDeliver', 'settle-worker', 1],
  ['RunActivity:reconcileAndDeliver', 'settle-worker', 1],
  ['StartActivity:reconcilePayment', 'settle-worker', 1],
  ['RunActivity:reconcilePayment', 'settle-worker', 1],
  ['StartActivity:deliverOutboxRow', 'settle-worker', 2],
  ['RunActivity:deliverOutboxRow', 'settle-worker', 2],
  ['POST', 'settle-worker', 2],
];
const TRACE_PARENTS: [child: string, parent: string | string[]][] = [
  ['StartWorkflow:paymentWorkflow', 'POST /webhooks/payments'],
  ['RunWorkflow:paymentWorkflow', 'StartWorkflow:paymentWorkflow'],
  ['StartActivity:reconcileAndDeliver', 'RunWorkflow:paymentWorkflow'],
  ['RunActivity:reconcileAndDeliver', 'StartActivity:reconcileAndDeliver'],
  // The first pass's steps, each in the spans it had as an activity of its own (Tracing.step); a step
  // the first pass left to the step-by-step path is an activity of the workflow's own.
  ['StartActivity:reconcilePayment', ['RunActivity:reconcileAndDeliver', 'RunWorkflow:paymentWorkflow']],
  ['RunActivity:reconcilePayment', 'StartActivity:reconcilePayment'],
  ['StartActivity:deliverOutboxRow', ['RunActivity:reconcileAndDeliver', 'RunWorkflow:paymentWorkflow']],
  ['RunActivity:deliverOutboxRow', 'StartActivity:deliverOutboxRow'],
  ['POST', 'RunActivity:deliverOutboxRow'],
];

/** A signed webhook sent as a provider that traces sends it: with a sampled `traceparent` of its own. */
export async function sendTracedWebhook(gatewayUrl: string, secret: string, event: PaymentEvent) {
  const traceId = randomBytes(16).toString('hex');
  const providerSpan = randomBytes(8).toString('hex');
  const raw = JSON.stringify(event);
  const reply = await httpRequest(`${gatewayUrl}/webhooks/payments`, {
    headers: {
      'content-type': 'application/json',
      traceparent: `00-${traceId}-${providerSpan}-01`,
      ...signWebhook(secret, `msg_${randomBytes(8).toString('hex')}`, raw),
    },
    body: raw,
  });
  return { traceId, providerSpan, reply };
}

/**
 * settle's trace ID for an event, as its carrier and ERP calls carry it in their `traceparent`: a
 * webhook (unauthenticated when its span starts) never continues the provider's trace, it starts
 * settle's own, linked to the provider's (docs/operations.md, "Tracing").
 */
export function settleTraceId(downstream: { traceparent?: string }[]): string | undefined {
  return downstream.map((request) => request.traceparent?.split('-')[1]).find(Boolean);
}

/** Polls Jaeger until it holds every span of TRACE_SPANS of the trace (120 s at most: a hang). */
export function waitForTrace(baseUrl: string, traceId: string): Promise<JaegerSpan[]> {
  return pollUntil(
    `Jaeger to hold the trace ${traceId}: ${TRACE_SPANS.map(([name, , count]) => `${count}× ${name}`).join(', ')}`,
    () => jaegerTrace(baseUrl, traceId),
    (found) =>
      TRACE_SPANS.every(
        ([name, , count]) => found.filter((span) => span.operationName === name).length >= count,
      ),
    120_000,
  );
}

/**
 * What is wrong with one event's trace as Jaeger holds it: a span from the wrong service or under the
 * wrong parent, a gateway span that is not the root of settle's own trace linked to the provider's
 * `traceparent` (`providerTraceId`, `providerSpan`), a span without the event's short
 * hash; a carrier or ERP request without the trace's ID or not from a POST span; the raw event ID or
 * a secret anywhere in `held` (Jaeger's whole answer for the trace: tags, logs, process tags).
 */
export function traceFailures(trace: {
  /** settle's trace (settleTraceId). */
  traceId: string;
  /** The trace and span of the webhook's own `traceparent`. */
  providerTraceId: string;
  providerSpan: string;
  spans: JaegerSpan[];
  held: string;
  eventId: string;
  downstream: { path: string; traceparent?: string }[];
  secrets: Record<string, string>;
}): { failures: string[]; detail: string } {
  const { spans, traceId, downstream } = trace;
  const failures: string[] = [];
  const named = (name: string) => spans.filter((span) => span.operationName === name);
  const parentOf = (span: JaegerSpan) => span.references.find((ref) => ref.refType === 'CHILD_OF')?.spanID;
  const idsOf = (name: string) => new Set(named(name).map((span) => span.spanID));
  for (const [name, service] of TRACE_SPANS)
    for (const span of named(name))
      if (span.serviceName !== service)
        failures.push(`${name} came from ${span.serviceName}, not ${service}`);
  for (const [child, parent] of TRACE_PARENTS) {
    const parents = [parent].flat();
    for (const span of named(child))
      if (!parents.some((name) => idsOf(name).has(parentOf(span) ?? '')))
        failures.push(`a ${child} span's parent is not a ${parents.join(' or ')}`);
  }
  const gateway = named('POST /webhooks/payments')[0];
  if (traceId === trace.providerTraceId) failures.push("the webhook's traceparent chose settle's trace");
  if (!gateway || parentOf(gateway) !== undefined)
    failures.push("the gateway's span is not the root of settle's own trace");
  else if (
    !gateway.references.some(
      (ref) =>
        ref.refType === 'FOLLOWS_FROM' &&
        ref.spanID === trace.providerSpan &&
        (ref.traceID === undefined || ref.traceID === trace.providerTraceId),
    )
  )
    failures.push("the gateway's span does not link to the provider's traceparent");
  // What settle carries instead of the event ID: its short hash, on every span of the event.
  const hash = shortHash(trace.eventId);
  const unhashed = spans
    .filter((span) => span.tags.find((tag) => tag.key === 'settle.event.hash')?.value !== hash)
    .map((span) => span.operationName);
  if (unhashed.length) failures.push(`spans without settle.event.hash=${hash}: ${unhashed.join(', ')}`);
  const posts = idsOf('POST');
  for (const request of downstream) {
    const [, id, parent] = (request.traceparent ?? '').split('-');
    if (id !== traceId) failures.push(`${request.path} got traceparent ${request.traceparent ?? 'none'}`);
    else if (!posts.has(parent ?? '')) failures.push(`${request.path}'s traceparent is not from a POST span`);
  }
  if (
    !downstream.some((r) => r.path.endsWith('/carrier')) ||
    !downstream.some((r) => r.path.endsWith('/erp'))
  )
    failures.push(
      `the carrier and the ERP were not both called: ${downstream.map((r) => r.path).join(', ')}`,
    );
  if (trace.held.includes(trace.eventId)) failures.push('a span holds the raw event ID');
  for (const [what, secret] of Object.entries(trace.secrets))
    if (secret && trace.held.includes(secret)) failures.push(`a span holds ${what}`);
  const services = [...new Set(spans.map((span) => span.serviceName))].sort().join(', ');
  return {
    failures,
    detail:
      `trace ${traceId}: ${spans.length} spans from ${services}; settle.event.hash ${hash} on each; ` +
      `${downstream.length} downstream requests (${downstream.map((r) => r.path).join(', ')}) with its traceparent`,
  };
}

/**
 * A signed webhook with a sampled `traceparent` through `gatewayUrl`; then Jaeger (at `jaegerUrl`)
 * must hold its whole trace and the carrier and the ERP its trace ID (traceFailures). `downstream`
 * reads the carrier's and the ERP's requests for the event, polled until both arrived.
 */
export async function tracedWebhookArrivesWhole(options: {
  gatewayUrl: string;
  secret: string;
  jaegerUrl: string;
  event: PaymentEvent;
  downstream: () => Promise<{ path: string; traceparent?: string }[]>;
  secrets: Record<string, string>;
}): Promise<{ failures: string[]; detail: string; traceId?: string }> {
  const { event, jaegerUrl } = options;
  const sent = await sendTracedWebhook(options.gatewayUrl, options.secret, event);
  if (sent.reply.status !== 202)
    return { failures: [`the webhook answered ${sent.reply.status}: ${sent.reply.body}`], detail: '' };
  // A bound on a hang, not on the machine's speed: a loaded machine slows one event's way many times over.
  const downstream = await pollUntil(
    "the carrier's and the ERP's requests of the traced event",
    async () => (await options.downstream()).map((r) => ({ ...r, traceparent: r.traceparent || undefined })),
    (requests) => ['/carrier', '/erp'].every((path) => requests.some((r) => r.path.endsWith(path))),
    180_000,
  );
  // The webhook starts settle's own trace (its traceparent a link): found by what the carrier got.
  const traceId = settleTraceId(downstream);
  if (!traceId) return { failures: ['the carrier and the ERP got no traceparent'], detail: '' };
  const spans = await waitForTrace(jaegerUrl, traceId);
  const checked = traceFailures({
    ...sent,
    traceId,
    providerTraceId: sent.traceId,
    spans,
    held: await (await fetch(`${jaegerUrl}/api/traces/${traceId}`)).text(),
    eventId: event.id,
    downstream,
    secrets: options.secrets,
  });
  return { ...checked, traceId };
}
