import type { BenchContext, RowRun } from './context';
import { benchFullPath, preparePathEvents } from './full-path';
import { startOtlpSink } from './support/otlp-sink';

/**
 * P@50 through `settle serve` started with `off`'s and then `on`'s environment, in the order off, on,
 * on, off: the tables grow and the machine's load drifts through a row, and this order gives both
 * variants the same mean position, so a drift does not read as the cost (rows `<row>@50 off #1` …
 * `<row>@50 off #2`; the goals take each variant's mean). `after` runs once each variant's serve stopped.
 */
async function offOnOnOff(
  ctx: BenchContext,
  row: string,
  what: string,
  env: { off: Record<string, string>; on: Record<string, string> },
  after?: (variant: string) => void,
): Promise<void> {
  const { stack, size } = ctx;
  for (const variant of ['off #1', 'on #1', 'on #2', 'off #2']) {
    const extra = variant.startsWith('on') ? env.on : env.off;
    const started = await stack.startServe(extra, ctx.profile(`serve-${row}-${variant.replace(/\W+/g, '')}`));
    ctx.processes.serve = started.child;
    const through = stack.throughGateway(started.gatewayUrl);
    try {
      await benchFullPath(through, await preparePathEvents(stack, 50), 10);
      await ctx.measure(`${row}@50 ${variant}`, `P through settle serve, ${what} ${variant}, 50 in flight`, {
        prepare: () => preparePathEvents(stack, size.pathEvents),
        run: (events) => benchFullPath(through, events, 50),
        events: size.pathEvents,
      });
    } finally {
      await started.child.stop().catch(() => {});
      ctx.processes.serve = undefined;
    }
    after?.(variant);
  }
}

/** PC: the payload codec's cost, encryption off (SETTLE_PAYLOAD_KEYS empty) and on (the stack's key). */
export const runCodecCost: RowRun = (ctx) =>
  offOnOnOff(ctx, 'PC', 'payload encryption', { off: { SETTLE_PAYLOAD_KEYS: '' }, on: {} });

/**
 * TR: tracing's cost, off and on (http/protobuf, the default, to an OTLP endpoint in this process;
 * sampler and batching at their defaults).
 */
export const runTracingCost: RowRun = async (ctx) => {
  const sink = await startOtlpSink();
  try {
    await offOnOnOff(
      ctx,
      'TR',
      'tracing',
      { off: {}, on: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } },
      (variant) => {
        if (variant === 'on #1' && sink.received().requests === 0)
          throw new Error('TR@50 on: the OTLP endpoint received no export; the row would measure nothing');
      },
    );
    const { requests, bytes } = sink.received();
    process.stderr.write(`bench: TR: the OTLP endpoint received ${requests} exports, ${bytes} bytes\n`);
  } finally {
    await sink.close();
  }
};
