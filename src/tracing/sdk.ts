/**
 * Tracing when it is on (loaded by ./tracing.ts's startTracing only then). The OpenTelemetry JS SDK's
 * 1.x line, because @temporalio/interceptors-opentelemetry 1.24.0 (the one for SDK 1.24, whose client
 * and activity interceptors settle uses) is built on it. The workflow spans, settle's own interceptors
 * in the sandbox (src/workflows/tracing-interceptors.ts), are handed to this process's span processor
 * through that package's sink.
 *
 * Every span leaves through SettleSpanProcessor, which keeps raw event IDs out of what is exported:
 * the workflow ID Temporal's interceptors attach (it holds the event ID) becomes `settle.event.hash`
 * (the short hash the logs carry; `settle.delivery.hash` for a reminder), and every other string is
 * passed through the logs' redaction. Spans started in this process under a span with settle's facts
 * inherit them, so the StartWorkflow and downstream POST spans name the event and shipment too.
 */
import {
  context,
  createTraceState,
  isSpanContextValid,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  ROOT_CONTEXT,
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResourcesSync, envDetectorSync, Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type Span as SdkSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
  type SerializableSpan,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { InjectedSinks } from '@temporalio/worker';
import { subjectOfWorkflowId } from '../domain/ids';
import { ShipmentIdKey } from '../workflows/search-attributes';
import { shortHash } from '../lib/hash';
import { redactIds } from '../temporal/redact-ids';
import type { SpanFacts, Tracing, TracingSettings } from './contract';

/** The attributes settle's spans carry about the business (docs/architecture.md, "Tracing"). */
const SPAN_ATTRIBUTES = {
  eventHash: 'settle.event.hash',
  deliveryHash: 'settle.delivery.hash',
  shipmentId: 'settle.shipment.id',
} as const;
const INHERITED = Object.values(SPAN_ATTRIBUTES);

/** Where Temporal's interceptors and sink put the raw workflow ID. */
const WORKFLOW_ID_ATTRIBUTES = new Set(['temporalWorkflowId', 'workflowId']);

/** Probes and scrapes would be most of a gateway's spans and tell nothing about an event. */
const UNTRACED_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

export function createTracing(settings: TracingSettings, role: string): Tracing {
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': `settle-${role}`, 'settle.role': role }))
    // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win over settle's defaults.
    .merge(detectResourcesSync({ detectors: [envDetectorSync] }));
  // Each exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS and _TIMEOUT itself.
  const exporter = settings.protocol === 'http/json' ? new JsonTraceExporter() : new ProtobufTraceExporter();
  const processor = new SettleSpanProcessor(new BatchSpanProcessor(exporter));
  // The sampler comes from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default: parent-based, always on).
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  // W3C trace context only: an incoming `baggage` header is not handed on to the downstreams.
  provider.register({
    contextManager: new AsyncLocalStorageContextManager(),
    propagator: new W3CTraceContextPropagator(),
  });
  const tracer = provider.getTracer('settle');

  const workflowSinks: InjectedSinks<OpenTelemetrySinks> = {
    exporter: {
      export: {
        fn: (info, spans) => {
          for (const span of spans) processor.onEnd(workflowSpan(span, info, resource));
        },
      },
    },
  };

  return {
    workflowClientInterceptors: [new OpenTelemetryWorkflowClientInterceptor({ tracer })],

    workerOptions(options) {
      return {
        ...options,
        interceptors: {
          ...options.interceptors,
          activity: [
            (ctx) => ({
              inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
              outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
            }),
            ...(options.interceptors?.activity ?? []),
          ],
        },
        sinks: { ...options.sinks, ...workflowSinks },
      };
    },

    instrumentGateway(app, { continuesTrace }) {
      const spans = new WeakMap<object, { span: Span; context: Context }>();
      app.addHook('onRequest', (request, _reply, done) => {
        const route = request.routeOptions.url;
        if (route !== undefined && UNTRACED_ROUTES.has(route)) return done();
        const incoming = propagation.extract(ROOT_CONTEXT, request.headers);
        // Only an authenticated caller continues its trace (and so decides its sampling). Anyone else
        // (a webhook, its signature not yet checked) gets a new trace; its context is a link only.
        const trusted = continuesTrace(request);
        const parent = trusted ? incoming : ROOT_CONTEXT;
        const claimed = trace.getSpanContext(incoming);
        const links = !trusted && claimed && isSpanContextValid(claimed) ? [{ context: claimed }] : [];
        // The route, never the URL: a path can hold an event ID.
        const span = tracer.startSpan(
          `${request.method} ${route ?? 'unmatched'}`,
          {
            kind: SpanKind.SERVER,
            attributes: { 'http.request.method': request.method, 'http.route': route ?? 'unmatched' },
            links,
          },
          parent,
        );
        const active = trace.setSpan(parent, span);
        spans.set(request, { span, context: active });
        context.with(active, done);
      });
      // The body is read between the two hooks, outside the context: the handler gets it back here.
      app.addHook('preHandler', (request, _reply, done) => {
        const traced = spans.get(request);
        if (!traced) return done();
        context.with(traced.context, done);
      });
      app.addHook('onResponse', (request, reply, done) => {
        const traced = spans.get(request);
        if (traced) {
          traced.span.setAttribute('http.response.status_code', reply.statusCode);
          if (request.ingestOutcome) traced.span.setAttribute('settle.outcome', request.ingestOutcome);
          if (reply.statusCode >= 500) traced.span.setStatus({ code: SpanStatusCode.ERROR });
          traced.span.end();
        }
        done();
      });
    },

    async downstreamCall(url, headers, call) {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        return call(headers);
      }
      // Host and port only: a customer's endpoint path or query may hold a token.
      const attributes: Attributes = {
        'http.request.method': 'POST',
        'server.address': target.hostname,
        'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
      };
      return tracer.startActiveSpan('POST', { kind: SpanKind.CLIENT, attributes }, async (span) => {
        const carrier: Record<string, string> = { ...headers };
        propagation.inject(context.active(), carrier);
        try {
          const response = await call(carrier);
          span.setAttribute('http.response.status_code', response.status);
          if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          return response;
        } catch (error) {
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: error instanceof Error ? error.message : 'request failed',
          });
          throw error;
        } finally {
          span.end();
        }
      });
    },

    step(name, run) {
      const inSpan = <T>(span: Span, work: () => Promise<T>): Promise<T> =>
        work().then(
          (result) => {
            span.end();
            return result;
          },
          (error: unknown) => {
            span.setStatus({
              code: SpanStatusCode.ERROR,
              message: error instanceof Error ? error.message : 'failed',
            });
            span.end();
            throw error;
          },
        );
      return tracer.startActiveSpan(`StartActivity:${name}`, { kind: SpanKind.INTERNAL }, (start) =>
        inSpan(start, () =>
          tracer.startActiveSpan(`RunActivity:${name}`, { kind: SpanKind.INTERNAL }, (span) =>
            inSpan(span, run),
          ),
        ),
      );
    },

    annotate(facts: SpanFacts) {
      const span = trace.getActiveSpan();
      if (!span) return;
      if (facts.eventId !== undefined) span.setAttribute(SPAN_ATTRIBUTES.eventHash, shortHash(facts.eventId));
      if (facts.shipmentId !== undefined) span.setAttribute(SPAN_ATTRIBUTES.shipmentId, facts.shipmentId);
    },

    async shutdown(deadlineMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => {}),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs))),
      ]);
      clearTimeout(timer);
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/**
 * Hands spans on to `next` with settle's facts inherited from their in-process parent (at start) and
 * raw IDs taken out (at end).
 */
