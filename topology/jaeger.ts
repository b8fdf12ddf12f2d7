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
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Child } from '../proof/processes';
import { PROJECT_ROOT } from '../src/lib/paths';
import { buildInto } from './binaries';
import { listening, PortPicker, startProgram } from './processes';

export const JAEGER_VERSION = '1.76.0';
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
  references: { refType: string; spanID: string }[];
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
    async trace(traceId) {
      const response = await fetch(`${uiUrl}/api/traces/${traceId}`).catch(() => undefined);
      if (!response?.ok) return [];
      const body = (await response.json()) as {
        data?: {
          spans: Omit<JaegerSpan, 'serviceName'>[] & { processID?: string }[];
          processes: Record<string, { serviceName: string }>;
        }[];
      };
      return (body.data ?? []).flatMap((trace) =>
        trace.spans.map((span) => ({
          ...(span as Omit<JaegerSpan, 'serviceName'>),
          serviceName: trace.processes[(span as { processID?: string }).processID ?? '']?.serviceName ?? '',
        })),
      );
    },
  };
}
