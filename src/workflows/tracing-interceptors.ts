import { ApplicationFailure, ApplicationFailureCategory, type Headers } from '@temporalio/common';
import {
  AsyncLocalStorage,
  ContinueAsNew,
  defaultPayloadConverter,
  proxySinks,
  type Next,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import type { OpenTelemetrySinks, SerializableSpan } from '@temporalio/interceptors-opentelemetry';

/**
 * A traced worker's workflow spans (docs/operations.md, "Tracing"), with no OpenTelemetry code in the
 * sandbox: what Temporal's OpenTelemetry workflow interceptors record (@temporalio/interceptors-opentelemetry,
 * whose client and activity interceptors settle keeps), with the same names, parents, header and sink.
 *
 * Theirs bring the OpenTelemetry SDK into the bundle (about a hundred modules), and hold a tracer and
 * globals at module scope, so the bundle cannot preload them: each traced run evaluated them again, the
 * larger part of what tracing cost a worker per event (docs/performance.md, "The levers"). This module
 * keeps nothing at its top level but constants, so it is preloaded with the workflows and shared.
 *
 * - `RunWorkflow:<type>` and `HandleSignal:<name>` continue the trace the caller put in the
 *   `_tracer-data` header (a W3C `traceparent` as JSON, what the client and activity interceptors read
 *   and write); `StartActivity:<type>` (activities and local activities), `StartChildWorkflow:<type>`,
 *   `SignalWorkflow:<name>` and `ContinueAsNew:<type>` are children of the span the workflow code runs
 *   in, and hand their own context on in the header. Queries and updates (v1 traces them too) make
 *   no span: a query is a read, `settle replay` asks one per event, and settle's workflows take no update.
 * - Sampling is the SDK's default in the sandbox, parent-based: a run follows its caller's decision, and
 *   a run no caller traced is a new sampled trace.
 * - IDs come from the workflow's seeded `Math.random` and times from its clock, so a replay recreates
 *   the same spans; the SDK does not call sinks while replaying, so nothing is exported twice.
 * - A span ends with its call (an activity's start span when the activity returns), OK or ERROR with the
 *   exception recorded; a benign ApplicationFailure leaves the status unset, a continue-as-new is OK.
 */
export const TRACE_HEADER = '_tracer-data';

/** The scope Temporal's workflow interceptors name their tracer with: dashboards that filter on it keep working. */
const SCOPE = { name: '@temporalio/interceptor-workflow' };
const SPAN_KIND_INTERNAL = 0;
const STATUS = { unset: 0, ok: 1, error: 2 } as const;
const SAMPLED = 0x01;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A span's context, as the W3C header carries it. */
type SpanRef = { traceId: string; spanId: string; traceFlags: number; traceState?: string };

export const interceptors = (): WorkflowInterceptors => {
  // The span the workflow code runs in: the run's, or a signal handler's.
  const active = new AsyncLocalStorage<SpanRef>();
  const exporter = proxySinks<OpenTelemetrySinks>().exporter;

  /** Runs `call` in a new span under `parent` (none: a new trace), ended when its promise settles. */
  async function inSpan<T>(
    name: string,
    parent: SpanRef | undefined,
    call: (span: SpanRef) => Promise<T>,
    isAcceptable: (error: unknown) => boolean = () => false,
  ): Promise<T> {
    const startMs = Date.now();
    const span: SpanRef = {
      traceId: parent?.traceId ?? randomHex(32),
      spanId: randomHex(16),
      traceFlags: parent ? parent.traceFlags : SAMPLED,
      ...(parent?.traceState ? { traceState: parent.traceState } : {}),
    };
    const end = (status: SerializableSpan['status'], events: SerializableSpan['events'] = []) => {
      if (!(span.traceFlags & SAMPLED)) return;
      exporter.export([serializable(name, span, parent?.spanId, startMs, Date.now(), status, events)]);
    };
    let result: T;
    try {
      result = await call(span);
    } catch (error) {
      if (isAcceptable(error)) end({ code: STATUS.ok });
      else end(failedStatus(error), [exceptionEvent(error, Date.now())]);
      throw error;
    }
    end({ code: STATUS.ok });
    return result;
  }

  const inbound: WorkflowInboundCallsInterceptor = {
    execute: (input, next) =>
      inSpan(
        `RunWorkflow:${workflowInfo().workflowType}`,
        parentIn(input.headers),
        (span) => active.run(span, () => next(input)),
        (error) => error instanceof ContinueAsNew,
      ),
    handleSignal: (input, next) =>
      inSpan(`HandleSignal:${input.signalName}`, parentIn(input.headers), (span) =>
        active.run(span, () => next(input)),
      ),
  };

  /** An outbound call in its own span, the span's context in the call's headers. */
  const carried =
    <I extends { headers: Headers }, R>(
      name: (input: I) => string,
      isAcceptable?: (error: unknown) => boolean,
    ) =>
    (input: I, next: (input: I) => Promise<R>): Promise<R> =>
      inSpan(
        name(input),
        active.getStore(),
        (span) => next({ ...input, headers: withContext(input.headers, span) }),
        isAcceptable,
      );

  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: carried((input) => `StartActivity:${input.activityType}`),
    scheduleLocalActivity: carried((input) => `StartActivity:${input.activityType}`),
    startChildWorkflowExecution: carried((input) => `StartChildWorkflow:${input.workflowType}`),
    signalWorkflow: carried((input) => `SignalWorkflow:${input.signalName}`),
    continueAsNew: carried(
      (input) => `ContinueAsNew:${input.options.workflowType}`,
      (error) => error instanceof ContinueAsNew,
    ),
    getLogAttributes: (input, next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>) => {
      const span = active.getStore();
      if (!span) return next(input);
      return next({
        trace_id: span.traceId,
        span_id: span.spanId,
        trace_flags: `0${span.traceFlags.toString(16)}`,
        ...input,
      });
    },
  };

  return { inbound: [inbound], outbound: [outbound] };
};

