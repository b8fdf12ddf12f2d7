/**
 * The carrier and ERP of `npm run compose:check`, as a container on the compose network (never on
 * the host): testkit/receiver.ts's RecordingReceiver on port 8080, and on port 8081 what it
 * recorded per idempotency key (GET /keys), which the check reads through a published port.
 * tools/compose/compose-check.ts bundles this file into one plain JavaScript file that settle's image's
 * Node runs (tools/compose/compose-check.override.yml).
 */
import { createServer } from 'node:http';
import { RecordingReceiver } from '../../testkit/receiver';

/** One key's record as JSON: the Set of body hashes as an array. */
export type KeyRecordJson = {
  key: string;
  requests: number;
  applied: number;
  repeatsRefused: number;
  bodies: string[];
  path: string;
  /** The `traceparent` of each request for the key, in order (none: an empty string). */
  traceparents: string[];
};

async function main() {
  const receiver = new RecordingReceiver();
  await receiver.start({ host: '0.0.0.0', port: 8080 });
  const records = createServer((request, response) => {
    const traceparents = new Map<string, string[]>();
    for (const received of receiver.requests)
      traceparents.set(received.key, [
        ...(traceparents.get(received.key) ?? []),
        String(received.headers.traceparent ?? ''),
      ]);
    const keys: KeyRecordJson[] = [...receiver.keys].map(([key, record]) => ({
      key,
      requests: record.requests,
      applied: record.applied,
      repeatsRefused: record.repeatsRefused,
      bodies: [...record.bodies],
      path: record.path,
      traceparents: traceparents.get(key) ?? [],
    }));
    response.writeHead(request.url === '/keys' ? 200 : 404, { 'content-type': 'application/json' });
    response.end(request.url === '/keys' ? JSON.stringify(keys) : '{}');
  });
  await new Promise<void>((resolve) => records.listen(8081, '0.0.0.0', resolve));
  process.stdout.write('receiver: carrier and ERP on :8080, records on :8081\n');
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.once(signal, () => {
      records.close();
      void receiver.close().finally(() => process.exit(0));
    });
}

main().catch((error: unknown) => {
  process.stderr.write(`receiver: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
