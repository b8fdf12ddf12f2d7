/**
 * SETTLE_BENCH_WORKER_OPTIONS=<JSON>: SDK worker settings the benchmarks try on settle's worker and
 * the no-op worker alike (the memory levers of docs/performance.md), e.g. '{"maxCachedWorkflows":50}'.
 */
export type BenchWorkerOptions = {
  maxCachedWorkflows?: number;
  reuseV8Context?: boolean;
  workflowThreadPoolSize?: number;
};

export function benchWorkerOptions(): BenchWorkerOptions {
  const text = process.env.SETTLE_BENCH_WORKER_OPTIONS;
  return text ? (JSON.parse(text) as BenchWorkerOptions) : {};
}
