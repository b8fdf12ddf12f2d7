/**
 * LS's retry storm, in a process of its own: a provider's load does not run on the bench's event loop,
 * where the live sender and the downstream receiver stamp the times the row measures. Reads a JSON
 * file (argv[2]: gatewayUrl, secret, events, ratePerSecond, durationMs), prints `storm started`, posts
 * the events again and again at the rate for the duration (open arrivals), then prints
 * `storm result <json>`: the replies by kind and the ack p99.
 */
import { readFileSync } from 'node:fs';
import { openLoop, percentile, postEvent } from '../../../testkit/load';

type StormPlan = {
  gatewayUrl: string;
  secret: string;
  events: unknown[];
  ratePerSecond: number;
  durationMs: number;
};

async function main() {
  const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as StormPlan;
  const replies = { duplicates: 0, serverErrors: 0, unavailable: 0, other: 0 };
  const acks: number[] = [];
  const started = performance.now();
  process.stdout.write('storm started\n');
  const sent = await openLoop(plan.ratePerSecond, plan.durationMs, async (i) => {
    const reply = await postEvent(plan.gatewayUrl, plan.secret, plan.events[i % plan.events.length]);
    acks.push(reply.ms);
    if (reply.status === 200 && reply.body.includes('"duplicate"')) replies.duplicates += 1;
    else if (reply.status === 503) replies.unavailable += 1;
    else if (reply.status >= 500) replies.serverErrors += 1;
    else replies.other += 1;
  });
  const seconds = (performance.now() - started) / 1000;
  const result = { sent, perSecond: sent / seconds, ackP99Ms: percentile(acks, 99), ...replies };
  process.stdout.write(`storm result ${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`storm sender failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
