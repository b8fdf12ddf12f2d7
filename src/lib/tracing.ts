/**
 * OpenTelemetry tracing, off unless an OTLP endpoint is configured the standard way
 * (docs/operations.md, "Tracing"). This module loads no OpenTelemetry code: `startTracing` imports
 * ./tracing-sdk.ts only when tracing is on, so a process without it (and `settle --help`) pays nothing
 * and no exporter exists. The rest of settle reaches tracing through `activeTracing()` (undefined when
 * off) and `annotateSpan`, a no-op when off.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { ConfigError } from '../config/error';

/** The OTLP encodings settle exports with; gRPC is not among them (one HTTP exporter per encoding). */
const TRACING_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
type TracingProtocol = (typeof TRACING_PROTOCOLS)[number];

export type TracingSettings = { protocol: TracingProtocol };

/**
 * The OpenTelemetry variables settle documents (README, "Configuration"): the ones read here, and
 * those the SDK and the exporter read themselves once tracing is on.
 */
export const TRACING_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_SDK_DISABLED',
] as const;

/**
 * Tracing is on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set (and
 * neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise): OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES or OTEL_TRACES_SAMPLER alone, as platforms set them, turn nothing on. The
 * exporter reads the endpoint, headers and timeout itself; the sampler and resource are read by the SDK.
 */
export function tracingSettings(env: NodeJS.ProcessEnv = process.env): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
    ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
    : env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
      ? 'OTEL_EXPORTER_OTLP_ENDPOINT'
      : undefined;
  if (!variable) return undefined;
  const issues: { variable: string; message: string }[] = [];
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(env[variable]!.trim())?.[1]?.toLowerCase();
  if ((scheme !== 'http' && scheme !== 'https') || !URL.canParse(env[variable]!.trim())) {
    issues.push({ variable, message: 'must be an http(s) URL, e.g. http://collector:4318' });
  }
  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim()
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[protocolVariable]?.trim() || 'http/protobuf';
  if (!(TRACING_PROTOCOLS as readonly string[]).includes(protocol)) {
    issues.push({
      variable: protocolVariable,
      message: `must be ${TRACING_PROTOCOLS.join(' or ')} (settle exports OTLP over HTTP), not ${protocol}`,
    });
  }
  if (issues.length) throw new ConfigError(issues);
  return { protocol: protocol as TracingProtocol };
}

/** What a span may say about the business it serves: the event as its short hash, never raw. */
export type SpanFacts = { eventId?: string; shipmentId?: string };

/** What the rest of settle calls when tracing is on (implemented by ./tracing-sdk.ts). */
export type Tracing = {
  /** For every Temporal client: the StartWorkflow span, its context carried in the start's headers. */
  readonly workflowClientInterceptors: WorkflowClientInterceptor[];
  /** Adds the activity spans (RunActivity, outermost) and the workflow spans' sink to a worker's options. */
  workerOptions<T extends Pick<WorkerOptions, 'interceptors' | 'sinks'>>(options: T): T;
  /** A span per gateway request (probes and /metrics aside), continuing an incoming `traceparent`. */
  instrumentGateway(app: FastifyInstance): void;
  /** Runs one downstream POST in a client span; `call` gets the headers with `traceparent` added. */
  downstreamCall<T extends { status: number }>(
    url: string,
    headers: Record<string, string>,
    call: (headers: Record<string, string>) => Promise<T>,
  ): Promise<T>;
  /** Sets the facts on the active span; spans started under it in this process inherit them. */
  annotate(facts: SpanFacts): void;
  /** Exports what is buffered and stops, within `deadlineMs`. */
  shutdown(deadlineMs: number): Promise<void>;
};

let active: Tracing | undefined;

/** The process's tracing, or undefined when it is off. */
export function activeTracing(): Tracing | undefined {
  return active;
}

/**
 * Turns tracing on for this process when the environment configures it (once; later calls return the
 * same). `role` names the process in the default service name (`settle-<role>`), which
 * OTEL_SERVICE_NAME overrides. Throws ConfigError for a bad endpoint or protocol.
 */
export async function startTracing(role: string, env: NodeJS.ProcessEnv = process.env) {
  if (active) return active;
  const settings = tracingSettings(env);
  if (!settings) return undefined;
  const { createTracing } = await import('./tracing-sdk.js');
  active = createTracing(settings, role);
  return active;
}

/** Flushes and stops tracing, if on; bounded, so a collector that is down never holds a stop. */
export async function stopTracing(deadlineMs = 2_000): Promise<void> {
  const tracing = active;
  active = undefined;
  await tracing?.shutdown(deadlineMs);
}

/** Puts the event's short hash and the shipment ID on the active span (nothing when tracing is off). */
export function annotateSpan(facts: SpanFacts): void {
  active?.annotate(facts);
}
