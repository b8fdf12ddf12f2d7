/**
 * OpenTelemetry tracing, off unless an OTLP endpoint is configured the standard way
 * (docs/operations.md, "Tracing"). This module loads no OpenTelemetry code: `startTracing` imports
 * ./sdk.ts only when tracing is on, so a process without it (and `settle --help`) pays nothing
 * and no exporter exists. The rest of settle reaches tracing through `activeTracing()` (undefined when
 * off) and `annotateSpan`, a no-op when off.
 */
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks } from '@temporalio/worker';
import { ConfigError } from '../config/error';
import {
  TRACING_PROTOCOLS,
  type SpanFacts,
  type Tracing,
  type TracingProtocol,
  type TracingSettings,
} from './contract';

export type { SpanFacts, Tracing, TracingSettings } from './contract';

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
  const { createTracing } = await import('./sdk.js');
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

/** Runs one step of a multi-step activity in its own spans when tracing is on (Tracing.step). */
export function traceStep<T>(name: string, run: () => Promise<T>): Promise<T> {
  const tracing = active;
  return tracing ? tracing.step(name, run) : run();
}

/**
 * Runs one downstream call in a client span whose context its request carries (`traceparent`), when
 * tracing is on; otherwise just the call. The wrapper settle's HTTP client is made with (lib/http.ts).
 */
export function traceDownstreamCall<T extends { status: number }>(
  url: string,
  headers: Record<string, string>,
  call: (headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  const tracing = active;
  return tracing ? tracing.downstreamCall(url, headers, call) : call(headers);
}

/**
 * The span sink a traced worker registers (sdk.ts), doing nothing: for replaying histories with the
 * traced bundle. The SDK does not call sinks while replaying, but it checks each call's sink is
 * registered, and logs an error per span for one that is not.
 */
export const REPLAY_SPAN_SINKS: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => {} } },
};