/** The caller's span in the `_tracer-data` header, when it carries a valid W3C traceparent. */
function parentIn(headers: Headers): SpanRef | undefined {
  const payload = headers[TRACE_HEADER];
  if (!payload) return undefined;
  let carrier: unknown;
  try {
    carrier = defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined;
  }
  if (typeof carrier !== 'object' || carrier === null) return undefined;
  const { traceparent, tracestate } = carrier as { traceparent?: unknown; tracestate?: unknown };
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  // W3C Trace Context: version ff is invalid, version 00 has exactly four fields, IDs are not all zeros.
  if (version === 'ff' || (version === '00' && rest) || /^0+$/.test(traceId) || /^0+$/.test(spanId))
    return undefined;
  return {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & SAMPLED,
    ...(typeof tracestate === 'string' && tracestate ? { traceState: tracestate } : {}),
  };
}

function withContext(headers: Headers, span: SpanRef): Headers {
  const carrier: Record<string, string> = {
    traceparent: `00-${span.traceId}-${span.spanId}-0${span.traceFlags.toString(16)}`,
  };
  if (span.traceState) carrier.tracestate = span.traceState;
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(carrier) };
}

/** `length` lowercase hex digits from the workflow's seeded random source, never all zeros. */
function randomHex(length: number): string {
  let hex = '';
  while (hex.length < length) hex += ((Math.random() * 2 ** 32) >>> 0).toString(16).padStart(8, '0');
  hex = hex.slice(0, length);
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

function hrTime(ms: number): [number, number] {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

function serializable(
  name: string,
  span: SpanRef,
  parentSpanId: string | undefined,
  startMs: number,
  endMs: number,
  status: SerializableSpan['status'],
  events: SerializableSpan['events'],
): SerializableSpan {
  return {
    name,
    kind: SPAN_KIND_INTERNAL,
    spanContext: {
      traceId: span.traceId,
      spanId: span.spanId,
      traceFlags: span.traceFlags,
      ...(span.traceState ? { traceState: span.traceState } : {}),
    },
    ...(parentSpanId ? { parentSpanId } : {}),
    startTime: hrTime(startMs),
    endTime: hrTime(endMs),
    status,
    attributes: {},
    links: [],
    events,
    duration: hrTime(endMs - startMs),
    ended: true,
    droppedAttributesCount: 0,
    droppedLinksCount: 0,
    droppedEventsCount: 0,
    instrumentationLibrary: SCOPE,
  };
}

function failedStatus(error: unknown): SerializableSpan['status'] {
  const benign = error instanceof ApplicationFailure && error.category === ApplicationFailureCategory.BENIGN;
  return { code: benign ? STATUS.unset : STATUS.error, message: messageOf(error) };
}

/** The `exception` event OpenTelemetry's recordException adds. */
function exceptionEvent(error: unknown, atMs: number): SerializableSpan['events'][number] {
  const attributes: Record<string, string> = { 'exception.message': messageOf(error) };
  if (error instanceof Error) {
    attributes['exception.type'] = error.name;
    if (error.stack) attributes['exception.stacktrace'] = error.stack;
  }
  return { name: 'exception', attributes, time: hrTime(atMs), droppedAttributesCount: 0 };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