class SettleSpanProcessor implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: SdkSpan, parentContext: Context): void {
    const parent = trace.getSpan(parentContext) as Partial<ReadableSpan> | undefined;
    // The parent's own facts, or those its workflow ID stands for (an activity's span): only the
    // inherited keys, not the parent's whole redacted attribute set, for every span started.
    const attributes = parent?.attributes;
    if (attributes) {
      let derived: Attributes | undefined;
      for (const key of INHERITED) {
        if (span.attributes[key] !== undefined) continue;
        let value = attributes[key];
        if (value === undefined) {
          derived ??= workflowFactsIn(attributes);
          value = derived[key];
        }
        if (value !== undefined) span.setAttribute(key, value);
      }
    }
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    this.next.onEnd(redactedSpan(span));
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

/** The span as exported: the workflow ID as its short hash, every string redacted, no object values. */
function redactedSpan(span: ReadableSpan): ReadableSpan {
  return Object.create(span, {
    name: { value: redactIds(span.name) },
    attributes: { value: redactedAttributes(span.attributes) },
    status: {
      value: span.status.message ? { ...span.status, message: redactIds(span.status.message) } : span.status,
    },
    events: {
      value: span.events.map((event) =>
        event.attributes ? { ...event, attributes: redactedAttributes(event.attributes) } : event,
      ),
    },
  }) as ReadableSpan;
}

/** The facts the workflow ID among these attributes stands for, if there is one. */
function workflowFactsIn(attributes: Attributes): Attributes {
  for (const key of WORKFLOW_ID_ATTRIBUTES) {
    const value = attributes[key];
    if (typeof value === 'string') return workflowFacts(value);
  }
  return {};
}

function redactedAttributes(attributes: Attributes): Attributes {
  const redacted: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (WORKFLOW_ID_ATTRIBUTES.has(key)) {
      if (typeof value === 'string') Object.assign(redacted, workflowFacts(value));
      continue;
    }
    const safe = redactedValue(value);
    if (safe !== undefined) redacted[key] = safe;
  }
  // An attribute settle set itself (an inherited hash) wins over one derived here.
  for (const key of INHERITED) if (attributes[key] !== undefined) redacted[key] = attributes[key];
  return redacted;
}

