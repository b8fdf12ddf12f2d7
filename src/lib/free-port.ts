import { createServer, type Server } from 'node:net';

function listenOnAnyPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (typeof address === 'object' && address) resolve({ server, port: address.port });
      else reject(new Error('no port'));
    });
  });
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const { server, port } = await listenOnAnyPort();
  await close(server);
  return port;
}

/**
 * `count` TCP ports on 127.0.0.1 that were free a moment ago, all different: each is held until every
 * one is picked (picked one after the other, the system may hand out a port just released again).
 * Free a moment ago is not free later: a caller that binds through another process retries on a
 * collision.
 */
export async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const { server, port } = await listenOnAnyPort();
      held.push(server);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map(close));
  }
}
