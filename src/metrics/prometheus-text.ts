/** One sample of Prometheus text: `name{labels} value`. */
export type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the exposition format (enough of it for settle's own metrics); comments are skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** Sum of the samples of one metric whose labels include `where`. */
export function sumOf(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** A quantile of a histogram (all label sets merged), interpolated within buckets like histogram_quantile. */
export function histogramQuantile(samples: Sample[], name: string, q: number): number | null {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (!total) return null;
  const rank = q * total;
  let previousBound = 0;
  let previousCount = 0;
  for (const [bound, count] of sorted) {
    if (count >= rank) {
      if (bound === Infinity) return previousBound;
      const inBucket = count - previousCount;
      return inBucket ? previousBound + ((bound - previousBound) * (rank - previousCount)) / inBucket : bound;
    }
    previousBound = bound;
    previousCount = count;
  }
  return previousBound;
}
