import { MetricsBuffer, type BufferedMetricUpdate } from '@temporalio/worker';

/**
 * The Temporal SDK's own metrics (worker polls, task latencies, slots, sticky cache…), buffered by
 * the Core runtime and rendered here as Prometheus text, so they are served from settle's /metrics
 * next to settle's figures instead of from a second port.
 */
export const temporalMetricsBuffer = new MetricsBuffer({
  maxBufferSize: 100_000,
  useSecondsForDurations: true,
});

/** Histogram boundaries in seconds (durations) or plain units (counts); wide enough for both. */
const BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300];

type Series =
  | { kind: 'counter' | 'gauge'; value: number }
  | { kind: 'histogram'; counts: number[]; sum: number; count: number };
type Family = { type: 'counter' | 'gauge' | 'histogram'; help: string; series: Map<string, Series> };

const families = new Map<string, Family>();
let drainTimer: NodeJS.Timeout | undefined;

/** Drains the buffer every second once a runtime uses it, so it never fills up between scrapes. */
export function startDrainingTemporalMetrics(): void {
  drainTimer ??= setInterval(drain, 1_000).unref();
}

function drain(): void {
  for (const update of temporalMetricsBuffer.retrieveUpdates()) apply(update);
}

function apply({ metric, value, attributes }: BufferedMetricUpdate): void {
  const name = metricName(metric.name);
  const type = metric.kind === 'histogram' ? 'histogram' : metric.kind === 'counter' ? 'counter' : 'gauge';
  let family = families.get(name);
  if (!family) {
    family = { type, help: metric.description || metric.name, series: new Map() };
    families.set(name, family);
  }
  const labels = labelText(attributes);
  const series = family.series.get(labels);
  if (type === 'histogram') {
    const h = (series ?? { kind: 'histogram', counts: BUCKETS.map(() => 0), sum: 0, count: 0 }) as Extract<
      Series,
      { kind: 'histogram' }
    >;
    BUCKETS.forEach((bound, index) => {
      if (value <= bound) h.counts[index]! += 1;
    });
    h.sum += value;
    h.count += 1;
    family.series.set(labels, h);
  } else {
    const previous = series && series.kind !== 'histogram' ? series.value : 0;
    // Counters and up-down counters report deltas; gauges report the value itself.
    const next = metric.kind === 'gauge' ? value : previous + value;
    family.series.set(labels, { kind: type, value: next });
  }
}

function metricName(raw: string): string {
  const clean = raw.replace(/[^a-zA-Z0-9_:]/g, '_');
  return clean.startsWith('temporal_') ? clean : `temporal_${clean}`;
}

function labelText(attributes: Record<string, unknown>): string {
  return Object.keys(attributes)
    .sort()
    .map((key) => `${key.replace(/[^a-zA-Z0-9_]/g, '_')}="${escape(String(attributes[key]))}"`)
    .join(',');
}

function escape(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function withLabel(labels: string, extra: string): string {
  return `{${[labels, extra].filter(Boolean).join(',')}}`;
}

/** Prometheus text for everything the SDK reported so far; empty when no worker runs here. */
export function renderTemporalMetrics(): string {
  drain();
  const lines: string[] = [];
  for (const [name, family] of families) {
    lines.push(`# HELP ${name} ${family.help.replace(/\n/g, ' ')}`, `# TYPE ${name} ${family.type}`);
    for (const [labels, series] of family.series) {
      if (series.kind === 'histogram') {
        BUCKETS.forEach((bound, index) =>
          lines.push(`${name}_bucket${withLabel(labels, `le="${bound}"`)} ${series.counts[index]}`),
        );
        lines.push(`${name}_bucket${withLabel(labels, 'le="+Inf"')} ${series.count}`);
        lines.push(`${name}_sum${labels ? `{${labels}}` : ''} ${series.sum}`);
        lines.push(`${name}_count${labels ? `{${labels}}` : ''} ${series.count}`);
      } else {
        lines.push(`${name}${labels ? `{${labels}}` : ''} ${series.value}`);
      }
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
