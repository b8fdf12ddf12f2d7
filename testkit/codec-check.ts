/**
 * What an operator of a real deployment checks about payload encryption (SPEC, "Payment data in
 * Temporal"), shared by `npm run topology` and `npm run compose:check`: an event carrying a field a
 * sender added runs to its end; the history as the Temporal server stores it, read without the codec,
 * holds neither that field's value nor the amount; `settle codec-server` decodes every payload of it
 * for its token (as a header, and as the path segment a UI without single sign-on uses) and answers
 * 401, decoding nothing, without it; the UI server names the codec server as its codec endpoint and
 * the codec server answers the UI's origin's preflight.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { Queryable } from '../src/db/pool';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { ENCRYPTED_ENCODING } from '../src/temporal/payload-codec';
import type { Provider } from './provider';
import { makeEvent, shipmentFor } from './load';

export type CodecCheckTarget = {
  client: Client;
  pool: Queryable;
  provider: Provider;
  runId: string;
  /** An event index of `runId` no other event of the run uses. */
  index: number;
  /** The codec server as settle's processes reach it, e.g. http://127.0.0.1:8235. */
  codecUrl: string;
  token: string;
  namespace: string;
  /** The UI server, and the codec endpoint it must be configured with. */
  ui?: { url: string; origin: string; codecEndpoint: string };
  /** A bound on a hang: the run reaching its end. */
  timeoutMs?: number;
};

type JsonPayload = { metadata: Record<string, string>; data: string };

/**
 * Every payload of a history as fetched (no codec applied), as the codec protocol's JSON; search
 * attributes aside, which Temporal never passes through a codec (settle puts IDs only there).
 */
function payloadsOf(node: unknown, found: JsonPayload[] = [], path = ''): JsonPayload[] {
  if (Array.isArray(node)) node.forEach((item, i) => payloadsOf(item, found, `${path}[${i}]`));
  else if (node && typeof node === 'object' && !(node instanceof Uint8Array)) {
    const { data, metadata } = node as { data?: unknown; metadata?: unknown };
    if (data instanceof Uint8Array && metadata && typeof metadata === 'object') {
      found.push({
        metadata: Object.fromEntries(
          Object.entries(metadata as Record<string, Uint8Array>).map(([k, v]) => [
            k,
            Buffer.from(v).toString('base64'),
          ]),
        ),
        data: Buffer.from(data).toString('base64'),
      });
      paths.set(found.at(-1)!, path);
    } else
      for (const [name, value] of Object.entries(node))
        if (name !== 'searchAttributes') payloadsOf(value, found, `${path}.${name}`);
  }
  return found;
}
/** Where in the history each payload was found, for a failure's message. */
const paths = new WeakMap<JsonPayload, string>();

const encodingOf = (p: JsonPayload) => Buffer.from(p.metadata.encoding ?? '', 'base64').toString();

/** All a reader of the stored history can see: the payloads' bytes as text, and their metadata. */
const readable = (payloads: JsonPayload[]) =>
  payloads
    .flatMap((p) => [
      Buffer.from(p.data, 'base64').toString('latin1'),
      ...Object.values(p.metadata).map((v) => Buffer.from(v, 'base64').toString('latin1')),
    ])
    .join('\n');

async function decode(url: string, namespace: string, payloads: JsonPayload[], token?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-namespace': namespace,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ payloads }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let decoded = '';
  if (response.ok) decoded = readable((JSON.parse(text) as { payloads: JsonPayload[] }).payloads);
  return { status: response.status, text, decoded };
}