function redactedValue(value: unknown): AttributeValue | undefined {
  if (typeof value === 'string') return redactIds(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value))
    return value.map((item: unknown) =>
      typeof item === 'string' ? redactIds(item) : item,
    ) as AttributeValue;
  // Objects are no attribute values (the sink's WorkflowInfo has some: memo, parent, root): dropped.
  return undefined;
}

/** The short hash of the event (or reminder delivery) a workflow ID stands for. */
function workflowFacts(workflowId: string): Attributes {
  const subject = subjectOfWorkflowId(workflowId);
  if (subject === undefined) return {};
  const key = workflowId.startsWith('reminder:') ? SPAN_ATTRIBUTES.deliveryHash : SPAN_ATTRIBUTES.eventHash;
  return { [key]: shortHash(subject) };
}

/** A span the workflow's interceptors made inside the sandbox, as the SDK would export it, with settle's facts. */
function workflowSpan(serialized: SerializableSpan, info: WorkflowInfo, resource: Resource): ReadableSpan {
  const {
    spanContext: { traceState, ...spanContext },
    ...span
  } = serialized;
  const restored = { ...spanContext, traceState: traceState ? createTraceState(traceState) : undefined };
  return {
    ...span,
    attributes: { ...span.attributes, ...workflowAttributes(info) },
    spanContext: () => restored,
    resource,
  };
}

function workflowAttributes(info: WorkflowInfo): Attributes {
  const shipmentId = shipmentOf(info);
  return {
    'temporal.workflow.type': info.workflowType,
    'temporal.task_queue': info.taskQueue,
    run_id: info.runId,
    ...workflowFacts(info.workflowId),
    ...(shipmentId ? { [SPAN_ATTRIBUTES.shipmentId]: shipmentId } : {}),
  };
}

/** The run's ShipmentId search attribute, set at its start (workflows/search-attributes.ts). */
function shipmentOf(info: WorkflowInfo): string | undefined {
  // The sink hands over a copy of the info, made in the workflow thread: its typed search attributes
  // lost their class's methods on the way (a throw and a stack trace per span, when it was called
  // regardless), so the plain map below is what a sink call has.
  const typed = info.typedSearchAttributes as
    Partial<Pick<typeof info.typedSearchAttributes, 'get'>> | undefined;
  if (typeof typed?.get === 'function') {
    const value = typed.get(ShipmentIdKey);
    if (typeof value === 'string') return value;
  }
  const plain = (info as { searchAttributes?: Record<string, unknown> }).searchAttributes?.[
    ShipmentIdKey.name
  ];
  const first = Array.isArray(plain) ? (plain[0] as unknown) : undefined;
  return typeof first === 'string' ? first : undefined;
}
