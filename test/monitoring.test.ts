import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { PROJECT_ROOT } from '../src/lib/paths';
import { startMetricsServer } from '../src/metrics/metrics-server';
import { parsePrometheusText, type Sample } from '../src/metrics/prometheus-text';
import { paymentEvent, postWebhook, uniqueId, waitFor } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';

const MONITORING = join(PROJECT_ROOT, 'deploy', 'monitoring');
const stack = useTestStack();
let worker: Awaited<ReturnType<typeof startMetricsServer>>;

before(async () => {
  worker = await startMetricsServer({ port: 0, host: '127.0.0.1' });
});

after(async () => {
  await worker.close();
});

/** Every settle_* and temporal_* name an expression of the dashboard or the alert rules uses. */
function usedNames(): Set<string> {
  const dashboard = JSON.parse(readFileSync(join(MONITORING, 'settle-dashboard.json'), 'utf8')) as {
    panels: { targets: { expr: string }[] }[];
  };
  const exprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));
  const rules = readFileSync(join(MONITORING, 'settle-alerts.yml'), 'utf8');
  exprs.push(...[...rules.matchAll(/^\s+expr: (.+)$/gm)].map((match) => match[1]!));
  return new Set(exprs.flatMap((expr) => expr.match(/\b(?:settle|temporal)_[a-z0-9_]+/g) ?? []));
}

/** The samples of a scrape, and every name it declares (a labelled counter not yet counted has no sample). */
async function scrape(url: string): Promise<{ samples: Sample[]; declared: string[] }> {
  // The gateway's /metrics on PORT needs the API token; the worker's asks none.
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${stack.apiToken}` } });
  assert.equal(response.status, 200);
  const text = await response.text();
  const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
    type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!],
  );
  return { samples: parsePrometheusText(text), declared };
}

test('every metric the dashboard and the alert rules use is in a scrape of a gateway and a worker', async () => {
  const names = usedNames();
  assert.ok(names.size >= 15, `only ${names.size} names found`);
  // Traffic on every route, so each labelled series exists: one applied event, two refusals.
  const shipmentId = uniqueId('SHP');
  await addShipments(stack.pool, [shipmentId]);
  assert.equal((await postWebhook(stack, paymentEvent({ shipmentId, type: 'payment.settled' }))).status, 202);
  for (const route of ['/webhooks/stripe', '/webhooks/adyen']) {
    const response = await fetch(`${stack.gatewayUrl}${route}`, { method: 'POST', body: '{}' });
    assert.ok(response.status >= 400 && response.status < 500, `${route}: ${response.status}`);
  }
  let missing: string[] = [];
  const seen = await waitFor(
    'every used metric name in a scrape (the worker must have polled and committed)',
    async () => {
      const scrapes = [await scrape(stack.gatewayUrl), await scrape(worker.url)];
      const samples = scrapes.flatMap((one) => one.samples);
      const present = new Set([
        ...samples.map((sample) => sample.name),
        ...scrapes.flatMap((one) => one.declared),
      ]);
      missing = [...names].filter((name) => !present.has(name));
      return missing.length === 0 ? samples : undefined;
    },
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}; missing: ${missing.join(', ')}`);
  });
  // The webhook metrics are labelled by route, for the providers' routes too.
  for (const route of ['/webhooks/payments', '/webhooks/stripe', '/webhooks/adyen']) {
    assert.ok(
      seen.some((s) => s.name === 'settle_webhooks_total' && s.labels.route === route && s.value > 0),
      `settle_webhooks_total{route="${route}"}`,
    );
    assert.ok(
      seen.some((s) => s.name === 'settle_webhook_ack_seconds_count' && s.labels.route === route),
      `settle_webhook_ack_seconds_count{route="${route}"}`,
    );
  }
  const refused = seen.find(
    (s) => s.name === 'settle_webhooks_total' && s.labels.route === '/webhooks/stripe',
  );
  assert.equal(refused?.labels.outcome, 'rejected');
  assert.notEqual(refused?.labels.error, '');
});

test("every alert's runbook_url names a section of docs/operations.md", () => {
  const rules = readFileSync(join(MONITORING, 'settle-alerts.yml'), 'utf8');
  const anchors = new Set(
    [...readFileSync(join(PROJECT_ROOT, 'docs', 'operations.md'), 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-'),
    ),
  );
  const links = [...rules.matchAll(/runbook_url: docs\/operations\.md#(\S+)/g)].map((m) => m[1]!);
  assert.equal(links.length, [...rules.matchAll(/- alert:/g)].length);
  for (const link of links) assert.ok(anchors.has(link), `no section #${link}`);
});