export async function storedHistoryIsEncrypted(target: CodecCheckTarget) {
  const failures: string[] = [];
  const facts: string[] = [];
  const marker = `jane.doe+${randomBytes(4).toString('hex')}@example.com`;
  const shipmentId = shipmentFor(target.runId, target.index);
  await addShipments(target.pool, [shipmentId]);
  const event = makeEvent(target.runId, target.index);
  const marked = { ...event, data: { ...event.data, customer_email: marker } };
  const amountShown = new RegExp(`"amount":\\s*${event.data.amount}\\b`);
  const reply = await target.provider.deliver(marked);
  if (reply.status !== 202)
    return { failures: [`the marked event answered ${reply.status}`], detail: '', run: undefined };

  // The run's end, seen without decoding anything (describe reads no payload).
  const handle = target.client.workflow.getHandle(paymentWorkflowId(event.id));
  const deadline = Date.now() + (target.timeoutMs ?? 300_000);
  let described: Awaited<ReturnType<typeof handle.describe>>;
  for (;;) {
    described = await handle.describe();
    if (described.status.name !== 'RUNNING' || Date.now() > deadline) break;
    await sleep(500);
  }
  const status = described.status.name;
  if (status !== 'COMPLETED') failures.push(`the marked event's run is ${status}, not COMPLETED`);

  const history = await handle.fetchHistory();
  const payloads = payloadsOf(history);
  const stored = readable(payloads);
  const encrypted = payloads.filter((p) => encodingOf(p) === ENCRYPTED_ENCODING).length;
  if (!payloads.length) failures.push('the stored history has no payloads');
  // Markers' metadata is written by the SDK's core, past the codec: a patch's ID (`patch-data`) and a
  // local activity's sequence number, type, attempt and times (`data`); the activity's result is the
  // `result` beside it, encrypted. The checks above read those too: none holds payment data.
  const coreMetadata = (p: JsonPayload) =>
    /markerRecordedEventAttributes\.details\.(data|patch-data)\.payloads/.test(paths.get(p) ?? '');
  // With tracing on, Temporal's interceptors carry the span context in a header the codec does not
  // encrypt (docs/operations.md, "Tracing"): allowed when it holds a W3C traceparent and nothing else.
  const traceContext = (p: JsonPayload) =>
    /header\.fields\._tracer-data$/.test(paths.get(p) ?? '') &&
    /^\{"traceparent":"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]"\}$/.test(Buffer.from(p.data, 'base64').toString());
  const clear = payloads.filter(
    (p) => !coreMetadata(p) && !traceContext(p) && encodingOf(p) !== ENCRYPTED_ENCODING,
  );
  facts.push(
    `${payloads.length} payloads stored: ${encrypted} binary/encrypted, ${payloads.filter(coreMetadata).length} markers' metadata` +
      (payloads.some(traceContext)
        ? `, ${payloads.filter(traceContext).length} trace context (traceparent only)`
        : ''),
  );
  if (clear.length)
    failures.push(
      `${clear.length} stored payloads are not encrypted: ${clear
        .map(
          (p) =>
            `${paths.get(p)} (${encodingOf(p)}: ${Buffer.from(p.data, 'base64').toString().slice(0, 60)})`,
        )
        .join('; ')}`,
    );
  if (stored.includes(marker)) failures.push("the stored history shows the sender's extra field");
  if (amountShown.test(stored)) failures.push('the stored history shows the amount');
  if (stored.includes(shipmentId)) failures.push("the stored history's payloads show the shipment ID");

  const withHeader = await decode(`${target.codecUrl}/decode`, target.namespace, payloads, target.token);
  if (withHeader.status !== 200)
    failures.push(`decode with the token answered ${withHeader.status}: ${withHeader.text.slice(0, 200)}`);
  else if (!withHeader.decoded.includes(marker) || !amountShown.test(withHeader.decoded))
    failures.push('decode with the token did not show the extra field and the amount');
  const inPath = await decode(`${target.codecUrl}/${target.token}/decode`, target.namespace, payloads);
  if (inPath.status !== 200 || !inPath.decoded.includes(marker))
    failures.push(`decode with the token as the path answered ${inPath.status}`);
  const without = await decode(`${target.codecUrl}/decode`, target.namespace, payloads);
  if (without.status !== 401) failures.push(`decode without the token answered ${without.status}, not 401`);
  if (without.text.includes(marker) || without.text.includes(Buffer.from(marker).toString('base64')))
    failures.push('decode without the token answered plaintext');
  const wrong = await decode(`${target.codecUrl}/decode`, target.namespace, payloads, `${target.token}x`);
  if (wrong.status !== 401) failures.push(`decode with another token answered ${wrong.status}, not 401`);
  facts.push(
    `codec server: token ${withHeader.status}, token in path ${inPath.status}, none ${without.status}, wrong ${wrong.status}`,
  );

  if (target.ui) {
    const settings = await fetch(`${target.ui.url}/api/v1/settings`, { signal: AbortSignal.timeout(30_000) });
    const body = (await settings.json().catch(() => ({}))) as { Codec?: { Endpoint?: string } };
    if (body.Codec?.Endpoint !== target.ui.codecEndpoint)
      failures.push(
        `the UI's codec endpoint is ${JSON.stringify(body.Codec?.Endpoint)}, not the codec server`,
      );
    const preflight = await fetch(`${target.codecUrl}/${target.token}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: target.ui.origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
      signal: AbortSignal.timeout(30_000),
    });
    const allowed = preflight.headers.get('access-control-allow-origin');
    if (allowed !== target.ui.origin)
      failures.push(
        `the codec server's preflight for ${target.ui.origin} allowed ${JSON.stringify(allowed)}`,
      );
    facts.push(`UI codec endpoint set, preflight for ${target.ui.origin} ${preflight.status}`);
  }
  const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  return {
    failures,
    detail: facts.join('; '),
    run: {
      workflowId: handle.workflowId,
      runId: described.runId,
      marker,
      /** The start of the stored input's ciphertext, as a UI without the codec shows it. */
      ciphertext: input ? Buffer.from(input).toString('base64').slice(0, 24) : '',
    },
  };
}

/**
 * The run's page in two UI servers on the same cluster, opened in headless Chromium: the one pointed
 * at the codec server shows the decoded input (the sender's extra field); the one without a codec
 * endpoint shows only the stored ciphertext. Both screenshots are kept in `screenshotDir`.
 */
export async function uiShowsDecodedInput(options: {
  chromium: string;
  namespace: string;
  run: { workflowId: string; runId: string; marker: string; ciphertext: string };
  withCodec: string;
  withoutCodec: string;
  screenshotDir: string;
}) {
  const { viewPage } = await import('./ui-browser.js');
  const failures: string[] = [];
  const { workflowId, runId, marker, ciphertext } = options.run;
  const path = `/namespaces/${options.namespace}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`;
  mkdirSync(options.screenshotDir, { recursive: true });
  const decodedShot = join(options.screenshotDir, 'ui-decoded-through-codec.png');
  const encryptedShot = join(options.screenshotDir, 'ui-without-codec.png');
  const decoded = await viewPage({
    chromium: options.chromium,
    url: `${options.withCodec}${path}`,
    expected: marker,
    screenshot: decodedShot,
  });
  if (!decoded.appeared)
    failures.push(
      `the UI with the codec endpoint did not show the decoded input: ${decoded.text.slice(0, 300)}`,
    );
  const plain = await viewPage({
    chromium: options.chromium,
    url: `${options.withoutCodec}${path}`,
    expected: ciphertext,
    screenshot: encryptedShot,
  });
  if (!plain.appeared)
    failures.push(
      `the UI without the codec endpoint did not show the stored ciphertext: ${plain.text.slice(0, 300)}`,
    );
  if (plain.text.includes(marker)) failures.push('the UI without the codec endpoint showed the extra field');
  return {
    failures,
    detail: `decoded input shown through the codec (${decodedShot}); ciphertext only without it (${encryptedShot})`,
  };
}
