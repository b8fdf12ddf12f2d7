import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { FastifyInstance, FastifyRequest } from 'fastify';

// What tracing.ts (always loaded, no OpenTelemetry) and sdk.ts (loaded only when
// tracing is on) share, so that neither imports the other's module back.

/** The OTLP encodings settle exports with; gRPC is not among them (one HTTP exporter per encoding). */
export const TRACING_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type TracingProtocol = (typeof TRACING_PROTOCOLS)[number];

export type TracingSettings = { protocol: TracingProtocol };

/** What a span may say about the business it serves: the event as its short hash, never raw. */
export type SpanFacts = { eventId?: string; shipmentId?: string };

export type GatewayTracing = {
  /**
   * True when the request proves who sent it before settle reads a byte of its body (a bearer token
   * on a route that requires one): only then does its `traceparent` become the span's parent.
   */
  continuesTrace(request: FastifyRequest): boolean;
};

/** What the rest of settle calls when tracing is on (implemented by ./sdk.ts). */
export type Tracing = {
  /** For every Temporal client: the StartWorkflow span, its context carried in the start's headers. */
  readonly workflowClientInterceptors: WorkflowClientInterceptor[];
  /** Adds the activity spans (RunActivity, outermost) and the workflow spans' sink to a worker's options. */
  workerOptions<T extends Pick<WorkerOptions, 'interceptors' | 'sinks'>>(options: T): T;
  /**
   * A span per gateway request (probes and /metrics aside). It continues an incoming `traceparent`
   * only where `continuesTrace` says the caller is authenticated; any other request starts a new
   * trace, with the incoming context as a span link.
   */
  instrumentGateway(app: FastifyInstance, options: GatewayTracing): void;
  /** Runs one downstream POST in a client span; `call` gets the headers with `traceparent` added. */
  downstreamCall<T extends { status: number }>(
    url: string,
    headers: Record<string, string>,
    call: (headers: Record<string, string>) => Promise<T>,
  ): Promise<T>;
  /**
   * Runs one step of an activity that does several (reconcileAndDeliver) in the spans the step had as
   * an activity of its own, `StartActivity:<name>` and within it `RunActivity:<name>` (INTERNAL), so
   * a trace names the same steps whichever shape ran them.
   */
  step<T>(name: string, run: () => Promise<T>): Promise<T>;
  /** Sets the facts on the active span; spans started under it in this process inherit them. */
  annotate(facts: SpanFacts): void;
  /** Exports what is buffered and stops, within `deadlineMs`. */
  shutdown(deadlineMs: number): Promise<void>;
};
