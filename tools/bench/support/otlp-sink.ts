import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The collector of the TR row: an OTLP/HTTP endpoint on loopback that reads each export and answers
 * 200, counting requests and bytes (no decoding: its CPU is the bench's, not settle's).
 */
export async function startOtlpSink(): Promise<{
  url: string;
  received(): { requests: number; bytes: number };
  close(): Promise<void>;
}> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      requests += 1;
      response.writeHead(200, {
        'content-type': String(request.headers['content-type'] ?? 'application/json'),
      });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => ({ requests, bytes }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
